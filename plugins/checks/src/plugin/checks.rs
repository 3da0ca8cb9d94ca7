//! The check routes: create, list, read, change (PATCH as a JSON merge
//! patch, PUT as a replacement), delete and run now. Every change is an
//! audited event and keeps the check's durable job in step.

use plateau_sdk::serde_json::{Value, json};
use plateau_sdk::{
    ApiError, Bucket, FieldError, Namespace, NewEvent, Params, Request, Response, clock,
    paginate_kv_with,
};

use super::alerts;
use super::records::{self, CheckRecord, PingTarget, Trigger};
use super::runner;
use super::views::CheckView;
use crate::health::Health;
use crate::ids;
use crate::spec::{Directives, FieldErrors, Kind, Plan, Spec, merge_patch};

/// The caller's organisation and its namespace.
fn organization(req: &Request) -> Result<(String, Namespace), ApiError> {
    let org = req.caller.organization()?.to_owned();
    Ok((org.clone(), Namespace::Organization(org)))
}

fn read_spec(req: &Request, body: &Value) -> Result<(Spec, Directives), ApiError> {
    Spec::from_input(body, Plan::of(req.caller.plan.as_deref())).map_err(validation)
}

pub fn validation(errors: FieldErrors) -> ApiError {
    ApiError::validation_errors(
        errors
            .into_iter()
            .map(|(field, message)| FieldError { field, message })
            .collect(),
    )
}

/// `POST /checks`: 201 with the check; a webhook secret is in
/// `alerts.webhookSecret` this once.
pub fn create(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let (org, ns) = organization(req)?;
    let body: Value = req.json()?;
    let (spec, _) = read_spec(req, &body)?;
    let now = clock::now_millis();
    let mut record = CheckRecord {
        id: ids::new_id("chk", now),
        spec,
        health: Health::default(),
        runs: 0,
        alerts_raised: 0,
        last_result: None,
        ping_token: None,
        last_ping_at: None,
        webhook_secret: None,
        created_at: now,
        updated_at: now,
    };
    let secret = match record.spec.alerts.webhook_url {
        Some(_) => Some(alerts::issue_secret(&ns, &mut record)?),
        None => None,
    };
    if record.spec.kind == Kind::Heartbeat {
        let token = ids::new_token();
        Bucket::global()?.set(
            &records::ping_key(&ids::token_digest(&token)),
            &PingTarget {
                organization_id: org.clone(),
                check_id: record.id.clone(),
            },
        )?;
        record.ping_token = Some(token);
    }
    let bucket = Bucket::open(ns.clone())?;
    if !bucket.insert_new(&records::check_key(&record.id), &record)? {
        return Err(ApiError::internal("a new check id is already taken"));
    }
    runner::schedule(&ns, &record, now)?;
    NewEvent::new("checks.check.created", "create")
        .resource("check", &record.id)
        .data(&json!({
            "name": record.spec.name,
            "kind": record.spec.kind,
            "intervalSeconds": record.spec.interval_seconds,
        }))
        .audit()
        .emit()?;
    let view = CheckView::new(&record, &records::api_base(req), secret.as_deref());
    Ok(Response::created(&view).with_header("location", format!("/checks/{}", record.id)))
}

/// `GET /checks`: every check in creation order, paginated like core lists.
pub fn list(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let (_, ns) = organization(req)?;
    let base = records::api_base(req);
    let page = paginate_kv_with(&Bucket::open(ns)?, "check:", &req.page_query()?, |entry| {
        Ok(CheckView::new(&entry.json::<CheckRecord>()?, &base, None))
    })?;
    Ok(page.into_response())
}

/// `GET /checks/{id}`.
pub fn get(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let (_, ns) = organization(req)?;
    let (_, record) = records::find(&Bucket::open(ns)?, &params["id"])?;
    Ok(Response::ok(&CheckView::new(
        &record,
        &records::api_base(req),
        None,
    )))
}

/// `PATCH /checks/{id}`: a JSON merge patch of the check's configuration.
pub fn patch(req: &Request, params: &Params) -> Result<Response, ApiError> {
    update(req, params, true)
}

