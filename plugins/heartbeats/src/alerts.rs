//! What a change of state sets off: a timeline event always, and for the
//! changes that alert ([`crate::state::alert_for`]) an email request and a
//! signed webhook.
//!
//! A change is decided once, in the compare-and-swap that writes it
//! ([`record_change`]), which also numbers its alert; its effects are
//! committed with that write ([`announce`]). So each change alerts exactly
//! once:
//! - the email is the event `heartbeats.email.requested`
//!   (`{"to": [...], "subject": "...", "text": "..."}`), which the email relay
//!   plugin sends through the organisation's SMTP configuration;
//! - the webhook is its own durable job, `alert:{id}:{n}`, whose payload is
//!   the message already decided: a receiver that fails is retried with the
//!   host's backoff, with the same `webhook-id`, and nothing is decided
//!   again.

use plateau_sdk::jobs::{self, Job, NewJob};
use plateau_sdk::serde_json::{Value, json};
use plateau_sdk::{ApiError, Namespace, NewEvent, clock, log, secrets, webhooks};
use serde::{Deserialize, Serialize};

use crate::record::Heartbeat;
use crate::state::{AlertKind, Cause, State, Transition, alert_for};
use crate::store;

/// How long a webhook receiver may take to answer.
pub const WEBHOOK_TIMEOUT_MS: u32 = 10_000;

/// A change of state as written, with its alert number if it alerts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    pub transition: Transition,
    pub at: u64,
    pub alert: Option<(AlertKind, u64)>,
}

/// Books `transition` on the heartbeat (inside its compare-and-swap): the
/// time of the change, and the next alert number if it alerts.
pub fn record_change(heartbeat: &mut Heartbeat, transition: Transition, now: u64) -> Change {
    heartbeat.state_changed_at = now;
    let alert = alert_for(&transition, heartbeat.alert_on_late).map(|kind| {
        heartbeat.alert_count += 1;
        (kind, heartbeat.alert_count)
    });
    Change {
        transition,
        at: now,
        alert,
    }
}

/// The key of the job that delivers alert `n` of heartbeat `id`.
pub fn alert_job_key(id: &str, n: u64) -> String {
    format!("alert:{id}:{n}")
}

/// The payload of an alert job: the signed message's id and body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AlertJob {
    pub heartbeat_id: String,
    pub message_id: String,
    pub body: Value,
}

/// Records a change's event and, if it alerts, requests its email and
/// schedules its webhook; committed with the change.
pub fn announce(org: &str, heartbeat: &Heartbeat, change: &Change) -> Result<(), ApiError> {
    let Transition { from, to, cause } = change.transition;
    let data = json!({
        "name": heartbeat.name,
        "state": to,
        "previousState": from,
        "cause": cause.as_str(),
        "at": clock::rfc3339(change.at),
        "alert": change.alert.map(|(kind, _)| kind),
    });
    if matches!(to, State::Up | State::Late | State::Down) {
        NewEvent::new(format!("heartbeats.heartbeat.{}", to.as_str()), "update")
            .organization(org)
            .resource("heartbeat", &heartbeat.id)
            .data(&data)
            .emit()?;
    }
    let Some((kind, n)) = change.alert else {
        return Ok(());
    };
    if !heartbeat.alert_emails.is_empty() {
        NewEvent::new("heartbeats.email.requested", "notify")
            .organization(org)
            .resource("heartbeat", &heartbeat.id)
            .data(&json!({
                "to": heartbeat.alert_emails,
                "subject": subject(heartbeat, kind),
                "text": text(heartbeat, change),
            }))
            .emit()?;
    }
    if heartbeat.webhook_url.is_some() {
        let job = AlertJob {
            heartbeat_id: heartbeat.id.clone(),
            message_id: format!("msg_{}_{n}", heartbeat.id),
            body: json!({
                "type": format!("heartbeats.heartbeat.{}", kind.as_str()),
                "timestamp": clock::rfc3339(change.at),
                "data": {
                    "id": heartbeat.id,
                    "name": heartbeat.name,
                    "state": to,
                    "previousState": from,
                    "cause": cause.as_str(),
                    "alert": n,
                    "lastPingAt": heartbeat.last_ping_at.map(clock::rfc3339),
                    "lastSuccessAt": heartbeat.status.last_success_at.map(clock::rfc3339),
                },
            }),
        };
        let payload = serde_json::to_string(&job)
            .map_err(|e| ApiError::internal(format!("alert job does not serialize: {e}")))?;
        jobs::schedule(
            NewJob::at(alert_job_key(&heartbeat.id, n), change.at)
                .namespace(Namespace::Organization(org.to_owned()))
                .payload(payload),
        )?;
    }
    Ok(())
}

