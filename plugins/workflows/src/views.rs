//! What the routes answer, as types: the handlers serialize these, and the
//! router declares them, so the OpenAPI document shows the answers the
//! plugin really gives.

use plateau_sdk::clock;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use crate::record::{AttemptError, Current, Run, Status, StepRecord, StepStatus};

/// A workflow run; `steps` (its history, oldest first) only when read
/// alone.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunView {
    pub id: String,
    pub workflow: String,
    pub status: Status,
    /// Any JSON, as started.
    pub input: Value,
    /// The run's result, once completed: any JSON.
    pub output: Option<Value>,
    /// Why it failed or was cancelled.
    pub error: Option<String>,
    /// Attempts each step gets.
    pub max_attempts: u32,
    pub idempotency_key: Option<String>,
    /// The step to run next; null once the run is finished.
    pub current_step: Option<CurrentStep>,
    /// RFC 3339.
    pub created_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepView>>,
}

/// The step a run is at.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CurrentStep {
    /// Its position in the run, from 0.
    pub seq: u32,
    pub name: String,
    /// `pending`, `running` (under a lease), `retrying` or `sleeping`.
    pub state: String,
    /// Claims so far.
    pub attempts: u32,
    /// When it can next be claimed.
    pub ready_at: String,
    pub lease_expires_at: Option<String>,
    /// The end of the sleep before it.
    pub wake_at: Option<String>,
    pub errors: Vec<ErrorView>,
}

/// A failed attempt of a step.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorView {
    pub attempt: u32,
    pub error: String,
    /// RFC 3339.
    pub at: String,
}

/// A finished step.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepView {
    pub seq: u32,
    pub name: String,
    pub status: StepStatus,
    pub attempts: u32,
    /// What the step completed with: any JSON.
    pub output: Option<Value>,
    pub errors: Vec<ErrorView>,
    pub started_at: Option<String>,
    pub finished_at: String,
    /// The end of the sleep it asked for.
    pub wake_at: Option<String>,
}

/// A step claimed by a worker, under a lease.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Claim {
    pub run_id: String,
    pub workflow: String,
    /// The run's input: any JSON.
    pub input: Value,
    /// The step's name.
    pub step: String,
    pub seq: u32,
    /// This claim's attempt, from 1.
    pub attempt: u32,
    pub max_attempts: u32,
    /// The output of the last completed step (null for the first).
    pub previous_output: Value,
    /// Completes, fails or sleeps the step; refused once the lease ends.
    pub lease_token: String,
    pub lease_expires_at: String,
}

/// What the current step is doing.
fn step_state(run: &Run, step: &Current, now: u64) -> &'static str {
    match (&step.lease, run.status) {
        (_, Status::Sleeping) => "sleeping",
        (Some(lease), _) if lease.expires_at > now => "running",
        _ if !step.errors.is_empty() && step.ready_at > now => "retrying",
        _ => "pending",
    }
}

fn errors(errors: &[AttemptError]) -> Vec<ErrorView> {
    errors
        .iter()
        .map(|e| ErrorView {
            attempt: e.attempt,
            error: e.error.clone(),
            at: clock::rfc3339(e.at),
        })
        .collect()
}

impl RunView {
    /// The run without its step history.
    pub fn new(run: &Run) -> RunView {
        let now = clock::now_millis();
        RunView {
            id: run.id.clone(),
            workflow: run.workflow.clone(),
            status: run.status,
            input: run.input.clone(),
            output: run.output.clone(),
            error: run.error.clone(),
            max_attempts: run.max_attempts,
            idempotency_key: run.idempotency_key.clone(),
            current_step: run.step.as_ref().map(|step| CurrentStep {
                seq: step.seq,
                name: step.name.clone(),
                state: step_state(run, step, now).to_owned(),
                attempts: step.attempt,
                ready_at: clock::rfc3339(step.ready_at),
                lease_expires_at: step.lease.as_ref().map(|l| clock::rfc3339(l.expires_at)),
                wake_at: step.wake_at.map(clock::rfc3339),
                errors: errors(&step.errors),
            }),
            created_at: clock::rfc3339(run.created_at),
            updated_at: clock::rfc3339(run.updated_at),
            finished_at: run.finished_at.map(clock::rfc3339),
            steps: None,
        }
    }
}

impl From<&StepRecord> for StepView {
    fn from(step: &StepRecord) -> StepView {
        StepView {
            seq: step.seq,
            name: step.name.clone(),
            status: step.status,
            attempts: step.attempts,
            output: step.output.clone(),
            errors: errors(&step.errors),
            started_at: step.started_at.map(clock::rfc3339),
            finished_at: clock::rfc3339(step.finished_at),
            wake_at: step.wake_at.map(clock::rfc3339),
        }
    }
}
