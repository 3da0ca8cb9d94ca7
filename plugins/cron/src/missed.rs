//! Runs that could not start on time: the starting deadline, as
//! Kubernetes CronJob's `startingDeadlineSeconds`.
//!
//! A delivery of a job's due time `at` that comes at `now` (late when the
//! server was down, or overloaded) runs the job at most once: at the
//! latest of its times from `at` to `now` if that time is at most the
//! job's starting deadline ago; every other time from `at` to `now` is
//! missed. Missed times are not made up: they are recorded together as
//! one run with status `missed`, and the schedule goes on from the first
//! time after `now`.

use plateau_sdk::{ApiError, clock};

use crate::record::{CronJob, Run};
use crate::run;
use crate::schedule::Schedule;

/// A job's starting deadline when it sets none.
pub const DEFAULT_STARTING_DEADLINE_SECONDS: u32 = 60;
/// The longest starting deadline a job may set: a day.
pub const MAX_STARTING_DEADLINE_SECONDS: u32 = 86_400;
/// Missed times counted one by one; past this many a missed run says
/// "at least".
const MAX_COUNTED: u32 = 1_000;

/// What a delivery of due time `at` does at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Late {
    /// The time to run now, if one is within the starting deadline.
    pub run_at: Option<u64>,
    /// The times missed: the first, the last, and how many (at least
    /// `count`, when `capped`).
    pub missed: Option<Missed>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Missed {
    pub first: u64,
    pub last: u64,
    pub count: u32,
    pub capped: bool,
}

/// The job's starting deadline in milliseconds.
pub fn deadline_ms(job: &CronJob) -> u64 {
    u64::from(
        job.starting_deadline_seconds
            .unwrap_or(DEFAULT_STARTING_DEADLINE_SECONDS),
    ) * 1000
}

/// What a delivery of `job`'s due time `at` runs at `now`, and what it
/// misses.
pub fn late(job: &CronJob, at: u64, now: u64) -> Result<Late, ApiError> {
    let deadline = deadline_ms(job);
    if now <= at.saturating_add(deadline) && !has_time_in(job, at, now)? {
        // On time, or late within the deadline with no later time passed.
        return Ok(Late {
            run_at: Some(at),
            missed: None,
        });
    }
    let schedule = schedule(job)?;
    let next = |t: u64| {
        schedule
            .next_after(t)
            .map_err(|e| ApiError::internal(format!("job {}: {}", job.id, e.message)))
    };
    // The latest time at most `now`, looked for only within the deadline.
    let window = now.saturating_sub(deadline).max(at);
    let mut run_at = None;
    let mut t = if window == at { at } else { next(window - 1)? };
    while t <= now {
        run_at = Some(t);
        t = next(t)?;
    }
    // Every time from `at` before the one that runs (or up to `now`).
    let end = run_at.unwrap_or(now.saturating_add(1));
    let mut missed = Missed {
        first: at,
        last: at,
        count: 0,
        capped: false,
    };
    let mut t = at;
    while t < end {
        if missed.count == MAX_COUNTED {
            missed.capped = true;
            break;
        }
        missed.count += 1;
        missed.last = t;
        t = next(t)?;
    }
    Ok(Late {
        run_at,
        missed: (missed.count > 0).then_some(missed),
    })
}

/// Whether the job has a time after `at` and at most `now`.
fn has_time_in(job: &CronJob, at: u64, now: u64) -> Result<bool, ApiError> {
    if now <= at {
        return Ok(false);
    }
    let next = schedule(job)?
        .next_after(at)
        .map_err(|e| ApiError::internal(format!("job {}: {}", job.id, e.message)))?;
    Ok(next <= now)
}

fn schedule(job: &CronJob) -> Result<Schedule, ApiError> {
    Schedule::new(&job.schedule, &job.timezone).map_err(|e| {
        ApiError::internal(format!("job {} has a bad schedule: {}", job.id, e.message))
    })
}

/// The run that records `missed`, noticed at `now`.
pub fn missed_run(job: &CronJob, missed: &Missed, now: u64) -> Run {
    let mut run = run::new_run(job, "schedule", missed.first, now);
    run.status = "missed".to_owned();
    let seconds = deadline_ms(job) / 1000;
    let what = match (missed.count, missed.capped) {
        (1, _) => format!("the run due at {}", clock::rfc3339(missed.first)),
        (n, capped) => format!(
            "{}{n} runs due from {} to {}",
            if capped { "at least " } else { "" },
            clock::rfc3339(missed.first),
            clock::rfc3339(missed.last)
        ),
    };
    run.error = Some(format!(
        "{what} did not start within the starting deadline of {seconds} s (the server was down or overloaded); missed runs are not made up"
    ));
    run::end_run(&mut run, now, now);
    run
}