fn subject(heartbeat: &Heartbeat, kind: AlertKind) -> String {
    let what = match kind {
        AlertKind::Down => "is down",
        AlertKind::Late => "is late",
        AlertKind::Up => "is up again",
    };
    format!("Heartbeat \"{}\" {what}", heartbeat.name)
}

fn text(heartbeat: &Heartbeat, change: &Change) -> String {
    let Transition { from, to, cause } = change.transition;
    let grace = heartbeat.grace_seconds;
    let why = match cause {
        Cause::Ping(kind) => format!("a {} ping arrived", kind.as_str()),
        Cause::Overdue => "no success ping arrived by the expected time".to_owned(),
        Cause::GraceExpired => {
            format!("no success ping arrived by the expected time plus {grace} s of grace")
        }
        Cause::RunTimedOut => {
            format!("a run started and did not end within {grace} s of grace")
        }
        Cause::Rescheduled => "its schedule changed".to_owned(),
    };
    let at = |ms: Option<u64>| ms.map_or_else(|| "never".to_owned(), clock::rfc3339);
    format!(
        "Heartbeat \"{name}\" ({id}) is {to} (it was {from}) since {since}: {why}.\n\n\
         Last ping: {last}\nLast success: {success}\n",
        name = heartbeat.name,
        id = heartbeat.id,
        to = to.as_str(),
        from = from.as_str(),
        since = clock::rfc3339(change.at),
        last = at(heartbeat.last_ping_at),
        success = at(heartbeat.status.last_success_at),
    )
}

/// Delivers an alert job's webhook with the heartbeat's current URL and
/// secret. A failure is an error, so the host retries with backoff; a
/// heartbeat deleted or without a webhook since drops the alert.
pub fn deliver(job: &Job) -> Result<(), String> {
    let alert: AlertJob = serde_json::from_str(&job.payload)
        .map_err(|e| format!("alert job {} has an unreadable payload: {e}", job.key))?;
    let org = job
        .organization_id
        .as_deref()
        .ok_or_else(|| format!("alert job {} has no organisation", job.key))?;
    let bucket = store::bucket(org).map_err(|e| e.to_string())?;
    let heartbeat: Option<Heartbeat> = bucket
        .get(&Heartbeat::key(&alert.heartbeat_id))
        .map_err(|e| e.to_string())?;
    let Some(heartbeat) = heartbeat else {
        log::info(&format!(
            "alert {} dropped: heartbeat {} was deleted",
            alert.message_id, alert.heartbeat_id
        ));
        return Ok(());
    };
    let (Some(url), Some(sealed)) = (&heartbeat.webhook_url, &heartbeat.webhook_secret_sealed)
    else {
        log::info(&format!(
            "alert {} dropped: heartbeat {} has no webhook any more",
            alert.message_id, alert.heartbeat_id
        ));
        return Ok(());
    };
    let secret = open_secret(org, sealed).map_err(|e| e.to_string())?;
    match webhooks::send(
        url,
        &secret,
        &alert.message_id,
        &alert.body,
        WEBHOOK_TIMEOUT_MS,
    ) {
        Ok(response) if response.is_success() => Ok(()),
        Ok(response) => Err(format!(
            "webhook {} answered {} on attempt {}",
            alert.message_id, response.status, job.attempt
        )),
        Err(e) => Err(format!(
            "webhook {} failed on attempt {}: {e}",
            alert.message_id, job.attempt
        )),
    }
}

/// Seals a webhook secret for the organisation, as base64 to store in JSON.
pub fn seal_secret(org: &str, secret: &str) -> Result<String, ApiError> {
    use base64::Engine as _;
    let sealed = secrets::seal_str(&Namespace::Organization(org.to_owned()), secret)?;
    Ok(base64::engine::general_purpose::STANDARD.encode(sealed))
}

fn open_secret(org: &str, sealed: &str) -> Result<String, ApiError> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(sealed)
        .map_err(|e| ApiError::internal(format!("a sealed secret is not base64: {e}")))?;
    Ok(secrets::open_str(
        &Namespace::Organization(org.to_owned()),
        &bytes,
    )?)
}
