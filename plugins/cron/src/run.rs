//! Running a job: the HTTP request through the host's outbound capability
//! (the egress guard refuses internal addresses), the recorded run, and the
//! durable job of the next scheduled run.

use plateau_sdk::jobs::{self, Job, NewJob};
use plateau_sdk::outbound::OutgoingRequest;
use plateau_sdk::{ApiError, Bucket, Namespace, clock};

use crate::record::{self, CronJob, Run};
use crate::schedule::Schedule;

/// The most bytes of a response body a run keeps.
const KEPT_BODY: usize = 4096;

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

/// Runs `job` now and records the run; the run.
pub fn execute(
    bucket: &Bucket,
    job: &CronJob,
    trigger: &str,
    scheduled_at: u64,
) -> Result<Run, ApiError> {
    let started = clock::now_millis();
    let mut request = OutgoingRequest::new(job.method.clone(), job.url.clone())
        .timeout_ms(job.timeout_seconds * 1000);
    for (name, value) in &job.headers {
        request = request.header(name, value.clone());
    }
    if let Some(body) = &job.body {
        request = request.body(body.clone().into_bytes());
    }
    let outcome = request.send();
    let ended = clock::now_millis();
    let number = bucket.increment(&record::run_counter_key(&job.id), 1)?;
    let mut run = Run {
        number,
        job_id: job.id.clone(),
        trigger: trigger.to_owned(),
        scheduled_at: clock::rfc3339(scheduled_at),
        started_at: clock::rfc3339(started),
        ended_at: clock::rfc3339(ended),
        status: "failed".to_owned(),
        http_status: None,
        error: None,
        response_headers: Vec::new(),
        response_body: None,
        duration_ms: ended.saturating_sub(started),
    };
    match outcome {
        Ok(response) => {
            if (200..300).contains(&response.status) {
                run.status = "succeeded".to_owned();
            }
            run.http_status = Some(response.status);
            run.response_headers = response.headers.clone();
            let kept = &response.body[..response.body.len().min(KEPT_BODY)];
            run.response_body = Some(String::from_utf8_lossy(kept).into_owned());
        }
        Err(e) => run.error = Some(e.to_string()),
    }
    bucket.set(&record::run_key(&job.id, number), &run)?;
    if number > record::KEPT_RUNS {
        bucket.delete(&record::run_key(&job.id, number - record::KEPT_RUNS))?;
    }
    Ok(run)
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
        execute(&bucket, &cron, "schedule", job.due)?;
        // The next time after now: runs missed while the host was down are
        // not made up, as in cron.
        let after = clock::now_millis().max(job.due);
        reschedule(org, &mut cron, after)?;
        bucket.set(&CronJob::key(id), &cron)?;
        Ok(())
    };
    run().map_err(|e| e.detail().to_owned())
}
