//! The stored shapes and their keys, in the caller organisation's bucket.
//!
//! | Key | Value |
//! |---|---|
//! | `j/{id}` | a [`CronJob`] |
//! | `d/{due}/{id}` | the due index: an http job's record, the same bytes as `j/{id}`, under the time it is next due (13 digits of milliseconds) |
//! | `r/{id}/{inverted run number}` | a [`Run`], newest first in key order |
//! | `n/{id}` | jobs stored before `lastRun` existed: a counter of their runs |
//!
//! Durable jobs: `due:{at}` runs the organisation's http jobs due at `at`
//! together; `cron:{id}` is a container job's next run.

use serde::{Deserialize, Serialize};

/// A cron job; its fields are those of the API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CronJob {
    pub id: String,
    pub name: String,
    pub schedule: String,
    pub timezone: String,
    /// `http` or `container`.
    #[serde(rename = "type")]
    pub kind: String,
    pub url: String,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    pub timeout_seconds: u32,
    pub paused: bool,
    /// How late a scheduled run may start before it is missed
    /// ([`crate::missed`]); none (jobs stored before it existed): the
    /// default.
    #[serde(default)]
    pub starting_deadline_seconds: Option<u32>,
    /// A container job's image and arguments (jobs stored before container
    /// jobs existed have neither).
    #[serde(default)]
    pub image: String,
    #[serde(default)]
    pub command: Vec<String>,
    /// When the next scheduled run is due (milliseconds); none when paused.
    pub next_run_at: Option<u64>,
    /// The number of its last run (0: none yet); none for a job stored
    /// before it existed, whose count is the counter `n/{id}`.
    #[serde(default)]
    pub last_run: Option<i64>,
    pub created_at: u64,
    pub updated_at: u64,
}

impl CronJob {
    pub fn key(id: &str) -> String {
        format!("j/{id}")
    }
}

/// The due index: where a job due at `at` is kept until it runs.
pub fn due_key(at: u64, id: &str) -> String {
    format!("{}{id}", due_prefix(at))
}

/// Every job due at `at`.
pub fn due_prefix(at: u64) -> String {
    format!("{DUE_INDEX}{at:013}/")
}

/// The due index, earliest first.
pub const DUE_INDEX: &str = "d/";

/// The counter of a job stored before [`CronJob::last_run`] existed.
pub fn run_counter_key(id: &str) -> String {
    format!("n/{id}")
}

/// Run numbers count up; their keys count down, so a list is newest first.
pub fn run_key(id: &str, number: i64) -> String {
    format!("r/{id}/{:012}", 999_999_999_999 - number)
}

pub fn runs_prefix(id: &str) -> String {
    format!("r/{id}/")
}

/// How many runs a job keeps.
pub const KEPT_RUNS: i64 = 100;

/// One run of a job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Run {
    pub number: i64,
    pub job_id: String,
    /// `schedule` or `manual`.
    pub trigger: String,
    /// RFC 3339: when it was due (a manual run: when it was asked for).
    pub scheduled_at: String,
    pub started_at: String,
    pub ended_at: String,
    /// `succeeded` (a 2xx answer, or exit code 0), `failed`, or `missed`
    /// (scheduled times that did not start within the job's starting
    /// deadline, recorded together; `startedAt` and `endedAt` are when
    /// that was noticed).
    pub status: String,
    pub http_status: Option<u16>,
    pub error: Option<String>,
    /// The response head and the first 4 KiB of its body; the flag says
    /// whether the answer had more.
    pub response_headers: Vec<(String, String)>,
    pub response_body: Option<String>,
    #[serde(default)]
    pub response_body_truncated: bool,
    /// A container run's exit code, and the first 4 KiB of its stdout and
    /// stderr; the flags say whether the command wrote more.
    #[serde(default)]
    pub exit_code: Option<u32>,
    #[serde(default)]
    pub stdout: Option<String>,
    #[serde(default)]
    pub stderr: Option<String>,
    #[serde(default)]
    pub stdout_truncated: bool,
    #[serde(default)]
    pub stderr_truncated: bool,
    pub duration_ms: u64,
}

/// A new job id: `cron_` and a lowercase ULID (creation time, then 80
/// random bits), the platform's one id scheme, so jobs list in creation
/// order.
pub fn new_id(now_ms: u64) -> String {
    plateau_sdk::ids::new_id("cron", now_ms)
}

/// Whether `id` names a job: one [`new_id`] makes, or one made before ids
/// were ULIDs (`cron_` and 16 random lowercase base-32 digits).
pub fn is_id(id: &str) -> bool {
    plateau_sdk::ids::is_id(id, "cron")
        || (id.len() == 21
            && id.starts_with("cron_")
            && id[5..]
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase()))
}
