//! The routes: endpoints (create with the secret shown once, list, read,
//! change, delete, rotate the secret), an endpoint's delivery log, and
//! replay of one delivery or of every failed one since a time.

use plateau_sdk::serde_json::{Map, Value, json};
use plateau_sdk::{
    ApiError, Bucket, NewEvent, Params, Problem, Request, Response, clock, paginate_kv_with,
};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::input::EndpointInput;
use crate::record::{self, Delivery, Endpoint};
use crate::signing::{self, DEFAULT_GRACE_SECONDS, MAX_GRACE_SECONDS};
use crate::views::{DeliveryView, EndpointView};

/// Endpoints per organisation, per plan.
pub fn plan_limit(plan: Option<&str>) -> u64 {
    match plan {
        Some("starter") => 10,
        Some("pro") => 50,
        Some("scale") => 200,
        _ => 2,
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!(
        "webhook endpoint {id} does not exist: list them with GET /webhooks"
    ))
}

pub(crate) fn load(bucket: &Bucket, id: &str) -> Result<Endpoint, ApiError> {
    if !record::is_endpoint_id(id) {
        return Err(not_found(id));
    }
    bucket
        .get::<Endpoint>(&record::endpoint_key(id))?
        .ok_or_else(|| not_found(id))
}

/// An endpoint as the API shows it: never a secret.
pub fn view(e: &Endpoint) -> EndpointView {
    EndpointView::from(e)
}

fn summary(e: &Endpoint) -> Value {
    json!({ "url": e.url, "eventTypes": e.event_types, "status": e.status })
}

fn plan_limit_reached(limit: u64, plan: &str) -> Response {
    let problem = Problem::new(
        409,
        "plan_limit_reached",
        format!("the {plan} plan allows {limit} webhook endpoints: delete one or upgrade the plan"),
    );
    Response::from_problem(&problem)
}

/// `POST /webhooks`: 201 with the endpoint and its `secret`, shown once.
pub fn create(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let mut input = req.json::<EndpointInput>()?;
    if input.enabled.is_some() {
        return Err(ApiError::validation(
            "enabled",
            "is set with PATCH; a new endpoint is enabled",
        ));
    }
    input.enabled = None;
    let checked = input.check()?;
    let bucket = Bucket::caller()?;
    let plan = req.caller.plan.clone().unwrap_or_else(|| "free".to_owned());
    let limit = plan_limit(Some(&plan));
    if bucket.count(record::ENDPOINTS)? >= limit {
        return Ok(plan_limit_reached(limit, &plan));
    }
    let now = clock::now_millis();
    let (sealed, secret) = signing::issue(&org, now)?;
    let endpoint = Endpoint {
        id: record::new_endpoint_id(now),
        url: checked.url,
        description: checked.description,
        event_types: checked.event_types,
        alert_emails: checked.alert_emails,
        status: "enabled".to_owned(),
        disabled_reason: None,
        disabled_at: None,
        secrets: vec![sealed],
        created_at: now,
        updated_at: now,
    };
    if !bucket.insert_new(&record::endpoint_key(&endpoint.id), &endpoint)? {
        return Err(ApiError::conflict(
            "an endpoint id collided: retry the request",
        ));
    }
    NewEvent::new("webhooks.endpoint.created", "create")
        .resource("webhook_endpoint", &endpoint.id)
        .data(&summary(&endpoint))
        .audit()
        .emit()?;
    let mut body = view(&endpoint);
    body.secret = Some(secret);
    Ok(Response::created(&body).with_header("location", format!("/webhooks/{}", endpoint.id)))
}

/// `GET /webhooks`
pub fn list(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let page = paginate_kv_with(
        &Bucket::caller()?,
        record::ENDPOINTS,
        &req.page_query()?,
        |entry| Ok(view(&entry.json::<Endpoint>()?)),
    )?;
    Ok(page.into_response())
}

/// `GET /webhooks/{id}`
pub fn get(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    Ok(Response::ok(&view(&load(
        &Bucket::caller()?,
        &params["id"],
    )?)))
}

