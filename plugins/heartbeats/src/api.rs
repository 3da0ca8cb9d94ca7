//! The management routes: create, list, read, change and delete heartbeats,
//! rotate a webhook secret, and read a heartbeat's recent pings.

use plateau_sdk::serde_json::{Value, json};
use plateau_sdk::{
    ApiError, Bucket, NewEvent, Params, Request, Response, Validator, clock, config, jobs,
    paginate_kv, paginate_kv_with, webhooks,
};

use crate::alerts::{self, Change};
use crate::input::{self, HeartbeatPatch, NewHeartbeat, ScheduleFields};
use crate::record::{self, Heartbeat, PingRecord, TokenEntry};
use crate::state::{State, Status};
use crate::store;

/// The API base URL (`…/api/v1`) URLs handed to users start with.
pub fn base_url(req: &Request) -> String {
    config::public_base_url(req)
}

/// A heartbeat with the one-time webhook secret, when this call made one.
fn with_secret(mut view: record::View, secret: Option<&str>) -> record::View {
    if let Some(secret) = secret {
        view.webhook_secret = Some(secret.to_owned());
    }
    view
}

/// A new webhook secret: its sealed form and last four characters.
fn new_webhook_secret(org: &str, heartbeat: &mut Heartbeat) -> Result<String, ApiError> {
    let secret = webhooks::new_secret();
    heartbeat.webhook_secret_sealed = Some(alerts::seal_secret(org, &secret)?);
    heartbeat.webhook_secret_last4 = Some(secret[secret.len() - 4..].to_owned());
    Ok(secret)
}

/// `POST /heartbeats`: 201 with `pingUrl`, and `webhookSecret` (shown only
/// here) when a webhook URL is set.
pub fn create(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let checked = req.json::<NewHeartbeat>()?.check()?;
    let now = clock::now_millis();
    let id = record::new_id(now);
    let token = record::new_token();
    let (period_seconds, schedule, timezone) = match checked.schedule {
        ScheduleFields::Period(seconds) => (Some(seconds), None, None),
        ScheduleFields::Cron {
            expression,
            timezone,
        } => (None, Some(expression), Some(timezone)),
    };
    let mut heartbeat = Heartbeat {
        id: id.clone(),
        name: checked.name,
        period_seconds,
        schedule,
        timezone,
        grace_seconds: checked.grace_seconds,
        alert_emails: checked.alert_emails,
        webhook_url: checked.webhook_url,
        webhook_secret_sealed: None,
        webhook_secret_last4: None,
        alert_on_late: checked.alert_on_late,
        status: Status {
            state: if checked.paused {
                State::Paused
            } else {
                State::New
            },
            ..Status::new()
        },
        state_changed_at: now,
        last_ping_at: None,
        last_ping_kind: None,
        last_duration_ms: None,
        ping_token: token.clone(),
        ping_count: 0,
        alert_count: 0,
        created_at: now,
        updated_at: now,
    };
    let secret = match heartbeat.webhook_url {
        Some(_) => Some(new_webhook_secret(&org, &mut heartbeat)?),
        None => None,
    };
    let bucket = store::bucket(&org)?;
    if !bucket.insert_new(&Heartbeat::key(&id), &heartbeat)? {
        return Err(ApiError::conflict(format!(
            "heartbeat {id} already exists: retry the request"
        )));
    }
    let index = TokenEntry {
        organization_id: org.clone(),
        heartbeat_id: id.clone(),
    };
    if !Bucket::global()?.insert_new(&TokenEntry::key(&token), &index)? {
        return Err(ApiError::conflict(
            "a ping token collided: retry the request",
        ));
    }
    NewEvent::new("heartbeats.heartbeat.created", "create")
        .resource("heartbeat", &id)
        .data(&summary(&heartbeat))
        .audit()
        .emit()?;
    let body = with_secret(heartbeat.view(&base_url(req)), secret.as_deref());
    Ok(Response::created(&body).with_header("location", format!("/heartbeats/{id}")))
}

