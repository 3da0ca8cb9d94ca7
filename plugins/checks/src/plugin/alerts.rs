//! Announcing a change of state: a timeline event for every change and, for
//! a change that alerts, an email through the relay (the
//! `checks.email.requested` event) and a signed webhook (Standard Webhooks).
//!
//! The announcement commits with the run that changed the state, so each
//! change is announced exactly once. The webhook goes out from a job of its
//! own: a failed delivery is retried with backoff under the same
//! `webhook-id`, and a run never waits for a receiver.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use plateau_sdk::jobs::{self, Job, NewJob};
use plateau_sdk::serde_json::json;
use plateau_sdk::{ApiError, Bucket, Namespace, NewEvent, clock, log, secrets, webhooks};
use serde::{Deserialize, Serialize};

use super::records::{
    self, AlertRecord, CheckRecord, Delivery, RunResult, WebhookAttempts, alert_job, alert_key,
};
use crate::health::{Change, Status};
use crate::ids;

/// Attempts of a webhook delivery before it is given up.
pub const MAX_ATTEMPTS: u32 = 8;
/// The wait after the first failed attempt; it doubles after each.
const FIRST_BACKOFF_MS: u64 = 10_000;
const MAX_BACKOFF_MS: u64 = 3_600_000;
const WEBHOOK_TIMEOUT_MS: u32 = 5_000;

/// What a delivery job carries.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeliveryJob {
    alert_id: String,
    /// The alert record's key.
    key: String,
}

/// Announces `change`, which `result` (run at `now`) caused on `check`.
pub fn announce(
    bucket: &Bucket,
    org: &str,
    check: &CheckRecord,
    change: Change,
    result: &RunResult,
    now: u64,
) -> Result<(), ApiError> {
    let status = change.to.as_str();
    NewEvent::new(format!("checks.check.{status}"), "status")
        .organization(org)
        .resource("check", &check.id)
        .data(&json!({
            "name": check.spec.name,
            "kind": check.spec.kind,
            "status": change.to,
            "previousStatus": change.from,
            "resultId": result.id,
            "message": result.message,
        }))
        .emit()?;
    if !change.alerts() {
        return Ok(());
    }
    let emails = &check.spec.alerts.emails;
    if !emails.is_empty() {
        let (subject, text) = email(check, change, result);
        NewEvent::new("checks.email.requested", "request")
            .organization(org)
            .resource("check", &check.id)
            .data(&json!({ "to": emails, "subject": subject, "text": text }))
            .emit()?;
    }
    let alert_id = ids::new_id("alr", now);
    let webhook = check
        .spec
        .alerts
        .webhook_url
        .as_ref()
        .map(|url| WebhookAttempts {
            url: url.clone(),
            state: Delivery::Pending,
            attempts: 0,
            last_status_code: None,
            last_error: None,
            delivered_at: None,
            next_attempt_at: Some(clock::rfc3339(now)),
        });
    let event_type = format!("check.{status}");
    let payload = json!({
        "type": event_type,
        "timestamp": clock::rfc3339(now),
        "data": {
            "alertId": alert_id,
            "check": {
                "id": check.id,
                "name": check.spec.name,
                "kind": check.spec.kind,
                "url": check.spec.url,
            },
            "status": change.to,
            "previousStatus": change.from,
            "result": result,
        },
    });
    let key = alert_key(&check.id, check.alerts_raised);
    let deliver = webhook.is_some();
    bucket.set(
        &key,
        &AlertRecord {
            id: alert_id.clone(),
            check_id: check.id.clone(),
            number: check.alerts_raised,
            event_type,
            status: change.to,
            previous_status: change.from,
            created_at: clock::rfc3339(now),
            emails: emails.clone(),
            webhook,
            payload,
        },
    )?;
    if deliver {
        let job = DeliveryJob {
            alert_id: alert_id.clone(),
            key,
        };
        jobs::schedule(
            NewJob::at(alert_job(&alert_id), now)
                .namespace(Namespace::Organization(org.to_owned()))
                .payload(plateau_sdk::serde_json::to_string(&job).unwrap_or_default()),
        )?;
    }
    Ok(())
}

/// The subject and text of an alert email.
fn email(check: &CheckRecord, change: Change, result: &RunResult) -> (String, String) {
    let name = &check.spec.name;
    let subject = match (change.from, change.to) {
        (_, Status::Down) => format!("Check \"{name}\" is down"),
        (_, Status::Degraded) => format!("Check \"{name}\" is degraded"),
        (Some(from), Status::Up) => format!("Check \"{name}\" is up again (was {})", from.as_str()),
        (None, Status::Up) => format!("Check \"{name}\" is up"),
    };
    let mut text = format!(
        "{subject}.\n\nCheck: {name} ({})\nKind: {}\n",
        check.id,
        check.spec.kind.as_str()
    );
    if let Some(url) = &check.spec.url {
        text.push_str(&format!(
            "Target: {} {url}\n",
            check.spec.method.as_deref().unwrap_or("GET")
        ));
    }
    let previous = change.from.map_or("none", |s| s.as_str());
    text.push_str(&format!(
        "Status: {} (was {previous})\nAt: {}\n",
        change.to.as_str(),
        result.started_at
    ));
    if let Some(code) = result.status_code {
        text.push_str(&format!("Status code: {code}\n"));
    }
    if let Some(ms) = result.latency_ms {
        text.push_str(&format!("Response time: {ms} ms\n"));
    }
    if let Some(message) = &result.message {
        text.push_str(&format!("Why: {message}\n"));
    }
    (subject, text)
}

