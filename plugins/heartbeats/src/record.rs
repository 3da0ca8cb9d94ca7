//! The stored heartbeat, its keys, its ids and ping tokens, and the shape
//! the API answers.
//!
//! Keys of an organisation's bucket:
//! - `hb/{id}`: the [`Heartbeat`];
//! - `ping/{id}/{n}`: its recent pings, `n` counting down so that key order
//!   is newest first.
//!
//! The plugin's global bucket maps `token/{sha256 of the ping token}` to
//! the organisation and id ([`TokenEntry`]): a ping carries no credential
//! but its token, and the index holds no usable token.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use plateau_sdk::{clock, ids};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use crate::schedule::{Schedule, ScheduleError};
use crate::state::{PingKind, Rules, State, Status};

/// How many pings a heartbeat keeps; older ones are dropped.
pub const PING_HISTORY: u64 = 100;

/// Bytes of randomness in a ping token (192 bits).
const TOKEN_BYTES: usize = 24;

/// A heartbeat as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Heartbeat {
    pub id: String,
    pub name: String,
    /// Set for a period schedule.
    pub period_seconds: Option<u64>,
    /// A cron expression, for a cron schedule.
    pub schedule: Option<String>,
    /// The IANA time zone of `schedule`.
    pub timezone: Option<String>,
    pub grace_seconds: u64,
    pub alert_emails: Vec<String>,
    pub webhook_url: Option<String>,
    /// The webhook secret sealed with the host's key, in base64.
    pub webhook_secret_sealed: Option<String>,
    /// The secret's last four characters, to tell secrets apart.
    pub webhook_secret_last4: Option<String>,
    pub alert_on_late: bool,
    #[serde(flatten)]
    pub status: Status,
    pub state_changed_at: u64,
    pub last_ping_at: Option<u64>,
    pub last_ping_kind: Option<PingKind>,
    pub last_duration_ms: Option<u64>,
    pub ping_token: String,
    /// Pings received so far; numbers the ping history.
    pub ping_count: u64,
    /// Alerts sent so far; numbers the alert jobs.
    pub alert_count: u64,
    pub created_at: u64,
    pub updated_at: u64,
}

impl Heartbeat {
    pub fn key(id: &str) -> String {
        format!("hb/{id}")
    }

    /// The schedule as stored; always valid, since it was validated.
    pub fn rules(&self) -> Result<Rules, ScheduleError> {
        let schedule = match (&self.schedule, self.period_seconds) {
            (Some(cron), _) => Schedule::cron(cron, self.timezone.as_deref().unwrap_or("UTC"))?,
            (None, Some(seconds)) => Schedule::period(seconds)?,
            (None, None) => Schedule::period(86_400)?,
        };
        Ok(Rules {
            schedule,
            grace_ms: self.grace_seconds * 1000,
        })
    }

    /// The API's view, with the ping URL under `base` (the API base URL).
    pub fn view(&self, base: &str) -> View {
        let rules = self.rules().ok();
        let rfc = |ms: Option<u64>| ms.map(clock::rfc3339);
        View {
            id: self.id.clone(),
            name: self.name.clone(),
            state: self.status.state,
            paused: self.status.state == State::Paused,
            period_seconds: self.period_seconds,
            schedule: self.schedule.clone(),
            timezone: self.timezone.clone(),
            grace_seconds: self.grace_seconds,
            alert_emails: self.alert_emails.clone(),
            webhook_url: self.webhook_url.clone(),
            webhook_secret: self
                .webhook_secret_last4
                .as_ref()
                .map(|last4| format!("whsec_…{last4}")),
            alert_on_late: self.alert_on_late,
            ping_url: ping_url(base, &self.ping_token),
            last_ping_at: rfc(self.last_ping_at),
            last_ping_kind: self.last_ping_kind,
            last_success_at: rfc(self.status.last_success_at),
            last_duration_ms: self.last_duration_ms,
            run_started_at: rfc(self.status.run_started_at),
            expected_at: rfc(rules.as_ref().and_then(|r| r.expected_at(&self.status))),
            down_at: rfc(rules.as_ref().and_then(|r| r.down_at(&self.status))),
            state_changed_at: clock::rfc3339(self.state_changed_at),
            created_at: clock::rfc3339(self.created_at),
            updated_at: clock::rfc3339(self.updated_at),
        }
    }
}

/// A heartbeat as the API answers it. `webhookSecret` is masked here; the
/// secret itself is answered once, by the calls that make it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct View {
    pub id: String,
    pub name: String,
    pub state: State,
    pub paused: bool,
    pub period_seconds: Option<u64>,
    pub schedule: Option<String>,
    pub timezone: Option<String>,
    pub grace_seconds: u64,
    pub alert_emails: Vec<String>,
    pub webhook_url: Option<String>,
    /// Masked (its last four characters), except in the answer of the call
    /// that made it; null without a webhook.
    pub webhook_secret: Option<String>,
    pub alert_on_late: bool,
    pub ping_url: String,
    pub last_ping_at: Option<String>,
    pub last_ping_kind: Option<PingKind>,
    pub last_success_at: Option<String>,
    pub last_duration_ms: Option<u64>,
    pub run_started_at: Option<String>,
    /// When the next success ping is due (up and late only).
    pub expected_at: Option<String>,
    /// When the heartbeat goes down without a ping (up and late only).
    pub down_at: Option<String>,
    pub state_changed_at: String,
    pub created_at: String,
    pub updated_at: String,
}

/// One received ping.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PingRecord {
    /// 1 for the heartbeat's first ping.
    pub n: u64,
    pub kind: PingKind,
    /// RFC 3339.
    pub at: String,
    /// GET or POST.
    pub method: String,
    /// The run's duration, on the success or fail ping that ends a run.
    pub duration_ms: Option<u64>,
    /// From `x-forwarded-for`, `x-real-ip` or `forwarded`, when sent.
    pub source_ip: Option<String>,
    pub user_agent: Option<String>,
    /// The state after the ping.
    pub state: State,
}

impl PingRecord {
    pub fn prefix(id: &str) -> String {
        format!("ping/{id}/")
    }

    /// Newest first in key order.
    pub fn key(id: &str, n: u64) -> String {
        format!("ping/{id}/{:016x}", u64::MAX - n)
    }
}

/// The global index entry of a ping token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenEntry {
    pub organization_id: String,
    pub heartbeat_id: String,
}

impl TokenEntry {
    pub fn key(token: &str) -> String {
        let digest = Sha256::digest(token.as_bytes());
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        format!("token/{hex}")
    }
}

/// `{base}/heartbeats/ping/{token}`.
pub fn ping_url(base: &str, token: &str) -> String {
    format!("{base}/heartbeats/ping/{token}")
}

/// A new ping token: 192 random bits, base64url without padding.
pub fn new_token() -> String {
    URL_SAFE_NO_PAD.encode(ids::random::<TOKEN_BYTES>())
}

/// Whether `token` has the shape of one [`new_token`] makes.
pub fn is_token_shaped(token: &str) -> bool {
    token.len() == TOKEN_BYTES * 4 / 3
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// A new heartbeat id: `hb_` and a ULID (creation time, then 80 random
/// bits), so ids sort by creation like the core's.
pub fn new_id(now_ms: u64) -> String {
    ids::new_id("hb", now_ms)
}

/// Whether `id` has the shape of one [`new_id`] makes.
pub fn is_id_shaped(id: &str) -> bool {
    ids::is_id(id, "hb")
}
