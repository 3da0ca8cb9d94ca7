//! Retention: each organisation's data is kept for its plan's days
//! ([`record::retention_days`]: free 1, starter 7, pro 15, scale 30),
//! counted in whole UTC days: a day's spans, logs and metric points go
//! once the day ended more than that many days ago. A repeating durable
//! job per organisation, [`JOB`], deletes them; queries never read a day
//! past the cutoff, so nothing older is shown even before the job ran.
//!
//! The plan is the one the organisation's last authenticated call to the
//! plugin carried, or that an `organization.plan_changed` event announced
//! since ([`remember_plan`]).

use plateau_sdk::jobs::{self, Job, NewJob};
use plateau_sdk::{ApiError, Bucket, Namespace, clock, log};

use crate::record::{self, DAILY_KINDS, PlanRec, SeriesRec};

/// The job that deletes an organisation's expired days.
pub const JOB: &str = "retention";
/// How often it runs.
pub const EVERY_MS: u64 = 3_600_000;
/// Deletions per run (a call may write at most 1,000 keys); a run that has
/// more to delete schedules the next one a second later.
pub const DELETES_PER_RUN: usize = 900;

/// Remembers `plan` for `org` if it changed.
pub fn remember_plan(bucket: &Bucket, plan: Option<&str>) -> Result<(), ApiError> {
    let Some(plan) = plan else { return Ok(()) };
    let known: Option<PlanRec> = bucket.get(record::PLAN)?;
    if known.as_ref().map(|p| p.plan.as_str()) != Some(plan) {
        bucket.set(
            record::PLAN,
            &PlanRec {
                plan: plan.to_owned(),
            },
        )?;
    }
    Ok(())
}

/// Remembers the plan and makes sure the retention job runs for `org`.
pub fn start(org: &str, plan: Option<&str>) -> Result<(), ApiError> {
    remember_plan(&Bucket::organization(org)?, plan)?;
    let first = clock::now_millis() + EVERY_MS;
    jobs::schedule(
        NewJob::at(JOB, first)
            .namespace(Namespace::Organization(org.to_owned()))
            .every_ms(EVERY_MS),
    )?;
    Ok(())
}

/// The first day (as [`record::day`]) still kept for the organisation of
/// `bucket` at `now`.
pub fn first_kept_day(bucket: &Bucket, now: u64) -> Result<u64, ApiError> {
    let plan = bucket
        .get::<PlanRec>(record::PLAN)?
        .map(|p| p.plan)
        .unwrap_or_default();
    Ok((now / record::DAY_MS).saturating_sub(record::retention_days(&plan)))
}

/// One run of [`JOB`]: deletes expired days, then expired metric series.
pub fn run(job: &Job) -> Result<(), ApiError> {
    let Some(org) = job.organization_id.as_deref() else {
        log::warn("the retention job has no organisation");
        return Ok(());
    };
    let bucket = Bucket::organization(org)?;
    let now = clock::now_millis();
    let first = first_kept_day(&bucket, now)?;
    let mut budget = DELETES_PER_RUN;
    for marker in bucket.list_all("days/")? {
        let mut parts = marker.key.splitn(3, '/').skip(1);
        let (Some(project), Some(day)) = (parts.next(), parts.next()) else {
            continue;
        };
        if day.parse::<u64>().map_or(true, |d| d >= first) {
            continue;
        }
        if !delete_day(&bucket, project, day, &mut budget)? {
            return more(org, now);
        }
        bucket.delete(&marker.key)?;
        budget = budget.saturating_sub(1);
    }
    let cutoff_ms = first * record::DAY_MS;
    let mut cursor = None;
    loop {
        let page = bucket.list("m/", cursor.as_deref(), 200)?;
        for entry in &page.entries {
            let series: SeriesRec = entry.json()?;
            if series.last_seen < cutoff_ms {
                if budget == 0 {
                    return more(org, now);
                }
                bucket.delete(&entry.key)?;
                budget -= 1;
            }
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(()),
        }
    }
}

/// Deletes what `project` kept on `day`, within `budget`; true once all
/// of it is gone.
fn delete_day(
    bucket: &Bucket,
    project: &str,
    day: &str,
    budget: &mut usize,
) -> Result<bool, ApiError> {
    for kind in DAILY_KINDS {
        let prefix = record::daily_prefix(kind, project, day);
        let mut cursor = None;
        loop {
            if *budget == 0 {
                return Ok(false);
            }
            let limit = (*budget).min(200) as u32;
            let page = bucket.list(&prefix, cursor.as_deref(), limit)?;
            for entry in &page.entries {
                bucket.delete(&entry.key)?;
                *budget -= 1;
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    Ok(true)
}

/// Schedules a run a second from now for what is left.
fn more(org: &str, now: u64) -> Result<(), ApiError> {
    jobs::schedule(
        NewJob::at(format!("{JOB}-more"), now + 1000)
            .namespace(Namespace::Organization(org.to_owned())),
    )?;
    Ok(())
}
