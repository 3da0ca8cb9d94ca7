//! What the plugin stores, and under which keys.
//!
//! Organisation bucket:
//! - `page`: the [`Page`] (one per organisation);
//! - `c/{id}`: a [`Component`]; `src/{kind}/{sourceId}/{id}`: the index
//!   of components fed by a check or heartbeat;
//! - `d/{id}/{day}`: a component's [`DayTotals`] (day: days since the Unix
//!   epoch, five digits), kept 90 days;
//! - `i/{id}`: an [`Incident`] or maintenance with its updates;
//!   `h/{rev}/{id}`: newest first (`rev` is `u64::MAX - createdAt`, 20
//!   digits); `open/{id}`: those not resolved or completed;
//! - `s/{id}`: a [`Subscriber`]; `st/{token}`: its id by the token of its
//!   links; `se/{email}`, `sw/{url}`: one subscriber per address;
//! - `cache/{what}`: a rendered public answer, dropped by every write.
//!
//! Global bucket: `slug/{slug}`: the organisation a public URL names.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Milliseconds in a day.
pub const DAY_MS: u64 = 86_400_000;
/// How many days of uptime the page shows.
pub const UPTIME_DAYS: u64 = 90;
/// The updates one incident keeps.
pub const MAX_UPDATES: usize = 50;

pub const PAGE: &str = "page";
pub const COMPONENTS: &str = "c/";
pub const INCIDENTS: &str = "i/";
pub const HISTORY: &str = "h/";
pub const OPEN: &str = "open/";
pub const SUBSCRIBERS: &str = "s/";
pub const CACHE: &str = "cache/";

/// A component's status, Atlassian Statuspage's names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ComponentStatus {
    Operational,
    UnderMaintenance,
    DegradedPerformance,
    PartialOutage,
    MajorOutage,
}

impl ComponentStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            ComponentStatus::Operational => "operational",
            ComponentStatus::UnderMaintenance => "under_maintenance",
            ComponentStatus::DegradedPerformance => "degraded_performance",
            ComponentStatus::PartialOutage => "partial_outage",
            ComponentStatus::MajorOutage => "major_outage",
        }
    }

    /// What a visitor reads.
    pub fn label(self) -> &'static str {
        match self {
            ComponentStatus::Operational => "Operational",
            ComponentStatus::UnderMaintenance => "Under maintenance",
            ComponentStatus::DegradedPerformance => "Degraded performance",
            ComponentStatus::PartialOutage => "Partial outage",
            ComponentStatus::MajorOutage => "Major outage",
        }
    }
}

/// Where a component's status comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    Check,
    Heartbeat,
}

impl SourceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Check => "check",
            SourceKind::Heartbeat => "heartbeat",
        }
    }
}

/// A check or heartbeat that sets a component's status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Source {
    pub kind: SourceKind,
    /// The check's or heartbeat's id.
    pub id: String,
}

/// The organisation's page.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Page {
    pub id: String,
    pub name: String,
    pub slug: String,
    pub description: String,
    pub homepage_url: Option<String>,
    /// The API base URL (`…/api/v1`) as of the last change of the page:
    /// the links of emails and webhooks, which have no request to ask.
    #[serde(default)]
    pub base_url: String,
    /// The organisation's plan as of the last change of the page: the
    /// limit of public subscriptions, which have no caller.
    #[serde(default)]
    pub plan: String,
    pub created_at: u64,
    pub updated_at: u64,
}

/// A component of the page.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Component {
    pub id: String,
    pub name: String,
    pub description: String,
    pub position: u32,
    pub source: Option<Source>,
    pub status: ComponentStatus,
    pub status_since: u64,
    pub created_at: u64,
    pub updated_at: u64,
}

/// A component's time in each status other than operational, one day.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DayTotals {
    #[serde(default)]
    pub major_ms: u64,
    #[serde(default)]
    pub partial_ms: u64,
    #[serde(default)]
    pub degraded_ms: u64,
    #[serde(default)]
    pub maintenance_ms: u64,
}

/// An incident, or scheduled maintenance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum IncidentKind {
    Incident,
    Maintenance,
}

/// One update of an incident.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Update {
    pub id: String,
    /// The incident's status as of this update.
    pub status: String,
    pub body: String,
    /// RFC 3339.
    pub created_at: String,
    /// The components' statuses this update set.
    pub affected_components: Vec<Affected>,
}

/// A component's status set by an incident update.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Affected {
    pub id: String,
    pub status: ComponentStatus,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Incident {
    pub id: String,
    pub kind: IncidentKind,
    pub name: String,
    /// investigating, identified, monitoring, resolved; or, for
    /// maintenance, scheduled, in_progress, verifying, completed.
    pub status: String,
    /// none, minor, major or critical.
    pub impact: String,
    pub component_ids: Vec<String>,
    pub scheduled_for: Option<u64>,
    pub scheduled_until: Option<u64>,
    pub created_at: u64,
    pub updated_at: u64,
    pub resolved_at: Option<u64>,
    /// Newest first.
    pub updates: Vec<Update>,
}

impl Incident {
    pub fn is_open(&self) -> bool {
        !matches!(self.status.as_str(), "resolved" | "completed")
    }
}

/// A subscriber: an email address (confirmed through a link) or a webhook.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Subscriber {
    pub id: String,
    pub email: Option<String>,
    pub url: Option<String>,
    /// The webhook's signing secret, sealed (base64).
    pub secret_sealed: Option<String>,
    /// The credential of the confirm and unsubscribe links.
    pub token: String,
    pub confirmed: bool,
    pub created_at: u64,
    pub confirmed_at: Option<u64>,
    /// When the last confirmation email was asked for.
    pub asked_at: u64,
}

/// What the global `slug/{slug}` entry says.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SlugEntry {
    pub organization_id: String,
}

pub fn component_key(id: &str) -> String {
    format!("c/{id}")
}

pub fn source_key(source: &Source, component: &str) -> String {
    format!("src/{}/{}/{component}", source.kind.as_str(), source.id)
}

pub fn source_prefix(kind: SourceKind, id: &str) -> String {
    format!("src/{}/{id}/", kind.as_str())
}

pub fn day_key(component: &str, day: u64) -> String {
    format!("d/{component}/{day:05}")
}

pub fn day_prefix(component: &str) -> String {
    format!("d/{component}/")
}

pub fn incident_key(id: &str) -> String {
    format!("i/{id}")
}

pub fn history_key(created_at: u64, id: &str) -> String {
    format!("h/{:020}/{id}", u64::MAX - created_at)
}

pub fn open_key(id: &str) -> String {
    format!("open/{id}")
}

pub fn subscriber_key(id: &str) -> String {
    format!("s/{id}")
}

pub fn token_key(token: &str) -> String {
    format!("st/{token}")
}

pub fn email_key(email: &str) -> String {
    format!("se/{}", email.to_ascii_lowercase())
}

pub fn url_key(url: &str) -> String {
    format!("sw/{url}")
}

pub fn slug_key(slug: &str) -> String {
    format!("slug/{slug}")
}

/// Components a page may have on `plan`.
pub fn component_limit(plan: &str) -> u64 {
    if plan == "free" { 10 } else { 100 }
}

/// Subscribers a page may have on `plan`, pending ones included.
pub fn subscriber_limit(plan: &str) -> u64 {
    if plan == "free" { 100 } else { 5_000 }
}
