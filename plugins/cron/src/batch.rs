//! Job `due:{at}`: an organisation's http jobs due at the same time run
//! together. Their requests leave in one `send-many` (the host sends them
//! concurrently), then each run is recorded, with its job's next time, in
//! a claim on the job's record; the commit schedules the `due:` jobs of
//! the next times.
//!
//! A job read from the index is the record's bytes, so a run that races a
//! change through the API loses its claim and is recorded over the changed
//! record, which keeps the time the change gave it. A delivery again after
//! a failure runs only what is still due at `at` (at least once, as every
//! durable job), and schedules the earliest time still waiting, in case the
//! failed commit held its `due:` job.

use std::collections::BTreeSet;

use plateau_sdk::outbound::{self, SEND_MANY_MAX};
use plateau_sdk::{ApiError, Bucket, clock};

use crate::missed::{self, Late};
use crate::record;
use crate::run;
use crate::stored::{self, Stored};

/// Runs the http jobs of organisation `org` due at `at`; a late delivery
/// runs each job at most once and records what it missed
/// ([`crate::missed`]).
pub fn due(org: &str, at: u64) -> Result<(), ApiError> {
    let bucket = Bucket::organization(org)?;
    let now = clock::now_millis();
    let mut waiting = Vec::new();
    for stored in due_at(&bucket, at)? {
        let late = missed::late(&stored.job, at, now)?;
        waiting.push((stored, late));
    }
    let mut next = BTreeSet::new();
    while !waiting.is_empty() {
        let chunk: Vec<(Stored, Late)> =
            waiting.drain(..waiting.len().min(SEND_MANY_MAX)).collect();
        let requests: Vec<_> = chunk
            .iter()
            .filter(|(_, late)| late.run_at.is_some())
            .map(|(s, _)| run::request(&s.job))
            .collect();
        let started = clock::now_millis();
        let mut answers = if requests.is_empty() {
            Vec::new()
        } else {
            outbound::send_many(&requests)
        }
        .into_iter();
        let ended = clock::now_millis();
        for (stored, late) in chunk {
            let mut runs = Vec::new();
            if let Some(missed) = &late.missed {
                runs.push(missed::missed_run(&stored.job, missed, started));
            }
            if let Some(run_at) = late.run_at {
                let Some(answer) = answers.next() else {
                    return Err(ApiError::internal(
                        "send-many answered fewer requests than sent",
                    ));
                };
                let mut run = run::new_run(&stored.job, "schedule", run_at, started);
                let took = answer
                    .as_ref()
                    .map_or(ended.saturating_sub(started), |r| u64::from(r.total_ms));
                run::answered(&mut run, answer);
                run::end_run(&mut run, started, started + took);
                runs.push(run);
            }
            if let Some(job) = stored::record_runs(&bucket, stored, &mut runs, Some(at))?
                && let Some(time) = job.next_run_at.filter(|t| *t != at)
                && stored::indexed(&job)
            {
                next.insert(time);
            }
        }
    }
    if let Some(earliest) = earliest_waiting(&bucket)?
        && earliest > clock::now_millis()
    {
        next.insert(earliest);
    }
    for time in next {
        run::schedule_due(org, time)?;
    }
    Ok(())
}

/// The http jobs waiting in the index at `at`, in id order.
fn due_at(bucket: &Bucket, at: u64) -> Result<Vec<Stored>, ApiError> {
    let mut waiting = Vec::new();
    let mut cursor = None;
    loop {
        let page = bucket.list(&record::due_prefix(at), cursor.as_deref(), 200)?;
        for entry in page.entries {
            let stored = Stored::from_entry(entry)?;
            if stored.job.next_run_at == Some(at) && stored::indexed(&stored.job) {
                waiting.push(stored);
            }
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(waiting),
        }
    }
}

/// The earliest time a job of the index waits for.
fn earliest_waiting(bucket: &Bucket) -> Result<Option<u64>, ApiError> {
    let page = bucket.list(record::DUE_INDEX, None, 1)?;
    Ok(page.entries.first().and_then(|entry| {
        let time = entry
            .key
            .strip_prefix(record::DUE_INDEX)?
            .split('/')
            .next()?;
        time.parse().ok()
    }))
}
