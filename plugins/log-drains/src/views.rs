//! What the routes answer, as types: the handlers serialize these, and the
//! router declares them, so the OpenAPI document shows the answers the
//! plugin really gives.

use plateau_sdk::clock;
use serde::Serialize;
use utoipa::ToSchema;

use crate::record::{DeliveryState, Drain};

/// A log drain with its delivery status.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DrainView {
    pub id: String,
    pub name: String,
    pub url: String,
    /// `https` or `syslog`.
    pub kind: Option<String>,
    pub sources: Vec<String>,
    /// App ids; empty: every app of the organisation.
    pub apps: Vec<String>,
    pub min_level: String,
    pub enabled: bool,
    /// Whether batches carry a signature (HTTPS drains).
    pub signed: bool,
    /// The signing secret, answered once by the call that made it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    pub delivery: Delivery,
    /// RFC 3339.
    pub created_at: String,
    pub updated_at: String,
}

/// How a drain's deliveries go.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// `disabled`, `failing`, `pending` (nothing delivered yet) or `healthy`.
    pub status: String,
    /// Lines forwarded and acknowledged.
    pub delivered: u64,
    pub batches: u64,
    /// Lines waiting in the buffer.
    pub buffered: usize,
    /// Lines dropped because the buffer was full.
    pub dropped: u64,
    /// Failed attempts since the last success.
    pub failures: u32,
    pub last_attempt_at: Option<String>,
    pub last_success_at: Option<String>,
    pub last_status_code: Option<u16>,
    pub last_latency_ms: Option<u64>,
    pub last_error: Option<String>,
    /// No attempt before this time (the backoff after failures).
    pub next_attempt_at: Option<String>,
}

fn status(drain: &Drain, state: &DeliveryState) -> &'static str {
    if !drain.enabled {
        "disabled"
    } else if state.failures > 0 {
        "failing"
    } else if state.last_success_at.is_none() {
        "pending"
    } else {
        "healthy"
    }
}

impl DrainView {
    /// The drain as answered, with its delivery `state`.
    pub fn new(drain: &Drain, state: &DeliveryState) -> DrainView {
        let rfc = |ms: Option<u64>| ms.map(clock::rfc3339);
        DrainView {
            id: drain.id.clone(),
            name: drain.name.clone(),
            url: drain.url.clone(),
            kind: crate::input::parse_url(&drain.url).map(|d| d.kind().to_owned()),
            sources: drain.sources.clone(),
            apps: drain.apps.clone(),
            min_level: drain.min_level.clone(),
            enabled: drain.enabled,
            signed: drain.secret.is_some(),
            secret: None,
            delivery: Delivery {
                status: status(drain, state).to_owned(),
                delivered: state.delivered,
                batches: state.batches,
                buffered: state.buffer.len(),
                dropped: state.dropped,
                failures: state.failures,
                last_attempt_at: rfc(state.last_attempt_at),
                last_success_at: rfc(state.last_success_at),
                last_status_code: state.last_status_code,
                last_latency_ms: state.last_latency_ms,
                last_error: state.last_error.clone(),
                next_attempt_at: rfc(state.next_attempt_at),
            },
            created_at: clock::rfc3339(drain.created_at),
            updated_at: clock::rfc3339(drain.updated_at),
        }
    }
}