/// Seals a new webhook secret into `check`; the secret, to show once.
pub fn issue_secret(ns: &Namespace, check: &mut CheckRecord) -> Result<String, ApiError> {
    let secret = webhooks::new_secret();
    let sealed = secrets::seal_str(ns, &secret)?;
    check.webhook_secret = Some(BASE64.encode(sealed));
    Ok(secret)
}

fn open_secret(ns: &Namespace, check: &CheckRecord) -> Result<Option<String>, ApiError> {
    let Some(sealed) = &check.webhook_secret else {
        return Ok(None);
    };
    let sealed = BASE64
        .decode(sealed)
        .map_err(|e| ApiError::internal(format!("a sealed webhook secret is not base64: {e}")))?;
    Ok(Some(secrets::open_str(ns, &sealed)?))
}

/// The delay before attempt `attempts + 1`, after `attempts` failures.
pub fn backoff_ms(attempts: u32) -> u64 {
    FIRST_BACKOFF_MS
        .saturating_mul(1 << attempts.saturating_sub(1).min(20))
        .min(MAX_BACKOFF_MS)
}

/// A delivery job: one attempt at the alert's webhook, and the next one
/// scheduled if it failed. A job delivered again after success (jobs run
/// at least once) finds the alert delivered and sends nothing.
pub fn deliver(org: &str, job: &Job) -> Result<(), ApiError> {
    let ns = Namespace::Organization(org.to_owned());
    let Ok(target) = plateau_sdk::serde_json::from_str::<DeliveryJob>(&job.payload) else {
        log::warn(&format!(
            "dropping the alert job {} with an unreadable payload",
            job.key
        ));
        return Ok(());
    };
    let bucket = Bucket::open(ns.clone())?;
    let Some(mut alert) = bucket.get::<AlertRecord>(&target.key)? else {
        return Ok(());
    };
    if alert.id != target.alert_id {
        return Ok(());
    }
    let Some(mut attempts) = alert.webhook.clone() else {
        return Ok(());
    };
    if attempts.state != Delivery::Pending {
        return Ok(());
    }
    let check = records::load(&bucket, &alert.check_id)?.map(|(_, c)| c);
    let destination = match &check {
        Some(check) => match (&check.spec.alerts.webhook_url, open_secret(&ns, check)?) {
            (Some(url), Some(secret)) => Some((url.clone(), secret)),
            _ => None,
        },
        None => None,
    };
    let now = clock::now_millis();
    let Some((url, secret)) = destination else {
        attempts.state = Delivery::Cancelled;
        attempts.next_attempt_at = None;
        alert.webhook = Some(attempts);
        bucket.set(&target.key, &alert)?;
        return Ok(());
    };
    attempts.url = url.clone();
    attempts.attempts += 1;
    let failure = match webhooks::send(&url, &secret, &alert.id, &alert.payload, WEBHOOK_TIMEOUT_MS)
    {
        Ok(res) if res.is_success() => {
            attempts.last_status_code = Some(res.status);
            attempts.last_error = None;
            None
        }
        Ok(res) => {
            attempts.last_status_code = Some(res.status);
            Some(format!("the receiver answered {}", res.status))
        }
        Err(e) => {
            attempts.last_status_code = None;
            Some(e.to_string())
        }
    };
    match failure {
        None => {
            attempts.state = Delivery::Delivered;
            attempts.delivered_at = Some(clock::rfc3339(now));
            attempts.next_attempt_at = None;
        }
        Some(why) if attempts.attempts < MAX_ATTEMPTS => {
            let next = now + backoff_ms(attempts.attempts);
            attempts.last_error = Some(why);
            attempts.next_attempt_at = Some(clock::rfc3339(next));
            jobs::schedule(
                NewJob::at(job.key.clone(), next)
                    .namespace(ns)
                    .payload(job.payload.clone()),
            )?;
        }
        Some(why) => {
            attempts.last_error = Some(why);
            attempts.state = Delivery::Failed;
            attempts.next_attempt_at = None;
        }
    }
    alert.webhook = Some(attempts);
    bucket.set(&target.key, &alert)?;
    Ok(())
}

/// Cancels the pending deliveries of a deleted check and forgets its alerts.
pub fn forget(bucket: &Bucket, ns: &Namespace, check_id: &str) -> Result<(), ApiError> {
    for entry in bucket.list_all(&records::alert_prefix(check_id))? {
        if let Ok(alert) = entry.json::<AlertRecord>()
            && alert.webhook.is_some_and(|w| w.state == Delivery::Pending)
        {
            jobs::cancel(ns.clone(), &alert_job(&alert.id))?;
        }
        bucket.delete(&entry.key)?;
    }
    Ok(())
}
