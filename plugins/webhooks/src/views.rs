//! What the routes answer, as types: the handlers serialize these, and the
//! router declares them, so the OpenAPI document shows the answers the
//! plugin really gives.

use std::collections::BTreeMap;

use plateau_sdk::clock;
use plateau_sdk::serde_json::Value;
use serde::Serialize;
use utoipa::ToSchema;

use crate::record::{Attempt, Delivery, Endpoint};

/// A webhook endpoint: never its secret, except once in the answer of the
/// call that made it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EndpointView {
    pub id: String,
    pub url: String,
    pub description: String,
    /// Event types, exact or ending in `*` (`app.*`, `*`).
    pub event_types: Vec<String>,
    /// Who hears by email that the endpoint was disabled.
    pub alert_emails: Vec<String>,
    /// `enabled` or `disabled`.
    pub status: String,
    pub disabled_reason: Option<String>,
    pub disabled_at: Option<String>,
    pub secret_created_at: Option<String>,
    /// Until when the previous secret still signs, after a rotation.
    pub previous_secret_expires_at: Option<String>,
    /// The `whsec_` signing secret, answered once by creation and rotation.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    pub updated_at: String,
}

impl From<&Endpoint> for EndpointView {
    fn from(e: &Endpoint) -> EndpointView {
        let now = clock::now_millis();
        let previous = e
            .secrets
            .get(1)
            .and_then(|s| s.expires_at)
            .filter(|at| *at > now);
        EndpointView {
            id: e.id.clone(),
            url: e.url.clone(),
            description: e.description.clone(),
            event_types: e.event_types.clone(),
            alert_emails: e.alert_emails.clone(),
            status: e.status.clone(),
            disabled_reason: e.disabled_reason.clone(),
            disabled_at: e.disabled_at.map(clock::rfc3339),
            secret_created_at: e.secrets.first().map(|s| clock::rfc3339(s.created_at)),
            previous_secret_expires_at: previous.map(clock::rfc3339),
            secret: None,
            created_at: clock::rfc3339(e.created_at),
            updated_at: clock::rfc3339(e.updated_at),
        }
    }
}

/// One message to one endpoint, with its attempts.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryView {
    /// The message id, sent as `webhook-id` on every attempt.
    pub id: String,
    pub endpoint_id: String,
    pub event_id: String,
    pub event_type: String,
    /// `pending`, `succeeded` or `failed`.
    pub status: String,
    /// Attempts so far, including those the log no longer keeps.
    pub attempts: u32,
    /// The last attempt's status code and latency.
    pub status_code: Option<u16>,
    pub latency_ms: Option<u64>,
    pub next_attempt_at: Option<String>,
    /// The JSON body sent.
    pub payload: Value,
    /// The latest attempts, newest first.
    pub attempt_log: Vec<AttemptView>,
    pub created_at: String,
    pub updated_at: String,
}

/// One attempt: what came back (the head and the first bytes of the body)
/// or why nothing did.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptView {
    pub number: u32,
    pub at: String,
    /// `event` or `replay`.
    pub trigger: String,
    pub status_code: Option<u16>,
    pub latency_ms: u64,
    pub error: Option<String>,
    pub response_headers: BTreeMap<String, String>,
    pub response_body: Option<String>,
}

impl From<&Attempt> for AttemptView {
    fn from(a: &Attempt) -> AttemptView {
        AttemptView {
            number: a.number,
            at: clock::rfc3339(a.at),
            trigger: a.trigger.clone(),
            status_code: a.status_code,
            latency_ms: a.latency_ms,
            error: a.error.clone(),
            response_headers: a.response_headers.iter().cloned().collect(),
            response_body: a.response_body.clone(),
        }
    }
}

impl From<&Delivery> for DeliveryView {
    fn from(d: &Delivery) -> DeliveryView {
        let last = d.log.first();
        DeliveryView {
            id: d.id.clone(),
            endpoint_id: d.endpoint_id.clone(),
            event_id: d.event_id.clone(),
            event_type: d.event_type.clone(),
            status: d.status.clone(),
            attempts: d.attempts,
            status_code: last.and_then(|a| a.status_code),
            latency_ms: last.map(|a| a.latency_ms),
            next_attempt_at: d.next_attempt_at.map(clock::rfc3339),
            payload: serde_json::from_str(&d.payload).unwrap_or(Value::Null),
            attempt_log: d.log.iter().map(AttemptView::from).collect(),
            created_at: clock::rfc3339(d.created_at),
            updated_at: clock::rfc3339(d.updated_at),
        }
    }
}

/// What a replay of failed deliveries started.
#[derive(Debug, Serialize, ToSchema)]
pub struct Replayed {
    /// Failed deliveries that start again.
    pub replayed: usize,
    /// Whether another call finds more.
    pub more: bool,
}
