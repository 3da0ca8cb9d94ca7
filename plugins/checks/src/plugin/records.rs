//! What the plugin stores, under which keys, and how a check is shown.
//!
//! In the organisation's bucket:
//! - `check:{id}`: a [`CheckRecord`], the configuration and the state
//!   together, so a run reads one key and commits its change with one
//!   compare-and-swap;
//! - `result:{id}:{slot}`: the last [`KEEP_RESULTS`] [`RunResult`]s, a ring
//!   indexed by run number;
//! - `alert:{id}:{slot}`: the last [`KEEP_ALERTS`] [`AlertRecord`]s.
//!
//! In the global bucket, `ping:{sha256 of token}` finds a heartbeat's
//! organisation and check from its public ping URL.

use plateau_sdk::serde_json::Value;
use plateau_sdk::{ApiError, Bucket, Request, config};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::health::{Health, Status};
use crate::spec::Spec;
use crate::verdict::{Failure, Outcome};

/// Results kept per check.
pub const KEEP_RESULTS: u64 = 100;
/// Alerts kept per check.
pub const KEEP_ALERTS: u64 = 50;

/// A check: its configuration, its state, and bookkeeping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckRecord {
    pub id: String,
    pub spec: Spec,
    #[serde(default)]
    pub health: Health,
    /// Runs recorded so far; the last one's number.
    #[serde(default)]
    pub runs: u64,
    /// Alerts raised so far.
    #[serde(default)]
    pub alerts_raised: u64,
    #[serde(default)]
    pub last_result: Option<RunResult>,
    /// Heartbeats only: the secret part of the ping URL.
    #[serde(default)]
    pub ping_token: Option<String>,
    #[serde(default)]
    pub last_ping_at: Option<u64>,
    /// The webhook secret sealed by the host, in base64; never shown.
    #[serde(default)]
    pub webhook_secret: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
}

/// What started a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Trigger {
    /// The check's schedule.
    Schedule,
    /// `POST /checks/{id}/run`.
    Manual,
    /// A heartbeat's ping.
    Ping,
}

/// One run, as stored and as listed by `GET /checks/{id}/results`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    pub id: String,
    pub check_id: String,
    /// The run's number, from 1.
    pub run: u64,
    pub trigger: Trigger,
    pub started_at: String,
    /// For a scheduled run, when it was due (its lateness is the difference).
    pub scheduled_for: Option<String>,
    pub outcome: Outcome,
    /// The check's status after this run.
    pub status: Option<Status>,
    pub status_code: Option<u16>,
    /// Time to the whole response.
    pub latency_ms: Option<u32>,
    /// Time to an established connection (TCP and TLS).
    pub connect_ms: Option<u32>,
    /// Why the run is degraded or failed.
    pub message: Option<String>,
    pub failure: Option<Failure>,
}

/// Where a webhook alert stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    /// Not delivered yet; another attempt is scheduled.
    Pending,
    Delivered,
    /// Every attempt failed.
    Failed,
    /// The webhook was removed from the check before delivery.
    Cancelled,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookAttempts {
    pub url: String,
    pub state: Delivery,
    pub attempts: u32,
    pub last_status_code: Option<u16>,
    pub last_error: Option<String>,
    pub delivered_at: Option<String>,
    pub next_attempt_at: Option<String>,
}

/// One alert: a change of state, who was told and how the webhook went.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AlertRecord {
    /// Also the webhook's `webhook-id`, the same on every attempt.
    pub id: String,
    pub check_id: String,
    /// The alert's number for its check, from 1.
    pub number: u64,
    /// `check.down`, `check.degraded` or `check.up`.
    #[serde(rename = "type")]
    pub event_type: String,
    pub status: Status,
    pub previous_status: Option<Status>,
    pub created_at: String,
    /// Recipients of the email asked of the relay.
    pub emails: Vec<String>,
    pub webhook: Option<WebhookAttempts>,
    /// The webhook body.
    pub payload: Value,
}

/// The ping index entry of a heartbeat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PingTarget {
    pub organization_id: String,
    pub check_id: String,
}

pub fn check_key(id: &str) -> String {
    format!("check:{id}")
}

pub fn result_prefix(id: &str) -> String {
    format!("result:{id}:")
}

pub fn result_key(id: &str, run: u64) -> String {
    format!("result:{id}:{:03}", run % KEEP_RESULTS)
}

pub fn alert_prefix(id: &str) -> String {
    format!("alert:{id}:")
}

pub fn alert_key(id: &str, number: u64) -> String {
    format!("alert:{id}:{:02}", number % KEEP_ALERTS)
}

pub fn ping_key(digest: &str) -> String {
    format!("ping:{digest}")
}

/// The job that runs check `id`.
pub fn check_job(id: &str) -> String {
    format!("check:{id}")
}

/// The job that delivers alert `id`'s webhook.
pub fn alert_job(id: &str) -> String {
    format!("alert:{id}")
}

/// A stored check and its bytes (the expectation of a compare-and-swap).
pub fn load(bucket: &Bucket, id: &str) -> Result<Option<(Vec<u8>, CheckRecord)>, ApiError> {
    if !crate::ids::is_well_formed(id, "chk") {
        return Ok(None);
    }
    let key = check_key(id);
    let Some(raw) = bucket.get_raw(&key)? else {
        return Ok(None);
    };
    let record = plateau_sdk::serde_json::from_slice(&raw)
        .map_err(|e| ApiError::internal(format!("check {id} is stored unreadably: {e}")))?;
    Ok(Some((raw, record)))
}

/// [`load`], or 404.
pub fn find(bucket: &Bucket, id: &str) -> Result<(Vec<u8>, CheckRecord), ApiError> {
    load(bucket, id)?.ok_or_else(|| not_found(id))
}

pub fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("check {id} does not exist: check the id"))
}

pub fn encode(record: &CheckRecord) -> Result<Vec<u8>, ApiError> {
    plateau_sdk::serde_json::to_vec(record)
        .map_err(|e| ApiError::internal(format!("a check does not serialize: {e}")))
}

/// Where the API is reached from outside, for ping URLs: the operator's
/// `publicUrl` setting, else the request's (forwarded) host.
pub fn api_base(req: &Request) -> String {
    if let Some(url) = config::get("publicUrl") {
        return format!("{}/api/v1", url.trim_end_matches('/'));
    }
    let host = req
        .header("x-forwarded-host")
        .or_else(|| req.header("host"))
        .map(|h| h.split(',').next().unwrap_or("").trim().to_owned())
        .filter(|h| !h.is_empty() && !h.contains(['/', ' ']));
    let proto = req
        .header("x-forwarded-proto")
        .filter(|p| *p == "https" || *p == "http")
        .unwrap_or("http");
    match host {
        Some(host) => format!("{proto}://{host}/api/v1"),
        None => "/api/v1".to_owned(),
    }
}
