//! Telling subscribers about an update: a `notify:{incident}:{update}`
//! job walks the confirmed subscribers 90 at a time (a call records at
//! most 100 events), asking the email relay for each address's email with
//! a `status-pages.email.requested` event and scheduling a
//! `wh:{subscriber}:{update}` job per webhook, whose payload is the signed
//! message already decided: a receiver that fails is retried with the
//! host's backoff under the same `webhook-id`. A walk that has more to do
//! schedules its next page as a job of its own.

use plateau_sdk::jobs::{self, Job, NewJob};
use plateau_sdk::serde_json::{Value, json};
use plateau_sdk::{ApiError, Namespace, NewEvent, clock, log, webhooks};
use serde::{Deserialize, Serialize};

use crate::record::{self, Incident, IncidentKind, Page, Subscriber};
use crate::views::{IncidentView, public_url};
use crate::{store, subscribers};

/// Subscribers handled by one notify job.
const BATCH: u32 = 90;
const WEBHOOK_TIMEOUT_MS: u32 = 10_000;

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NotifyJob {
    incident_id: String,
    update_id: String,
    cursor: Option<String>,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WebhookJob {
    subscriber_id: String,
    message_id: String,
    body: Value,
}

/// Asks for the notification of `update` (committed with the request).
pub fn schedule(incident: &str, update: &str) -> Result<(), ApiError> {
    let payload = json!({ "incidentId": incident, "updateId": update, "cursor": null });
    jobs::schedule(
        NewJob::at(format!("notify:{incident}:{update}"), clock::now_millis())
            .payload(payload.to_string()),
    )?;
    Ok(())
}

/// Runs a `notify:` or `wh:` job.
pub fn on_job(job: &Job) -> Result<(), String> {
    let Some(org) = job.organization_id.as_deref() else {
        log::warn(&format!("job {} has no organisation", job.key));
        return Ok(());
    };
    let result = if job.key.starts_with("notify:") {
        walk(org, job)
    } else {
        deliver(org, job)
    };
    result.map_err(|e| format!("job {}: {e}", job.key))
}

fn walk(org: &str, job: &Job) -> Result<(), ApiError> {
    let task: NotifyJob = plateau_sdk::serde_json::from_str(&job.payload)
        .map_err(|e| ApiError::internal(format!("unreadable payload: {e}")))?;
    let bucket = store::org_bucket(org)?;
    let (Some(page), Some(incident)) = (
        store::page(&bucket)?,
        bucket.get::<Incident>(&record::incident_key(&task.incident_id))?,
    ) else {
        return Ok(());
    };
    let Some(update) = incident.updates.iter().find(|u| u.id == task.update_id) else {
        return Ok(());
    };
    let found = bucket.list(record::SUBSCRIBERS, task.cursor.as_deref(), BATCH)?;
    let url = public_url(&page.base_url, &page.slug);
    let namespace = Namespace::Organization(org.to_owned());
    for entry in &found.entries {
        let sub: Subscriber = entry.json()?;
        if !sub.confirmed {
            continue;
        }
        if let Some(email) = &sub.email {
            let (subject, text) = email_text(&page, &incident, &update.body, &url, &sub);
            NewEvent::new("status-pages.email.requested", "notify")
                .organization(org)
                .resource("status_incident", &incident.id)
                .data(&json!({ "to": [email], "subject": subject, "text": text }))
                .emit()?;
        } else {
            let mut view = IncidentView::from(&incident);
            view.updates.retain(|u| u.id == update.id);
            let body = json!({
                "type": format!("status-pages.{}.updated", noun(incident.kind)),
                "timestamp": update.created_at,
                "data": {
                    "page": { "id": page.id, "name": page.name, "url": url },
                    "incident": view,
                },
            });
            let payload = WebhookJob {
                subscriber_id: sub.id.clone(),
                message_id: format!("msg_{}_{}", sub.id, update.id),
                body,
            };
            let payload = plateau_sdk::serde_json::to_string(&payload)
                .map_err(|e| ApiError::internal(format!("payload does not serialize: {e}")))?;
            jobs::schedule(
                NewJob::at(format!("wh:{}:{}", sub.id, update.id), clock::now_millis())
                    .namespace(namespace.clone())
                    .payload(payload),
            )?;
        }
    }
    if let Some(next) = found.next_cursor {
        let payload = NotifyJob {
            cursor: Some(next.clone()),
            ..task
        };
        let payload = plateau_sdk::serde_json::to_string(&payload)
            .map_err(|e| ApiError::internal(format!("payload does not serialize: {e}")))?;
        let key = format!("{}:{}", job.key, found.entries.len());
        jobs::schedule(
            NewJob::at(key, clock::now_millis())
                .namespace(namespace)
                .payload(payload),
        )?;
    }
    Ok(())
}

fn noun(kind: IncidentKind) -> &'static str {
    match kind {
        IncidentKind::Incident => "incident",
        IncidentKind::Maintenance => "maintenance",
    }
}

fn email_text(
    page: &Page,
    incident: &Incident,
    body: &str,
    url: &str,
    sub: &Subscriber,
) -> (String, String) {
    let subject = format!(
        "[{}] {}: {}",
        page.name,
        incident.name,
        incident.status.replace('_', " ")
    );
    let text = format!(
        "{name}\nStatus: {status}\n\n{body}\n\nThe status page: {url}\n\n\
         To stop these emails: {unsubscribe}\n",
        name = incident.name,
        status = incident.status.replace('_', " "),
        unsubscribe = subscribers::unsubscribe_url(url, &sub.token),
    );
    (subject, text)
}

/// Delivers a `wh:` job's message, signed with the subscriber's secret; a
/// failure is retried by the host. A subscriber gone since drops it.
fn deliver(org: &str, job: &Job) -> Result<(), ApiError> {
    let task: WebhookJob = plateau_sdk::serde_json::from_str(&job.payload)
        .map_err(|e| ApiError::internal(format!("unreadable payload: {e}")))?;
    let bucket = store::org_bucket(org)?;
    let Some(sub) = bucket.get::<Subscriber>(&record::subscriber_key(&task.subscriber_id))? else {
        return Ok(());
    };
    let (Some(url), Some(sealed)) = (&sub.url, &sub.secret_sealed) else {
        return Ok(());
    };
    let secret = subscribers::open_secret(org, sealed)?;
    match webhooks::send(
        url,
        &secret,
        &task.message_id,
        &task.body,
        WEBHOOK_TIMEOUT_MS,
    ) {
        Ok(r) if r.is_success() => Ok(()),
        Ok(r) => Err(ApiError::unavailable(format!(
            "webhook answered {} on attempt {}",
            r.status, job.attempt
        ))),
        Err(e) => Err(ApiError::unavailable(format!(
            "webhook failed on attempt {}: {e}",
            job.attempt
        ))),
    }
}