/// What events say about a heartbeat's configuration: no token, no secret.
fn summary(heartbeat: &Heartbeat) -> Value {
    json!({
        "name": heartbeat.name,
        "state": heartbeat.status.state,
        "periodSeconds": heartbeat.period_seconds,
        "schedule": heartbeat.schedule,
        "timezone": heartbeat.timezone,
        "graceSeconds": heartbeat.grace_seconds,
        "alertEmails": heartbeat.alert_emails.len(),
        "webhook": heartbeat.webhook_url.is_some(),
        "alertOnLate": heartbeat.alert_on_late,
    })
}

/// `GET /heartbeats`: oldest first, paginated like core lists.
pub fn list(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let base = base_url(req);
    let page = paginate_kv_with(&Bucket::caller()?, "hb/", &req.page_query()?, |entry| {
        Ok(entry.json::<Heartbeat>()?.view(&base))
    })?;
    Ok(page.into_response())
}

/// `GET /heartbeats/{id}`
pub fn get(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let heartbeat = store::load(&Bucket::caller()?, &params["id"])?;
    Ok(Response::ok(&heartbeat.view(&base_url(req))))
}

/// `PATCH /heartbeats/{id}`: changes the fields sent. A new schedule or
/// grace time settles the state at once (which may alert); `paused: true`
/// pauses, `paused: false` makes a paused heartbeat `new` again.
pub fn update(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let id = &params["id"];
    let patch: HeartbeatPatch = req.json()?;
    let bucket = store::bucket(&org)?;
    let now = clock::now_millis();
    let mut secret = None;
    let changed = store::modify(&bucket, id, |heartbeat| {
        secret = None;
        apply_patch(&org, heartbeat, &patch, now, &mut secret)
    })?;
    let (heartbeat, change) = changed.ok_or_else(|| store::not_found(id))?;
    store::sync_deadline(&org, &heartbeat)?;
    if let Some(change) = &change {
        alerts::announce(&org, &heartbeat, change)?;
    }
    NewEvent::new("heartbeats.heartbeat.updated", "update")
        .resource("heartbeat", id)
        .data(&summary(&heartbeat))
        .audit()
        .emit()?;
    let body = with_secret(heartbeat.view(&base_url(req)), secret.as_deref());
    Ok(Response::ok(&body))
}

fn apply_patch(
    org: &str,
    heartbeat: &mut Heartbeat,
    patch: &HeartbeatPatch,
    now: u64,
    secret: &mut Option<String>,
) -> Result<Option<Change>, ApiError> {
    let mut v = Validator::new();
    if let Some(name) = &patch.name {
        input::check_name(&mut v, name);
    }
    let previous = match (&heartbeat.schedule, heartbeat.period_seconds) {
        (Some(expression), _) => ScheduleFields::Cron {
            expression: expression.clone(),
            timezone: heartbeat.timezone.clone().unwrap_or_else(|| "UTC".into()),
        },
        (None, seconds) => ScheduleFields::Period(seconds.unwrap_or(input::DEFAULT_PERIOD_SECONDS)),
    };
    let schedule = ScheduleFields::from_fields(
        &mut v,
        patch.period_seconds,
        patch.schedule.as_deref(),
        patch.timezone.as_deref(),
        Some(&previous),
    );
    if let Some(grace) = patch.grace_seconds {
        input::check_grace(&mut v, grace);
    }
    if let Some(emails) = &patch.alert_emails {
        input::check_emails(&mut v, emails);
    }
    if let Some(Some(url)) = &patch.webhook_url {
        input::check_webhook_url(&mut v, url);
    }
    v.finish()?;

    let before = heartbeat.clone();
    if let Some(name) = &patch.name {
        heartbeat.name = name.trim().to_owned();
    }
    match schedule {
        Some(ScheduleFields::Period(seconds)) => {
            heartbeat.period_seconds = Some(seconds);
            heartbeat.schedule = None;
            heartbeat.timezone = None;
        }
        Some(ScheduleFields::Cron {
            expression,
            timezone,
        }) => {
            heartbeat.period_seconds = None;
            heartbeat.schedule = Some(expression);
            heartbeat.timezone = Some(timezone);
        }
        None => {}
    }
    if let Some(grace) = patch.grace_seconds {
        heartbeat.grace_seconds = grace;
    }
    if let Some(emails) = &patch.alert_emails {
        heartbeat.alert_emails = emails.clone();
    }
    if let Some(alert_on_late) = patch.alert_on_late {
        heartbeat.alert_on_late = alert_on_late;
    }
    match &patch.webhook_url {
        Some(None) => {
            heartbeat.webhook_url = None;
            heartbeat.webhook_secret_sealed = None;
            heartbeat.webhook_secret_last4 = None;
        }
        Some(Some(url)) => {
            heartbeat.webhook_url = Some(url.clone());
            if heartbeat.webhook_secret_sealed.is_none() {
                *secret = Some(new_webhook_secret(org, heartbeat)?);
            }
        }
        None => {}
    }
    match (patch.paused, heartbeat.status.state) {
        (Some(true), state) if state != State::Paused => {
            heartbeat.status.state = State::Paused;
            heartbeat.status.run_started_at = None;
            heartbeat.state_changed_at = now;
        }
        (Some(false), State::Paused) => {
            heartbeat.status.state = State::New;
            heartbeat.state_changed_at = now;
        }
        _ => {}
    }
    if *heartbeat == before {
        return Ok(None);
    }
    heartbeat.updated_at = now;
    // A new schedule or grace time moves the deadlines: settle now.
    let rules = heartbeat
        .rules()
        .map_err(|e| ApiError::validation(e.field, e.message))?;
    Ok(rules
        .settle(&mut heartbeat.status, now)
        .map(|transition| alerts::record_change(heartbeat, transition, now)))
}

