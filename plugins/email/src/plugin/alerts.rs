//! Alert emails asked for by other plugins and the host: an event
//! `alarms.email.requested`, `anomalies.email.requested`,
//! `spend.email.requested`, `checks.email.requested`,
//! `heartbeats.email.requested`, `webhooks.email.requested`,
//! `errors.email.requested` or `status-pages.email.requested` whose data is
//! `{"to": ["a@example.com"], "subject": "...", "text": "...", "html": "..."}`
//! (`html` optional) is queued like `POST /email/send` from the
//! organisation's alert sender (`alertsFrom`, else its first allowed sender
//! that is a plain address).
//!
//! The host asks the same way for an invitation's email (`/members`),
//! with a job `invite:<id>` whose payload is that data: the link in it is
//! a credential, so it never goes through the event timeline.
//!
//! Events arrive at least once: the event id is recorded with the queued
//! message, so a second delivery of the same event queues nothing. An
//! organisation without configuration or alert sender, an invalid request
//! or one whose recipients are all suppressed is logged and dropped (a
//! retry would not fix it). Alerts count against the rate limit but are
//! never refused by it.

use plateau_sdk::jobs::Job;
use plateau_sdk::serde_json::{Value, json};
use plateau_sdk::{ApiError, Bucket, Event, Namespace, Request, clock, log};
use serde::Deserialize;

use super::send::{Origin, queue};
use super::{config, rate, suppressions};
use crate::keys;
use crate::message::{self, OneOrMany};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AlertRequest {
    #[serde(default)]
    to: OneOrMany,
    subject: Option<String>,
    text: Option<String>,
    html: Option<String>,
}

/// Handles a subscribed event.
pub fn on_event(event: &Event) -> Result<(), String> {
    if !super::ALERT_EVENTS.contains(&event.event_type.as_str()) {
        return Ok(());
    }
    queue_alert(event).map_err(|e| format!("queueing the alert of event {}: {e}", event.id))
}

/// Handles the host's `invite:<id>` job.
pub fn on_invite_job(job: &Job) -> Result<(), String> {
    let Some(org) = &job.organization_id else {
        log::warn(&format!("ignoring the global job {}", job.key));
        return Ok(());
    };
    queue_request(org, &job.key, "members.invite", &job.payload)
        .map_err(|e| format!("queueing the email of job {}: {e}", job.key))
}

fn queue_alert(event: &Event) -> Result<(), ApiError> {
    queue_request(
        &event.organization_id,
        &event.id,
        &event.event_type,
        &event.data,
    )
}

/// Queues the email that `data` asks for, once per `id` (an event id, or
/// the host's job key).
fn queue_request(org: &str, id: &str, kind: &str, data: &str) -> Result<(), ApiError> {
    let namespace = Namespace::Organization(org.to_owned());
    let bucket = Bucket::open(namespace.clone())?;
    let drop = |why: &str| {
        log::warn(&format!("alert {id} ({kind}) of {org} is not sent: {why}"));
        Ok(())
    };
    let marker = keys::event_marker(id);
    if bucket.get_raw(&marker)?.is_some() {
        return Ok(());
    }
    let Some(config) = config::load(&bucket)? else {
        return drop("the organisation has no email configuration (PUT /email/config)");
    };
    let Some(from) = config.alert_sender() else {
        return drop("the configuration has no alertsFrom and no plain allowed sender");
    };
    let alert: AlertRequest = match plateau_sdk::serde_json::from_str(data) {
        Ok(alert) => alert,
        Err(e) => return drop(&format!("its data is not an alert request: {e}")),
    };
    // The same validation as POST /email/send, on the equivalent body.
    let body = json!({
        "from": from.to_string(),
        "to": match alert.to {
            OneOrMany::None => Value::Array(Vec::new()),
            OneOrMany::One(one) => json!([one]),
            OneOrMany::Many(many) => json!(many),
        },
        "subject": alert.subject,
        "text": alert.text,
        "html": alert.html,
    });
    let req = Request::default().with_json(&body);
    let mut outgoing = match message::parse(&req).and_then(|r| r.validate()) {
        Ok(outgoing) => outgoing,
        Err(e) if e.errors().is_empty() => return drop(e.detail()),
        Err(e) => {
            let fields: Vec<String> = e
                .errors()
                .iter()
                .map(|f| format!("{} {}", f.field, f.message))
                .collect();
            return drop(&fields.join("; "));
        }
    };
    let suppressed = suppressions::strip(&bucket, &mut outgoing)?;
    if outgoing.recipients().next().is_none() {
        return drop(&format!(
            "every recipient is suppressed ({})",
            suppressed.join(", ")
        ));
    }
    let now = clock::now_millis();
    rate::take(&bucket, None, now, false)?;
    let entry = queue(
        &bucket,
        &namespace,
        &outgoing,
        suppressed,
        Origin::Event {
            organization_id: org,
            id,
            event_type: kind,
        },
        now,
    )?;
    // A concurrent delivery of the same event fails its commit on this
    // compare-and-swap, and its retry finds the marker.
    if !bucket.compare_and_swap(&marker, None, Some(entry.id.as_bytes()))? {
        return Err(ApiError::conflict("the event is being queued concurrently"));
    }
    Ok(())
}