/// `PATCH /webhooks/{id}`: the fields sent over the stored ones;
/// `enabled` turns the endpoint on or off.
pub fn update(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let id = &params["id"];
    let bucket = Bucket::caller()?;
    let mut endpoint = load(&bucket, id)?;
    let patch: Map<String, Value> = req.json()?;
    let mut merged = Map::new();
    merged.insert("url".into(), json!(endpoint.url));
    merged.insert("description".into(), json!(endpoint.description));
    merged.insert("eventTypes".into(), json!(endpoint.event_types));
    merged.insert("alertEmails".into(), json!(endpoint.alert_emails));
    merged.insert("enabled".into(), json!(endpoint.enabled()));
    merged.extend(patch);
    let input: EndpointInput =
        plateau_sdk::contract::json::parse_json_value(Value::Object(merged))?;
    let checked = input.check()?;
    let now = clock::now_millis();
    endpoint.url = checked.url;
    endpoint.description = checked.description;
    endpoint.event_types = checked.event_types;
    endpoint.alert_emails = checked.alert_emails;
    if checked.enabled != endpoint.enabled() {
        endpoint.status = if checked.enabled {
            "enabled"
        } else {
            "disabled"
        }
        .to_owned();
        endpoint.disabled_reason =
            (!checked.enabled).then(|| "disabled through the API".to_owned());
        endpoint.disabled_at = (!checked.enabled).then_some(now);
    }
    endpoint.updated_at = now;
    bucket.set(&record::endpoint_key(id), &endpoint)?;
    NewEvent::new("webhooks.endpoint.updated", "update")
        .resource("webhook_endpoint", id)
        .data(&summary(&endpoint))
        .audit()
        .emit()?;
    Ok(Response::ok(&view(&endpoint)))
}

/// `DELETE /webhooks/{id}`: 204; its deliveries and their jobs go with it.
pub fn delete(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let id = &params["id"];
    let bucket = Bucket::caller()?;
    load(&bucket, id)?;
    for entry in bucket.list_all(&record::deliveries_prefix(id))? {
        if let Ok(delivery) = entry.json::<Delivery>()
            && delivery.status == "pending"
        {
            plateau_sdk::jobs::cancel(
                plateau_sdk::Namespace::Organization(org.clone()),
                &record::job_key(id, &delivery.id),
            )?;
        }
        bucket.delete(&entry.key)?;
    }
    bucket.delete(&record::endpoint_key(id))?;
    NewEvent::new("webhooks.endpoint.deleted", "delete")
        .resource("webhook_endpoint", id)
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

/// `POST /webhooks/{id}/rotate-secret`'s optional body.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RotateInput {
    /// How long the previous secret keeps signing: 0 to 604800 (a week);
    /// default a day.
    #[schema(maximum = 604800)]
    pub grace_seconds: Option<u64>,
}

/// `POST /webhooks/{id}/rotate-secret`: a new secret, shown once; the
/// previous one keeps signing for `graceSeconds` (default a day).
pub fn rotate(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let id = &params["id"];
    let input: RotateInput = if req.body.is_empty() {
        RotateInput::default()
    } else {
        req.json()?
    };
    let grace = input.grace_seconds.unwrap_or(DEFAULT_GRACE_SECONDS);
    if grace > MAX_GRACE_SECONDS {
        return Err(ApiError::validation(
            "graceSeconds",
            "must be 0 to 604800 (a week)",
        ));
    }
    let bucket = Bucket::caller()?;
    let mut endpoint = load(&bucket, id)?;
    let now = clock::now_millis();
    let (sealed, secret) = signing::issue(&org, now)?;
    signing::rotate(&mut endpoint, sealed, now, grace * 1000);
    endpoint.updated_at = now;
    bucket.set(&record::endpoint_key(id), &endpoint)?;
    NewEvent::new("webhooks.endpoint.secret_rotated", "rotate")
        .resource("webhook_endpoint", id)
        .data(&json!({ "graceSeconds": grace }))
        .audit()
        .emit()?;
    let mut body = view(&endpoint);
    body.secret = Some(secret);
    Ok(Response::ok(&body))
}

/// A delivery as the API shows it.
pub fn delivery_view(d: &Delivery) -> DeliveryView {
    DeliveryView::from(d)
}
