//! One run of a check: probe the target through the host's egress guard
//! (or, for a heartbeat, look at the last ping), judge it, and commit the
//! result, the new state and any alert with one compare-and-swap of the
//! check, so two runs racing each other never both alert.

use plateau_sdk::jobs::{self, NewJob};
use plateau_sdk::outbound::{HttpError, OutgoingRequest};
use plateau_sdk::{ApiError, Bucket, Namespace, clock};

use super::alerts;
use super::records::{self, CheckRecord, RunResult, Trigger};
use crate::assertions::Observed;
use crate::health::Change;
use crate::ids;
use crate::spec::{Kind, Spec};
use crate::verdict::{self, TransportError, Verdict};

/// How often a run re-reads a check changed under it before giving up.
const ATTEMPTS: usize = 4;

/// Runs check `id` of the organisation `org` now. `None` when there is
/// nothing to record: the check is gone, or a heartbeat is not overdue on
/// a scheduled run.
pub fn run(
    org: &str,
    id: &str,
    trigger: Trigger,
    scheduled_for: Option<u64>,
) -> Result<Option<RunResult>, ApiError> {
    let ns = Namespace::Organization(org.to_owned());
    let bucket = Bucket::open(ns.clone())?;
    let record = records::load(&bucket, id)?;
    let Some((raw, record)) =
        record.filter(|(_, r)| trigger != Trigger::Schedule || r.spec.enabled)
    else {
        // A job that outlived its check (or its pause): stop it.
        if trigger == Trigger::Schedule {
            jobs::cancel(ns, &records::check_job(id))?;
        }
        return Ok(None);
    };
    let started_at = clock::now_millis();
    let verdict = match record.spec.kind {
        Kind::Heartbeat => match heartbeat_verdict(&record, started_at) {
            Some(verdict) => verdict,
            None if trigger == Trigger::Schedule => return Ok(None),
            None => Verdict::pinged(),
        },
        Kind::Url | Kind::Api => probe(&record.spec),
    };
    let run = Run {
        verdict,
        trigger,
        scheduled_for,
        started_at,
    };
    Ok(commit(&bucket, org, raw, record, &run, |_| {})?.map(|(result, _)| result))
}

/// A heartbeat's ping: an ok run, the ping time, and the deadline moved to
/// one interval and grace from now.
pub fn ping(org: &str, id: &str) -> Result<Option<RunResult>, ApiError> {
    let ns = Namespace::Organization(org.to_owned());
    let bucket = Bucket::open(ns.clone())?;
    let Some((raw, record)) = records::load(&bucket, id)? else {
        return Ok(None);
    };
    if !record.spec.enabled {
        return Ok(None);
    }
    let now = clock::now_millis();
    let run = Run {
        verdict: Verdict::pinged(),
        trigger: Trigger::Ping,
        scheduled_for: None,
        started_at: now,
    };
    let committed = commit(&bucket, org, raw, record, &run, |r| {
        r.last_ping_at = Some(now)
    })?;
    let Some((result, record)) = committed else {
        return Ok(None);
    };
    schedule(&ns, &record, now)?;
    Ok(Some(result))
}

/// (Re)schedules the check's job, or cancels it for a paused check. URL
/// and API checks run at once and then every interval; a heartbeat is due
/// when its ping is overdue.
pub fn schedule(ns: &Namespace, record: &CheckRecord, now: u64) -> Result<(), ApiError> {
    let key = records::check_job(&record.id);
    if !record.spec.enabled {
        jobs::cancel(ns.clone(), &key)?;
        return Ok(());
    }
    let first = match record.spec.kind {
        Kind::Heartbeat => {
            record.last_ping_at.unwrap_or(record.created_at) + record.spec.heartbeat_window_ms()
        }
        Kind::Url | Kind::Api => now,
    };
    jobs::schedule(
        NewJob::at(key, first)
            .namespace(ns.clone())
            .every_ms(record.spec.interval_ms())
            .payload(record.id.clone()),
    )?;
    Ok(())
}

struct Run {
    verdict: Verdict,
    trigger: Trigger,
    scheduled_for: Option<u64>,
    started_at: u64,
}

