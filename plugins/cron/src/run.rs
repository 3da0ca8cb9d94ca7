//! Running one job: the HTTP request through the host's outbound
//! capability (the egress guard refuses internal addresses) or the command
//! through its runner; the job's next time, and the durable job that runs
//! it then.

use plateau_sdk::jobs::{self, Job, NewJob};
use plateau_sdk::outbound::{HttpError, IncomingResponse, OutgoingRequest};
use plateau_sdk::runner::{self, Command, Owner, RunnerError};
use plateau_sdk::{ApiError, Bucket, Namespace, clock};

use crate::record::{CronJob, Run};
use crate::schedule::Schedule;
use crate::stored::{self, Stored};

/// The most bytes of a response body, or of a command's stdout or stderr,
/// a run keeps.
const KEPT_BODY: usize = 4096;
/// Linear memory of a container job's command, in MiB.
pub const COMMAND_MEMORY_MB: u32 = 128;

/// The durable job of a container job's next run.
pub fn job_key(id: &str) -> String {
    format!("cron:{id}")
}

/// The durable job that runs an organisation's http jobs due at `at`.
pub fn due_job_key(at: u64) -> String {
    format!("due:{at}")
}

/// Sets `next_run_at` to the job's first time after `after`, or to none
/// when it is paused.
pub fn advance(job: &mut CronJob, after: u64) -> Result<(), ApiError> {
    if job.paused {
        job.next_run_at = None;
        return Ok(());
    }
    let schedule = Schedule::new(&job.schedule, &job.timezone).map_err(|e| {
        ApiError::internal(format!("job {} has a bad schedule: {}", job.id, e.message))
    })?;
    let next = schedule
        .next_after(after)
        .map_err(|e| ApiError::validation(e.field, e.message))?;
    job.next_run_at = Some(next);
    Ok(())
}

/// Schedules the durable job that runs the job next: the organisation's
/// `due:{at}` for an http job (shared by every job due then), its own
/// `cron:{id}` for a container job; a paused job has none.
pub fn schedule_delivery(org: &str, job: &CronJob) -> Result<(), ApiError> {
    let Some(at) = job.next_run_at else {
        return Ok(());
    };
    if job.kind != "container" {
        return schedule_due(org, at);
    }
    jobs::schedule(
        NewJob::at(job_key(&job.id), at)
            .namespace(Namespace::Organization(org.to_owned()))
            .payload(job.id.clone()),
    )?;
    Ok(())
}

/// Schedules the organisation's `due:{at}`, which runs every http job due
/// then (scheduled again, it is replaced by the same).
pub fn schedule_due(org: &str, at: u64) -> Result<(), ApiError> {
    jobs::schedule(
        NewJob::at(due_job_key(at), at)
            .namespace(Namespace::Organization(org.to_owned()))
            .payload(at.to_string()),
    )?;
    Ok(())
}

/// A job changed through the API: its next time after `now`, and the
/// durable job that runs it (a container job's own, or an http job's of
/// the version that scheduled each job alone, is cancelled when it no
/// longer needs one).
pub fn reschedule(org: &str, job: &mut CronJob, now: u64) -> Result<(), ApiError> {
    advance(job, now)?;
    if job.kind != "container" || job.paused {
        jobs::cancel(Namespace::Organization(org.to_owned()), &job_key(&job.id))?;
    }
    schedule_delivery(org, job)
}

/// A run of `job` that has not started: `failed` until it is known.
pub fn new_run(job: &CronJob, trigger: &str, scheduled_at: u64, started: u64) -> Run {
    Run {
        number: 0,
        job_id: job.id.clone(),
        trigger: trigger.to_owned(),
        scheduled_at: clock::rfc3339(scheduled_at),
        started_at: clock::rfc3339(started),
        ended_at: String::new(),
        status: "failed".to_owned(),
        http_status: None,
        error: None,
        response_headers: Vec::new(),
        response_body: None,
        response_body_truncated: false,
        exit_code: None,
        stdout: None,
        stderr: None,
        stdout_truncated: false,
        stderr_truncated: false,
        duration_ms: 0,
    }
}

/// Sets the end of `run`, started at `started`, to `ended`.
pub fn end_run(run: &mut Run, started: u64, ended: u64) {
    run.ended_at = clock::rfc3339(ended);
    run.duration_ms = ended.saturating_sub(started);
}

/// Runs `job` now (as organisation `org`); the run, not yet recorded.
pub fn execute(org: &str, job: &CronJob, trigger: &str, scheduled_at: u64) -> Run {
    let started = clock::now_millis();
    let mut run = new_run(job, trigger, scheduled_at, started);
    if job.kind == "container" {
        run_command(org, job, scheduled_at, &mut run);
    } else {
        let answer = request(job).send();
        answered(&mut run, answer);
    }
    end_run(&mut run, started, clock::now_millis());
    run
}

