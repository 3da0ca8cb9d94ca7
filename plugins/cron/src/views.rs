//! What the routes answer, as types: the handlers serialize these, and the
//! router declares them, so the OpenAPI document shows the answers the
//! plugin really gives.

use std::collections::BTreeMap;

use plateau_sdk::clock;
use serde::Serialize;
use utoipa::ToSchema;

use crate::record::{CronJob, Run};

/// A cron job, its settings and its next run time.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobView {
    pub id: String,
    pub name: String,
    /// A five-field cron expression.
    pub schedule: String,
    /// The IANA time zone the schedule is read in.
    pub timezone: String,
    /// `http` or `container`.
    #[serde(rename = "type")]
    #[schema(pattern = "^(http|container)$")]
    pub kind: String,
    /// An HTTP job's target; null for a container job.
    pub url: Option<String>,
    pub method: Option<String>,
    pub headers: BTreeMap<String, String>,
    pub body: Option<String>,
    /// A container job's image and arguments; null for an HTTP job.
    pub image: Option<String>,
    pub command: Option<Vec<String>>,
    pub timeout_seconds: u32,
    /// How late a scheduled run may start before it is recorded missed.
    pub starting_deadline_seconds: u32,
    pub paused: bool,
    /// RFC 3339; null when paused.
    pub next_run_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<&CronJob> for JobView {
    fn from(job: &CronJob) -> JobView {
        let http = job.kind != "container";
        JobView {
            id: job.id.clone(),
            name: job.name.clone(),
            schedule: job.schedule.clone(),
            timezone: job.timezone.clone(),
            kind: job.kind.clone(),
            url: http.then(|| job.url.clone()),
            method: http.then(|| job.method.clone()),
            headers: job.headers.iter().cloned().collect(),
            body: job.body.clone(),
            image: (!http).then(|| job.image.clone()),
            command: (!http).then(|| job.command.clone()),
            timeout_seconds: job.timeout_seconds,
            starting_deadline_seconds: job
                .starting_deadline_seconds
                .unwrap_or(crate::missed::DEFAULT_STARTING_DEADLINE_SECONDS),
            paused: job.paused,
            next_run_at: job.next_run_at.map(clock::rfc3339),
            created_at: clock::rfc3339(job.created_at),
            updated_at: clock::rfc3339(job.updated_at),
        }
    }
}

/// One run of a job.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    pub number: i64,
    pub job_id: String,
    /// `schedule` or `manual`.
    pub trigger: String,
    /// RFC 3339: when it was due (a manual run: when it was asked for).
    pub scheduled_at: String,
    pub started_at: String,
    pub ended_at: String,
    /// `succeeded`, `failed` or `missed`.
    pub status: String,
    pub http_status: Option<u16>,
    pub error: Option<String>,
    /// The answer's head and the first 4 KiB of its body.
    pub response_headers: BTreeMap<String, String>,
    pub response_body: Option<String>,
    pub response_body_truncated: bool,
    /// A container run's exit code and the first 4 KiB of its output.
    pub exit_code: Option<u32>,
    pub stdout: Option<String>,
    pub stderr: Option<String>,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
    pub duration_ms: u64,
}

impl From<&Run> for RunView {
    fn from(run: &Run) -> RunView {
        RunView {
            number: run.number,
            job_id: run.job_id.clone(),
            trigger: run.trigger.clone(),
            scheduled_at: run.scheduled_at.clone(),
            started_at: run.started_at.clone(),
            ended_at: run.ended_at.clone(),
            status: run.status.clone(),
            http_status: run.http_status,
            error: run.error.clone(),
            response_headers: run.response_headers.iter().cloned().collect(),
            response_body: run.response_body.clone(),
            response_body_truncated: run.response_body_truncated,
            exit_code: run.exit_code,
            stdout: run.stdout.clone(),
            stderr: run.stderr.clone(),
            stdout_truncated: run.stdout_truncated,
            stderr_truncated: run.stderr_truncated,
            duration_ms: run.duration_ms,
        }
    }
}