/// `PUT /checks/{id}`: the whole configuration again.
pub fn put(req: &Request, params: &Params) -> Result<Response, ApiError> {
    update(req, params, false)
}

fn update(req: &Request, params: &Params, merge: bool) -> Result<Response, ApiError> {
    let (_, ns) = organization(req)?;
    let bucket = Bucket::open(ns.clone())?;
    let (raw, mut record) = records::find(&bucket, &params["id"])?;
    let body: Value = req.json()?;
    if !body.is_object() {
        return Err(validation(vec![(
            "body".into(),
            "must be a JSON object".into(),
        )]));
    }
    let input = if merge {
        let mut base = record.spec.to_input();
        merge_patch(&mut base, &body);
        base
    } else {
        body
    };
    let kind = record.spec.kind.as_str();
    match input.get("kind").and_then(Value::as_str) {
        Some(asked) if asked != kind => {
            return Err(validation(vec![(
                "kind".into(),
                format!("cannot change from {kind} to {asked}: create a new check"),
            )]));
        }
        _ => {}
    }
    let (spec, directives) = read_spec(req, &input)?;
    let now = clock::now_millis();
    let secret = if spec.alerts.webhook_url.is_none() {
        record.webhook_secret = None;
        None
    } else if record.webhook_secret.is_none() || directives.rotate_webhook_secret {
        Some(alerts::issue_secret(&ns, &mut record)?)
    } else {
        None
    };
    let runs_differently = {
        let strip = |s: &Spec| Spec {
            name: String::new(),
            alerts: Default::default(),
            ..s.clone()
        };
        strip(&spec) != strip(&record.spec)
    };
    let changed: Vec<String> = match (record.spec.to_input(), spec.to_input()) {
        (Value::Object(old), Value::Object(new)) => new
            .iter()
            .filter(|(k, v)| old.get(*k) != Some(*v))
            .map(|(k, _)| k.clone())
            .chain(old.keys().filter(|k| !new.contains_key(*k)).cloned())
            .collect(),
        _ => Vec::new(),
    };
    record.spec = spec;
    record.updated_at = now;
    let key = records::check_key(&record.id);
    if !bucket.compare_and_swap(&key, Some(&raw), Some(&records::encode(&record)?))? {
        return Err(ApiError::conflict(format!(
            "check {} changed while this request read it: retry",
            record.id
        )));
    }
    if runs_differently {
        runner::schedule(&ns, &record, now)?;
    }
    NewEvent::new("checks.check.updated", "update")
        .resource("check", &record.id)
        .data(&json!({ "name": record.spec.name, "changed": changed }))
        .audit()
        .emit()?;
    Ok(Response::ok(&CheckView::new(
        &record,
        &records::api_base(req),
        secret.as_deref(),
    )))
}

/// `DELETE /checks/{id}`: the check, its job, results and alerts; 204.
pub fn delete(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let (_, ns) = organization(req)?;
    let bucket = Bucket::open(ns.clone())?;
    let (_, record) = records::find(&bucket, &params["id"])?;
    plateau_sdk::jobs::cancel(ns.clone(), &records::check_job(&record.id))?;
    bucket.delete(&records::check_key(&record.id))?;
    for entry in bucket.list_all(&records::result_prefix(&record.id))? {
        bucket.delete(&entry.key)?;
    }
    alerts::forget(&bucket, &ns, &record.id)?;
    if let Some(token) = &record.ping_token {
        Bucket::global()?.delete(&records::ping_key(&ids::token_digest(token)))?;
    }
    NewEvent::new("checks.check.deleted", "delete")
        .resource("check", &record.id)
        .data(&json!({ "name": record.spec.name, "kind": record.spec.kind }))
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

/// `POST /checks/{id}/run`: runs the check now (a paused one too) and
/// answers the result; the state and alerts move as for a scheduled run.
pub fn run(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let (org, ns) = organization(req)?;
    let id = &params["id"];
    records::find(&Bucket::open(ns)?, id)?;
    match runner::run(&org, id, Trigger::Manual, None)? {
        Some(result) => Ok(Response::ok(&result)),
        None => Err(ApiError::conflict(format!(
            "check {id} changed or was deleted during the run: run it again"
        ))),
    }
}