/// An http job's request, keeping the part of the answer a run records.
pub fn request(job: &CronJob) -> OutgoingRequest {
    let mut request = OutgoingRequest::new(job.method.clone(), job.url.clone())
        .timeout_ms(job.timeout_seconds * 1000)
        .keep_body_bytes(KEPT_BODY as u32);
    for (name, value) in &job.headers {
        request = request.header(name, value.clone());
    }
    if let Some(body) = &job.body {
        request = request.body(body.clone().into_bytes());
    }
    request
}

/// The outcome of an http job's request, into its run.
pub fn answered(run: &mut Run, answer: Result<IncomingResponse, HttpError>) {
    match answer {
        Ok(response) => {
            if response.is_success() {
                run.status = "succeeded".to_owned();
            }
            run.http_status = Some(response.status);
            let (body, cut) = kept(&response.body);
            run.response_body = Some(body);
            run.response_body_truncated = response.body_truncated || cut;
            run.response_headers = response.headers;
        }
        Err(e) => run.error = Some(e.to_string()),
    }
}

/// The first [`KEPT_BODY`] bytes of `bytes` as text, and whether any were
/// cut.
fn kept(bytes: &[u8]) -> (String, bool) {
    let cut = &bytes[..bytes.len().min(KEPT_BODY)];
    (
        String::from_utf8_lossy(cut).into_owned(),
        cut.len() < bytes.len(),
    )
}

/// A container job: its command run to completion by the host's runner,
/// with the job's organisation's pull rights.
fn run_command(org: &str, job: &CronJob, scheduled_at: u64, run: &mut Run) {
    let command = Command {
        image: job.image.clone(),
        args: job.command.clone(),
        env: vec![
            ("PLATEAU_CRON_JOB_ID".to_owned(), job.id.clone()),
            (
                "PLATEAU_CRON_SCHEDULED_AT".to_owned(),
                clock::rfc3339(scheduled_at),
            ),
        ],
        timeout_ms: job.timeout_seconds * 1000,
        memory_mb: COMMAND_MEMORY_MB,
    };
    let mut record = |outcome: &runner::Outcome| {
        let (stdout, cut_out) = kept(&outcome.stdout);
        let (stderr, cut_err) = kept(&outcome.stderr);
        run.stdout = Some(stdout);
        run.stderr = Some(stderr);
        run.stdout_truncated = outcome.stdout_truncated || cut_out;
        run.stderr_truncated = outcome.stderr_truncated || cut_err;
    };
    match runner::run(&Owner::Organization(org.to_owned()), &command) {
        Ok(outcome) => {
            record(&outcome);
            run.exit_code = Some(outcome.exit_code);
            if outcome.exit_code == 0 {
                run.status = "succeeded".to_owned();
            } else {
                run.error = Some(format!(
                    "the command exited with code {}",
                    outcome.exit_code
                ));
            }
        }
        Err(e) => {
            match &e {
                RunnerError::Timeout(outcome) | RunnerError::Trapped(_, outcome) => record(outcome),
                _ => {}
            }
            run.error = Some(e.to_string());
        }
    }
}

/// Job `cron:{id}`: runs a container job when due (a late delivery at most
/// once, recording what it missed: [`crate::missed`]), records the run (a
/// failed run is recorded, not retried) with the job's next time, and
/// schedules it. An http job of a version that scheduled each job on its
/// own runs here once, and joins the due index as its run is recorded.
pub fn scheduled(job: &Job) -> Result<(), String> {
    let Some(org) = job.organization_id.as_deref() else {
        return Ok(());
    };
    let run = || -> Result<(), ApiError> {
        let bucket = Bucket::organization(org)?;
        let Some(stored) = Stored::load(&bucket, &job.payload)? else {
            return Ok(());
        };
        if stored.job.paused || stored.job.next_run_at != Some(job.due) {
            // Moved by the API, or by a run whose commit failed: make sure
            // its next time has its durable job.
            return schedule_delivery(org, &stored.job);
        }
        let late = crate::missed::late(&stored.job, job.due, clock::now_millis())?;
        let mut runs = Vec::new();
        if let Some(missed) = &late.missed {
            let now = clock::now_millis();
            runs.push(crate::missed::missed_run(&stored.job, missed, now));
        }
        if let Some(run_at) = late.run_at {
            runs.push(execute(org, &stored.job, "schedule", run_at));
        }
        if let Some(cron) = stored::record_runs(&bucket, stored, &mut runs, Some(job.due))?
            && cron.next_run_at != Some(job.due)
        {
            schedule_delivery(org, &cron)?;
        }
        Ok(())
    };
    run().map_err(|e| e.detail().to_owned())
}
