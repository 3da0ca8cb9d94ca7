//! The stored shapes and their keys, in the caller organisation's bucket.
//!
//! | Key | Value |
//! |---|---|
//! | `r/{id}` | the [`Run`], with its current step |
//! | `s/{id}/{seq:05}` | a finished step: [`StepRecord`] |
//! | `x/{readyAt:015}/{id}` | the ready index: the run's workflow name |
//! | `k/{idempotencyKey}` | the id of the run started with that key |
//! | `ls/{status}/{id}`, `lw/{workflow}/{id}`, `lws/{workflow}/{status}/{id}` | list filters |
//!
//! The ready index sorts the active runs by the time their current step
//! can next be claimed: now for a new step, the lease's end for a claimed
//! one, the backoff's end for a failed attempt, the wake time for a
//! sleeping run. A claim reads only the head of it.
//!
//! **Architecture Invariant:** a run and its index entries change together,
//! in the compare-and-swap on the run: each index key is derived from the
//! very version the swap replaces, so an index never points at a version
//! that is gone.

use plateau_sdk::ids;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

/// A run's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Running,
    Sleeping,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub const ALL: [Status; 5] = [
        Status::Running,
        Status::Sleeping,
        Status::Completed,
        Status::Failed,
        Status::Cancelled,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Status::Running => "running",
            Status::Sleeping => "sleeping",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub fn parse(s: &str) -> Option<Status> {
        Status::ALL.into_iter().find(|st| st.as_str() == s)
    }

    /// Whether the run still has a step to run.
    pub fn is_active(self) -> bool {
        matches!(self, Status::Running | Status::Sleeping)
    }
}

/// A failed attempt of a step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AttemptError {
    pub attempt: u32,
    pub error: String,
    /// Milliseconds since the Unix epoch.
    pub at: u64,
}

/// A claim of the current step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    pub token: String,
    pub expires_at: u64,
}

/// The step a run is at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Current {
    /// Its position in the run, from 0.
    pub seq: u32,
    pub name: String,
    /// Claims so far (each claim is an attempt).
    pub attempt: u32,
    /// When it can next be claimed: its ready index position.
    pub ready_at: u64,
    pub lease: Option<Lease>,
    /// The end of the sleep that precedes it.
    pub wake_at: Option<u64>,
    pub first_claimed_at: Option<u64>,
    pub errors: Vec<AttemptError>,
}

/// A run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub id: String,
    pub workflow: String,
    pub input: Value,
    pub status: Status,
    /// Attempts each step gets.
    pub max_attempts: u32,
    pub idempotency_key: Option<String>,
    /// Milliseconds since the Unix epoch.
    pub created_at: u64,
    pub updated_at: u64,
    pub finished_at: Option<u64>,
    /// The step to run next; `None` once the run is finished.
    pub step: Option<Current>,
    /// The output of the last completed step, handed to the next claim.
    pub last_output: Value,
    /// The run's result, once completed.
    pub output: Option<Value>,
    /// Why it failed or was cancelled.
    pub error: Option<String>,
}

impl Run {
    pub fn key(id: &str) -> String {
        format!("r/{id}")
    }

    /// Its ready index key, while it has a step to run.
    pub fn ready_key(&self) -> Option<String> {
        match &self.step {
            Some(step) if self.status.is_active() => Some(ready_key(step.ready_at, &self.id)),
            _ => None,
        }
    }

    /// Its list filter keys.
    pub fn filter_keys(&self) -> [String; 2] {
        let status = self.status.as_str();
        [
            format!("ls/{status}/{}", self.id),
            format!("lws/{}/{status}/{}", self.workflow, self.id),
        ]
    }

    pub fn workflow_key(&self) -> String {
        format!("lw/{}/{}", self.workflow, self.id)
    }
}

pub fn ready_key(ready_at: u64, id: &str) -> String {
    format!("x/{ready_at:015}/{id}")
}

pub const READY_PREFIX: &str = "x/";

/// Reads `(readyAt, id)` back from a ready index key.
pub fn parse_ready_key(key: &str) -> Option<(u64, &str)> {
    let rest = key.strip_prefix(READY_PREFIX)?;
    let (at, id) = rest.split_once('/')?;
    Some((at.parse().ok()?, id))
}

/// The prefix a list with these filters reads.
pub fn list_prefix(workflow: Option<&str>, status: Option<Status>) -> String {
    match (workflow, status) {
        (None, None) => "r/".to_owned(),
        (Some(w), None) => format!("lw/{w}/"),
        (None, Some(s)) => format!("ls/{}/", s.as_str()),
        (Some(w), Some(s)) => format!("lws/{w}/{}/", s.as_str()),
    }
}

pub fn idempotency_key(key: &str) -> String {
    format!("k/{key}")
}

/// How a finished step ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    Completed,
    /// It asked for a sleep; the next step waits for it.
    Slept,
    Failed,
    Cancelled,
}

/// A finished step, as its history keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StepRecord {
    pub seq: u32,
    pub name: String,
    pub status: StepStatus,
    pub attempts: u32,
    pub output: Option<Value>,
    pub errors: Vec<AttemptError>,
    pub started_at: Option<u64>,
    pub finished_at: u64,
    /// The end of the sleep it asked for.
    pub wake_at: Option<u64>,
}

impl StepRecord {
    pub fn key(id: &str, seq: u32) -> String {
        format!("s/{id}/{seq:05}")
    }

    pub fn prefix(id: &str) -> String {
        format!("s/{id}/")
    }

    /// The record of `step` ending now with `status`.
    pub fn of(step: &Current, status: StepStatus, output: Option<Value>, now: u64) -> StepRecord {
        StepRecord {
            seq: step.seq,
            name: step.name.clone(),
            status,
            attempts: step.attempt,
            output,
            errors: step.errors.clone(),
            started_at: step.first_claimed_at,
            finished_at: now,
            wake_at: None,
        }
    }
}

/// A fresh lease token of 128 random bits.
pub fn new_token() -> String {
    ids::token()
}

/// A new run id: `run_` and a ULID (start time, then 80 random bits).
pub fn new_run_id(now_ms: u64) -> String {
    ids::new_id("run", now_ms)
}

pub fn is_run_id(id: &str) -> bool {
    ids::is_id(id, "run")
}

pub use ids::{random_below, random_u64};
