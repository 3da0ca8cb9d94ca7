//! Stored shapes and their keys. Everything an organisation sends lives in
//! its own bucket, under its project and the UTC day it arrived, so
//! retention deletes whole days and queries read the newest days first:
//!
//! | Key | Value |
//! |---|---|
//! | `days/{project}/{day}` | a marker: the project has data that day |
//! | `s/{project}/{day}/{chunk}` | up to [`CHUNK_BYTES`] of [`SpanRec`]s |
//! | `t/{project}/{day}/{traceId}/{chunk}` | the chunk holds spans of the trace |
//! | `l/{project}/{day}/{chunk}` | [`LogRec`]s |
//! | `lt/{project}/{day}/{traceId}/{chunk}` | the chunk holds logs of the trace |
//! | `m/{project}/{name}/{series}` | a metric series ([`SeriesRec`]) |
//! | `mp/{project}/{day}/{name}/{series}/{newest-first}` | one [`PointRec`] |
//! | `k/{tokenId}` | an ingest token ([`TokenRec`], its hash only) |
//! | `plan` | the organisation's plan, as last seen ([`PlanRec`]) |
//!
//! A chunk name starts with the receive time inverted (13 digits), so a
//! prefix list reads newest first. The global bucket maps
//! `tok/{sha256 of the token}` to its [`TokenEntry`].

use std::collections::BTreeMap;

use plateau_sdk::serde_json::Value;
use serde::{Deserialize, Serialize};

/// A chunk's serialized size above which the next record starts a new one
/// (a stored value is at most 1 MiB).
pub const CHUNK_BYTES: usize = 512 * 1024;
/// Milliseconds in a day.
pub const DAY_MS: u64 = 86_400_000;

/// Days since the epoch of `ms`, zero-padded so they sort.
pub fn day(ms: u64) -> String {
    format!("{:05}", ms / DAY_MS)
}

/// `ms` inverted, so later times sort first.
pub fn newest_first(ms: u64) -> String {
    format!("{:013}", 9_999_999_999_999u64.saturating_sub(ms))
}

/// A chunk name: the receive time inverted and random hex, unique per
/// request.
pub fn chunk_name(now: u64, n: usize) -> String {
    let salt = plateau_sdk::ids::random_u64() & 0xffff_ffff;
    format!("{}{salt:08x}{n:03}", newest_first(now))
}

/// A metric name as a key segment: `/` and `%` escaped.
pub fn name_segment(name: &str) -> String {
    name.replace('%', "%25").replace('/', "%2F")
}

pub fn days_prefix(project: &str) -> String {
    format!("days/{project}/")
}

pub fn day_key(project: &str, day: &str) -> String {
    format!("days/{project}/{day}")
}

/// The kinds of keys kept per day, which retention deletes together.
pub const DAILY_KINDS: [&str; 5] = ["s", "t", "l", "lt", "mp"];

pub fn daily_prefix(kind: &str, project: &str, day: &str) -> String {
    format!("{kind}/{project}/{day}/")
}

pub fn series_prefix(project: &str, name: Option<&str>) -> String {
    match name {
        Some(name) => format!("m/{project}/{}/", name_segment(name)),
        None => format!("m/{project}/"),
    }
}

pub fn points_prefix(project: &str, day: &str, name: &str, series: &str) -> String {
    format!("mp/{project}/{day}/{}/{series}/", name_segment(name))
}

pub fn token_key(id: &str) -> String {
    format!("k/{id}")
}

pub const TOKENS: &str = "k/";
pub const PLAN: &str = "plan";

pub fn token_entry_key(hash: &str) -> String {
    format!("tok/{hash}")
}

/// Attributes as JSON values (see [`crate::convert`]).
pub type Attributes = BTreeMap<String, Value>;

/// One span as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpanRec {
    pub trace_id: String,
    pub span_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub parent_span_id: String,
    pub name: String,
    pub kind: String,
    pub service: String,
    pub start: u64,
    pub end: u64,
    pub status_code: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub status_message: String,
    pub attributes: Attributes,
    pub resource: Attributes,
    pub scope: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<Value>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Value>,
}

/// One log record as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogRec {
    pub time: u64,
    pub severity_number: i32,
    pub severity_text: String,
    pub body: Value,
    pub service: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub trace_id: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub span_id: String,
    pub attributes: Attributes,
    pub resource: Attributes,
    pub scope: String,
}

/// A metric series: one metric name and one set of attributes of one
/// service.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeriesRec {
    pub id: String,
    pub name: String,
    /// `gauge`, `sum`, `histogram`, `exponentialHistogram` or `summary`.
    pub kind: String,
    pub unit: String,
    pub description: String,
    pub service: String,
    pub attributes: Attributes,
    pub resource: Attributes,
    pub last_seen: u64,
}

/// One data point: `value` for gauges and sums, the distribution's
/// fields for the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PointRec {
    pub start: u64,
    pub time: u64,
    pub value: Value,
}

/// An ingest token, as its organisation lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenRec {
    pub id: String,
    pub name: String,
    pub project_id: String,
    /// The first characters of the token, to recognise it.
    pub prefix: String,
    pub hash: String,
    pub created_at: u64,
}

/// What the global bucket knows of a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenEntry {
    pub organization_id: String,
    pub project_id: String,
    pub token_id: String,
}

/// The organisation's plan as last seen by the plugin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanRec {
    pub plan: String,
}

/// The days of data kept per plan; free when unknown.
pub fn retention_days(plan: &str) -> u64 {
    match plan {
        "starter" => 7,
        "pro" => 15,
        "scale" => 30,
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn later_times_sort_first_and_days_sort() {
        assert!(newest_first(2_000) < newest_first(1_000));
        assert!(day(DAY_MS * 9) < day(DAY_MS * 10));
        assert_eq!(day(DAY_MS * 20_000 + 5), "20000");
    }

    #[test]
    fn metric_names_with_slashes_stay_one_segment() {
        assert_eq!(name_segment("http/server%x"), "http%2Fserver%25x");
        assert_eq!(series_prefix("p", Some("a/b")), "m/p/a%2Fb/");
    }
}
