//! Running a job: the HTTP request through the host's outbound capability
//! (the egress guard refuses internal addresses), the recorded run, and the
//! durable job of the next scheduled run.

use plateau_sdk::jobs::{self, Job, NewJob};
use plateau_sdk::outbound::OutgoingRequest;
use plateau_sdk::runner::{self, Command, Owner, RunnerError};
use plateau_sdk::{ApiError, Bucket, Namespace, clock};

use crate::record::{self, CronJob, Run};
use crate::schedule::Schedule;

/// The most bytes of a response body, or of a command's stdout or stderr,
/// a run keeps.
const KEPT_BODY: usize = 4096;
/// Linear memory of a container job's command, in MiB.
pub const COMMAND_MEMORY_MB: u32 = 128;

/// The key of a job's next scheduled run.
pub fn job_key(id: &str) -> String {
    format!("cron:{id}")
}

/// Sets `next_run_at` to the first time after `after` and schedules it, or
/// cancels the schedule of a paused job.
pub fn reschedule(org: &str, job: &mut CronJob, after: u64) -> Result<(), ApiError> {
    let namespace = Namespace::Organization(org.to_owned());
    if job.paused {
        job.next_run_at = None;
        jobs::cancel(namespace, &job_key(&job.id))?;
        return Ok(());
    }
    let schedule = Schedule::new(&job.schedule, &job.timezone).map_err(|e| {
        ApiError::internal(format!("job {} has a bad schedule: {}", job.id, e.message))
    })?;
    let next = schedule
        .next_after(after)
        .map_err(|e| ApiError::validation(e.field, e.message))?;
    job.next_run_at = Some(next);
    jobs::schedule(
        NewJob::at(job_key(&job.id), next)
            .namespace(namespace)
            .payload(job.id.clone()),
    )?;
    Ok(())
}

/// Runs `job` now (as organisation `org`) and records the run; the run.
pub fn execute(
    bucket: &Bucket,
    org: &str,
    job: &CronJob,
    trigger: &str,
    scheduled_at: u64,
) -> Result<Run, ApiError> {
    let started = clock::now_millis();
    let mut run = Run {
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
        exit_code: None,
        stdout: None,
        stderr: None,
        stdout_truncated: false,
        stderr_truncated: false,
        duration_ms: 0,
    };
    if job.kind == "container" {
        run_command(org, job, scheduled_at, &mut run);
    } else {
        send_request(job, &mut run);
    }
    let ended = clock::now_millis();
    run.ended_at = clock::rfc3339(ended);
    run.duration_ms = ended.saturating_sub(started);
    let number = bucket.increment(&record::run_counter_key(&job.id), 1)?;
    run.number = number;
    bucket.set(&record::run_key(&job.id, number), &run)?;
    if number > record::KEPT_RUNS {
        bucket.delete(&record::run_key(&job.id, number - record::KEPT_RUNS))?;
    }
    Ok(run)
}

/// An http job: the request through the egress guard.
fn send_request(job: &CronJob, run: &mut Run) {
    let mut request = OutgoingRequest::new(job.method.clone(), job.url.clone())
        .timeout_ms(job.timeout_seconds * 1000);
    for (name, value) in &job.headers {
        request = request.header(name, value.clone());
    }
    if let Some(body) = &job.body {
        request = request.body(body.clone().into_bytes());
    }
    match request.send() {
        Ok(response) => {
            if (200..300).contains(&response.status) {
                run.status = "succeeded".to_owned();
            }
            run.http_status = Some(response.status);
            run.response_headers = response.headers.clone();
            run.response_body = Some(kept(&response.body).0);
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

/// Job `cron:{id}`: runs the job when due, records the run (a failed run
/// is recorded, not retried) and schedules the next.
pub fn scheduled(job: &Job) -> Result<(), String> {
    let Some(org) = job.organization_id.as_deref() else {
        return Ok(());
    };
    let id = &job.payload;
    let run = || -> Result<(), ApiError> {
        let bucket = Bucket::organization(org)?;
        let Some(mut cron) = bucket.get::<CronJob>(&CronJob::key(id))? else {
            return Ok(());
        };
        if cron.paused || cron.next_run_at != Some(job.due) {
            return Ok(());
        }
        execute(&bucket, org, &cron, "schedule", job.due)?;
        // The next time after now: runs missed while the host was down are
        // not made up, as in cron.
        let after = clock::now_millis().max(job.due);
        reschedule(org, &mut cron, after)?;
        bucket.set(&CronJob::key(id), &cron)?;
        Ok(())
    };
    run().map_err(|e| e.detail().to_owned())
}
