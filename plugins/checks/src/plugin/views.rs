//! What the routes answer, as types: the handlers serialize these, and the
//! router declares them, so the OpenAPI document shows the answers the
//! plugin really gives.

use plateau_sdk::clock;
use serde::Serialize;
use utoipa::ToSchema;

use super::records::{CheckRecord, RunResult};
use crate::health::Status;
use crate::spec::{Kind, Spec};

/// A check: its configuration (as it would be sent again), its state, and
/// for a heartbeat its ping URL. `alerts.webhookSecret` is there only in
/// the answer of the call that issued the secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckView {
    #[serde(flatten)]
    pub spec: Spec,
    pub id: String,
    /// None before the first run.
    pub status: Option<Status>,
    pub status_since: Option<String>,
    pub consecutive_failures: u32,
    /// Runs recorded so far.
    pub runs: u64,
    pub last_run_at: Option<String>,
    pub last_result: Option<RunResult>,
    /// A heartbeat's ping URL: the URL is its secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub ping_url: Option<Option<String>>,
    /// A heartbeat's last ping.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub last_ping_at: Option<Option<String>>,
    /// RFC 3339.
    pub created_at: String,
    pub updated_at: String,
}

impl CheckView {
    /// `record` as answered; `base` starts ping URLs, `secret` is a webhook
    /// secret issued by this request.
    pub fn new(record: &CheckRecord, base: &str, secret: Option<&str>) -> CheckView {
        let mut spec = record.spec.clone();
        spec.alerts.webhook_secret = secret.map(str::to_owned);
        let heartbeat = record.spec.kind == Kind::Heartbeat;
        CheckView {
            spec,
            id: record.id.clone(),
            status: record.health.status,
            status_since: record.health.status_since.map(clock::rfc3339),
            consecutive_failures: record.health.consecutive_failures,
            runs: record.runs,
            last_run_at: record.last_result.as_ref().map(|r| r.started_at.clone()),
            last_result: record.last_result.clone(),
            ping_url: heartbeat.then(|| {
                record
                    .ping_token
                    .as_ref()
                    .map(|token| format!("{base}/checks/ping/{token}"))
            }),
            last_ping_at: heartbeat.then(|| record.last_ping_at.map(clock::rfc3339)),
            created_at: clock::rfc3339(record.created_at),
            updated_at: clock::rfc3339(record.updated_at),
        }
    }
}

/// A ping's answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct Pinged {
    pub ok: bool,
    /// Whether the ping was recorded (false for a disabled check).
    pub recorded: bool,
}
