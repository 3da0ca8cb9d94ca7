//! Stored shapes and their keys.
//!
//! Organisation bucket:
//! - `p/{project}`: a [`Project`] (its id is the DSN's numeric project id);
//! - `i/{project}/{issue}`: an [`Issue`] (its id is the grouping hash);
//! - `e/{project}/{issue}/{n}`: the issue's `n`th event (zero-padded), the
//!   last [`EVENTS_KEPT`] kept;
//! - `u/{project}/{issue}/{user}`: a user the issue affected (a hash);
//! - `c/{project}/{day}`: events accepted that day (a counter).
//!
//! Global bucket: `dsn/{project}`, a [`DsnEntry`], how the public ingest
//! routes find the organisation of a project id.

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// Events kept per issue, the newest.
pub const EVENTS_KEPT: u64 = 20;

pub const PROJECTS: &str = "p/";

/// An error tracking project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    /// Digits, as Sentry SDKs require of a DSN's project id.
    pub id: String,
    pub name: String,
    /// The platform project it was made in.
    pub platform_project_id: Option<String>,
    /// The DSN's public key.
    pub public_key: String,
    pub alert_emails: Vec<String>,
    /// The organisation's plan when the project was made or last changed:
    /// the public ingest routes have no caller to read it from.
    pub plan: String,
    pub created_at: u64,
    pub updated_at: u64,
}

/// Where the ingest routes find a project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DsnEntry {
    pub organization_id: String,
    pub public_key: String,
}

/// An issue: the events of one grouping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Issue {
    pub id: String,
    pub project_id: String,
    pub title: String,
    pub culprit: Option<String>,
    pub level: String,
    pub platform: Option<String>,
    /// How its events are grouped (`fingerprint`, `in-app frames`,
    /// `exception`, `message`).
    pub grouping: String,
    /// `unresolved`, `resolved` or `ignored`.
    pub status: String,
    pub count: u64,
    pub user_count: u64,
    pub first_seen: u64,
    pub last_seen: u64,
    pub resolved_at: Option<u64>,
    pub regressed_at: Option<u64>,
    pub times_regressed: u64,
    pub latest_event_id: String,
}

pub fn project_key(id: &str) -> String {
    format!("p/{id}")
}

pub fn dsn_key(id: &str) -> String {
    format!("dsn/{id}")
}

pub fn issues_prefix(project: &str) -> String {
    format!("i/{project}/")
}

pub fn issue_key(project: &str, issue: &str) -> String {
    format!("i/{project}/{issue}")
}

pub fn events_prefix(project: &str, issue: &str) -> String {
    format!("e/{project}/{issue}/")
}

pub fn event_key(project: &str, issue: &str, n: u64) -> String {
    format!("e/{project}/{issue}/{n:012}")
}

pub fn user_key(project: &str, issue: &str, user: &str) -> String {
    let digest = Sha256::digest(user.as_bytes());
    format!("u/{project}/{issue}/{}", hex::encode(&digest[..12]))
}

pub fn day_counter_key(project: &str, day: u64) -> String {
    format!("c/{project}/{day}")
}

/// Every key prefix of a project's data, for its deletion.
pub fn project_prefixes(project: &str) -> [String; 4] {
    ["i", "e", "u", "c"].map(|p| format!("{p}/{project}/"))
}

/// Project ids are 1 to 18 digits without a leading zero.
pub fn is_project_id(id: &str) -> bool {
    (1..=18).contains(&id.len()) && !id.starts_with('0') && id.bytes().all(|b| b.is_ascii_digit())
}

/// Issue ids are 32 lowercase hex digits.
pub fn is_issue_id(id: &str) -> bool {
    id.len() == 32 && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A new project id: 9 random digits, the first not zero.
pub fn new_project_id() -> String {
    let n = plateau_sdk::ids::random_u64() % 900_000_000 + 100_000_000;
    n.to_string()
}

/// A new DSN public key: 32 random hex digits, as Sentry's.
pub fn new_public_key() -> String {
    hex::encode(plateau_sdk::ids::random::<16>())
}

/// Projects per organisation, per plan.
pub fn project_limit(plan: &str) -> u64 {
    match plan {
        "starter" => 10,
        "pro" => 50,
        "scale" => 200,
        _ => 3,
    }
}

/// Events accepted per project and UTC day, per plan.
pub fn daily_event_limit(plan: &str) -> u64 {
    match plan {
        "starter" => 50_000,
        "pro" => 500_000,
        "scale" => 5_000_000,
        _ => 10_000,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_keys() {
        for _ in 0..50 {
            assert!(is_project_id(&new_project_id()));
        }
        assert!(!is_project_id("0123"));
        assert!(!is_project_id("12a"));
        assert!(!is_project_id(""));
        assert!(is_issue_id(&"ab".repeat(16)));
        assert!(!is_issue_id(&"AB".repeat(16)));
        assert_eq!(new_public_key().len(), 32);
        assert_eq!(event_key("1", "f", 7), "e/1/f/000000000007");
        assert!(user_key("1", "f", "id:u1").starts_with("u/1/f/"));
        assert_ne!(user_key("1", "f", "id:u1"), user_key("1", "f", "id:u2"));
    }
}