/// Records `run` on the check: the state moves, the result is stored, and a
/// change is announced; the result and the check as committed. A check
/// changed meanwhile is re-read; if its configuration changed, the run
/// judged the old one and is dropped.
fn commit(
    bucket: &Bucket,
    org: &str,
    mut raw: Vec<u8>,
    mut record: CheckRecord,
    run: &Run,
    prepare: impl Fn(&mut CheckRecord),
) -> Result<Option<(RunResult, CheckRecord)>, ApiError> {
    let key = records::check_key(&record.id);
    let spec = record.spec.clone();
    for _ in 0..ATTEMPTS {
        let now = clock::now_millis();
        let mut next = record.clone();
        prepare(&mut next);
        let (result, change) = apply(&mut next, run, now);
        let encoded = records::encode(&next)?;
        if bucket.compare_and_swap(&key, Some(&raw), Some(&encoded))? {
            bucket.set(&records::result_key(&next.id, result.run), &result)?;
            if let Some(change) = change {
                alerts::announce(bucket, org, &next, change, &result, now)?;
            }
            return Ok(Some((result, next)));
        }
        match records::load(bucket, &record.id)? {
            Some((fresh_raw, fresh)) if fresh.spec == spec => {
                raw = fresh_raw;
                record = fresh;
            }
            _ => return Ok(None),
        }
    }
    Err(ApiError::conflict(format!(
        "check {} changed during the run on every attempt: run it again",
        record.id
    )))
}

/// Moves the check's state and bookkeeping by one run; the result and the
/// change of state, if any.
fn apply(record: &mut CheckRecord, run: &Run, now: u64) -> (RunResult, Option<Change>) {
    let v = &run.verdict;
    let change = record
        .health
        .apply(v.outcome, record.spec.retries, run.started_at);
    record.runs += 1;
    if change.is_some_and(|c| c.alerts()) {
        record.alerts_raised += 1;
    }
    let result = RunResult {
        id: ids::new_id("res", now),
        check_id: record.id.clone(),
        run: record.runs,
        trigger: run.trigger,
        started_at: clock::rfc3339(run.started_at),
        scheduled_for: run.scheduled_for.map(clock::rfc3339),
        outcome: v.outcome,
        status: record.health.status,
        status_code: v.status_code,
        latency_ms: v.latency_ms,
        connect_ms: v.connect_ms,
        message: v.message.clone(),
        failure: v.failure.clone(),
    };
    record.last_result = Some(result.clone());
    (result, change)
}

/// Sends the check's request and judges the answer.
fn probe(spec: &Spec) -> Verdict {
    let expect = spec.expectations();
    let mut req = OutgoingRequest::new(
        spec.method.as_deref().unwrap_or("GET"),
        spec.url.as_deref().unwrap_or_default(),
    )
    .timeout_ms(spec.timeout_ms());
    for (name, value) in &spec.headers {
        req = req.header(name, value.clone());
    }
    if let Some(body) = &spec.body {
        req = req.body(body.clone().into_bytes());
    }
    match req.send() {
        Ok(res) => verdict::judge_response(
            &expect,
            &Observed {
                status: res.status,
                headers: &res.headers,
                body: &res.body,
                total_ms: res.total_ms,
            },
            res.connect_ms,
        ),
        Err(error) => {
            let error = match error {
                HttpError::Timeout => TransportError::Timeout,
                HttpError::ConnectionFailed(why) => TransportError::Connection(why),
                HttpError::HostNotAllowed(why) | HttpError::AddressRefused(why) => {
                    TransportError::Refused(why)
                }
                HttpError::ResponseTooLarge => TransportError::TooLarge,
                HttpError::InvalidRequest(why) => TransportError::InvalidRequest(why),
            };
            verdict::judge_error(&expect, &error)
        }
    }
}

/// A heartbeat's verdict at `now`: failed when no ping came within its
/// interval and grace; `None` while it is not overdue.
fn heartbeat_verdict(record: &CheckRecord, now: u64) -> Option<Verdict> {
    let since = record.last_ping_at.unwrap_or(record.created_at);
    let deadline = since + record.spec.heartbeat_window_ms();
    if now < deadline {
        return None;
    }
    let last = match record.last_ping_at {
        Some(at) => format!("the last ping came at {}", clock::rfc3339(at)),
        None => format!(
            "no ping came since the check was created at {}",
            clock::rfc3339(record.created_at)
        ),
    };
    Some(Verdict::missed_ping(format!(
        "{last}; a ping is expected every {} s with {} s of grace",
        record.spec.interval_seconds,
        record.spec.grace_seconds.unwrap_or(0)
    )))
}
