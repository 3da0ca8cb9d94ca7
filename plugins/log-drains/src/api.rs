//! The routes: drains (create, with the signing secret of an HTTPS drain
//! shown once; list; read with its delivery status; change; delete).

use plateau_sdk::jobs::{self, NewJob};
use plateau_sdk::platform_logs::{self, Owner, Source};
use plateau_sdk::serde_json::{Map, Value, json};
use plateau_sdk::{
    ApiError, Bucket, Namespace, NewEvent, Params, Problem, Request, Response, clock,
    paginate_kv_with,
};

use crate::input::{Checked, Destination, DrainInput};
use crate::record::{self, DeliveryState, Drain};
use crate::secret;
use crate::views::DrainView;

/// How often a drain's job runs.
pub const RUN_EVERY_MS: u64 = 1000;

/// Drains per organisation, per plan.
pub fn plan_limit(plan: Option<&str>) -> u64 {
    match plan {
        Some("starter") => 3,
        Some("pro") => 10,
        Some("scale") => 50,
        _ => 1,
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!(
        "log drain {id} does not exist: list them with GET /log-drains"
    ))
}

fn load(bucket: &Bucket, id: &str) -> Result<Drain, ApiError> {
    if !record::is_drain_id(id) {
        return Err(not_found(id));
    }
    bucket
        .get::<Drain>(&record::drain_key(id))?
        .ok_or_else(|| not_found(id))
}

/// A drain as answered, with its delivery state.
fn view(bucket: &Bucket, drain: &Drain) -> Result<DrainView, ApiError> {
    let state: DeliveryState = bucket
        .get(&record::state_key(&drain.id))?
        .unwrap_or_default();
    Ok(DrainView::new(drain, &state))
}

fn summary(d: &Drain) -> Value {
    json!({ "name": d.name, "url": d.url, "sources": d.sources, "enabled": d.enabled })
}

fn schedule(org: &str, id: &str, now: u64) -> Result<(), ApiError> {
    jobs::schedule(
        NewJob::at(record::job_key(id), now)
            .namespace(Namespace::Organization(org.to_owned()))
            .every_ms(RUN_EVERY_MS)
            .payload(id),
    )?;
    Ok(())
}

/// The cursor of now: a new drain forwards what is written from now on.
fn start_cursor() -> Result<String, ApiError> {
    platform_logs::read(&Owner::Caller, &[Source::App, Source::Event], "", 1)
        .map(|page| page.cursor)
        .map_err(|e| ApiError::unavailable(format!("the platform's logs cannot be read: {e}")))
}

fn apply(drain: &mut Drain, checked: Checked) {
    drain.name = checked.name;
    drain.url = checked.url;
    drain.sources = checked.sources;
    drain.apps = checked.apps;
    drain.min_level = checked.min_level.as_str().to_owned();
    drain.enabled = checked.enabled;
}