/// `DELETE /heartbeats/{id}`: the heartbeat, its ping URL, its history and
/// its deadline job. Alerts not yet delivered are dropped.
pub fn delete(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let id = &params["id"];
    let bucket = store::bucket(&org)?;
    let heartbeat = store::load(&bucket, id)?;
    bucket.delete(&Heartbeat::key(id))?;
    Bucket::global()?.delete(&TokenEntry::key(&heartbeat.ping_token))?;
    for entry in bucket.list_all(&PingRecord::prefix(id))? {
        bucket.delete(&entry.key)?;
    }
    jobs::cancel(
        plateau_sdk::Namespace::Organization(org.clone()),
        &store::deadline_job_key(id),
    )?;
    NewEvent::new("heartbeats.heartbeat.deleted", "delete")
        .resource("heartbeat", id)
        .data(&json!({ "name": heartbeat.name }))
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

/// `POST /heartbeats/{id}/webhook-secret`: a new secret, answered once; the
/// old one stops signing at once, also for alerts still being retried.
pub fn rotate_secret(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let id = &params["id"];
    let bucket = store::bucket(&org)?;
    let now = clock::now_millis();
    let mut secret = None;
    let changed = store::modify(&bucket, id, |heartbeat| {
        if heartbeat.webhook_url.is_none() {
            return Err(ApiError::conflict(format!(
                "heartbeat {id} has no webhook: set webhookUrl with PATCH first"
            )));
        }
        secret = Some(new_webhook_secret(&org, heartbeat)?);
        heartbeat.updated_at = now;
        Ok(())
    })?;
    let (heartbeat, ()) = changed.ok_or_else(|| store::not_found(id))?;
    NewEvent::new("heartbeats.heartbeat.secret_rotated", "update")
        .resource("heartbeat", id)
        .data(&json!({ "name": heartbeat.name }))
        .audit()
        .emit()?;
    let body = with_secret(heartbeat.view(&base_url(req)), secret.as_deref());
    Ok(Response::ok(&body))
}

/// `GET /heartbeats/{id}/pings`: the recent pings, newest first.
pub fn pings(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let id = &params["id"];
    let bucket = Bucket::caller()?;
    store::load(&bucket, id)?;
    let page = paginate_kv::<PingRecord>(&bucket, &PingRecord::prefix(id), &req.page_query()?)?;
    Ok(page.into_response())
}