/// `POST /log-drains`: 201 with the drain, and `secret` for an HTTPS one.
pub fn create(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let input = req.json::<DrainInput>()?;
    if input.enabled.is_some() {
        return Err(ApiError::validation(
            "enabled",
            "is set with PATCH; a new drain is enabled",
        ));
    }
    let checked = input.check()?;
    let bucket = Bucket::caller()?;
    let plan = req.caller.plan.clone().unwrap_or_else(|| "free".to_owned());
    let limit = plan_limit(Some(&plan));
    if bucket.count(record::DRAINS)? >= limit {
        let problem = Problem::new(
            409,
            "plan_limit_reached",
            format!("the {plan} plan allows {limit} log drains: delete one or upgrade the plan"),
        );
        return Ok(Response::from_problem(&problem));
    }
    let now = clock::now_millis();
    let (sealed, shown) = match checked.destination {
        Destination::Http { .. } => {
            let (sealed, shown) = secret::issue(&org, now)?;
            (Some(sealed), Some(shown))
        }
        Destination::Syslog { .. } => (None, None),
    };
    let mut drain = Drain {
        id: record::new_drain_id(now),
        name: String::new(),
        url: String::new(),
        sources: Vec::new(),
        apps: Vec::new(),
        min_level: String::new(),
        enabled: true,
        secret: sealed,
        created_at: now,
        updated_at: now,
    };
    apply(&mut drain, checked);
    if !bucket.insert_new(&record::drain_key(&drain.id), &drain)? {
        return Err(ApiError::conflict("a drain id collided: retry the request"));
    }
    let state = DeliveryState {
        cursor: start_cursor()?,
        ..DeliveryState::default()
    };
    bucket.set(&record::state_key(&drain.id), &state)?;
    schedule(&org, &drain.id, now)?;
    NewEvent::new("log-drains.drain.created", "create")
        .resource("log_drain", &drain.id)
        .data(&summary(&drain))
        .audit()
        .emit()?;
    let mut body = view(&bucket, &drain)?;
    body.secret = shown;
    Ok(Response::created(&body).with_header("location", format!("/log-drains/{}", drain.id)))
}

/// `GET /log-drains`
pub fn list(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let page = paginate_kv_with(&bucket, record::DRAINS, &req.page_query()?, |entry| {
        view(&bucket, &entry.json::<Drain>()?)
    })?;
    Ok(page.into_response())
}

/// `GET /log-drains/{id}`
pub fn get(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let drain = load(&bucket, &params["id"])?;
    Ok(Response::ok(&view(&bucket, &drain)?))
}

/// `PATCH /log-drains/{id}`: the fields sent over the stored ones. A drain
/// turned into an HTTPS one gets a secret, answered once as `secret`.
pub fn update(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let id = &params["id"];
    let bucket = Bucket::caller()?;
    let mut drain = load(&bucket, id)?;
    let patch: Map<String, Value> = req.json()?;
    let mut merged = Map::new();
    merged.insert("name".into(), json!(drain.name));
    merged.insert("url".into(), json!(drain.url));
    merged.insert("sources".into(), json!(drain.sources));
    merged.insert("apps".into(), json!(drain.apps));
    merged.insert("minLevel".into(), json!(drain.min_level));
    merged.insert("enabled".into(), json!(drain.enabled));
    merged.extend(patch);
    let input: DrainInput = plateau_sdk::contract::json::parse_json_value(Value::Object(merged))?;
    let checked = input.check()?;
    let now = clock::now_millis();
    let mut shown = None;
    if matches!(checked.destination, Destination::Http { .. }) && drain.secret.is_none() {
        let (sealed, secret) = secret::issue(&org, now)?;
        drain.secret = Some(sealed);
        shown = Some(secret);
    }
    let was_enabled = drain.enabled;
    apply(&mut drain, checked);
    drain.updated_at = now;
    bucket.set(&record::drain_key(id), &drain)?;
    match (was_enabled, drain.enabled) {
        (false, true) => schedule(&org, id, now)?,
        (true, false) => jobs::cancel(Namespace::Organization(org), &record::job_key(id))?,
        _ => {}
    }
    NewEvent::new("log-drains.drain.updated", "update")
        .resource("log_drain", id)
        .data(&summary(&drain))
        .audit()
        .emit()?;
    let mut body = view(&bucket, &drain)?;
    body.secret = shown;
    Ok(Response::ok(&body))
}

/// `DELETE /log-drains/{id}`: 204; its buffer and job go with it.
pub fn delete(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let id = &params["id"];
    let bucket = Bucket::caller()?;
    load(&bucket, id)?;
    jobs::cancel(Namespace::Organization(org), &record::job_key(id))?;
    bucket.delete(&record::state_key(id))?;
    bucket.delete(&record::drain_key(id))?;
    NewEvent::new("log-drains.drain.deleted", "delete")
        .resource("log_drain", id)
        .audit()
        .emit()?;
    Ok(Response::no_content())
}
