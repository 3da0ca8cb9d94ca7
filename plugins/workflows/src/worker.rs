//! The worker routes: claim the next runnable step under a lease, and
//! report it `complete`, `fail` or `sleep` with the lease token; and the
//! job that wakes a sleeping run on time.
//!
//! A claim picks at random among the first [`CANDIDATES`] due entries of
//! the ready index, so concurrent workers spread over the runnable steps;
//! two that still pick the same run race on its compare-and-swap, committed
//! at once with `kv.claim` (kv@0.4.0): the loser moves on to the next
//! candidate rather than answering 409. A lease stays when the request
//! fails after its claim: the step is then claimable again once the lease
//! runs out. Each claim is an attempt: a step whose lease ran out on its
//! last attempt fails the run instead of being claimed again.

use plateau_sdk::jobs::{self, Job, NewJob};
use plateau_sdk::serde_json::Value;
use plateau_sdk::{ApiError, Bucket, Params, Request, Response, clock};

use crate::api::{self, emit, view};
use crate::backoff;
use crate::input::{CompleteRequest, FailRequest, NextRequest, SleepRequest};
use crate::record::{
    self, AttemptError, Current, Lease, READY_PREFIX, Run, Status, StepRecord, StepStatus,
    parse_ready_key,
};
use crate::store::{self, Loaded};
use crate::views::Claim;

/// How many due entries a claim chooses among.
pub const CANDIDATES: usize = 200;
/// The index entries one claim reads at most while filtering by workflow.
const SCAN_LIMIT: usize = 1000;
const PAGE: u32 = 200;

pub fn wake_job_key(id: &str) -> String {
    format!("wake:{id}")
}

/// The due entries at the head of the ready index, of `workflows` if given.
fn due(
    bucket: &Bucket,
    workflows: Option<&[String]>,
    now: u64,
) -> Result<Vec<(u64, String)>, ApiError> {
    let mut found = Vec::new();
    let mut cursor: Option<String> = None;
    let mut scanned = 0;
    loop {
        let page = bucket.list(READY_PREFIX, cursor.as_deref(), PAGE)?;
        for entry in &page.entries {
            scanned += 1;
            let Some((at, id)) = parse_ready_key(&entry.key) else {
                continue;
            };
            if at > now {
                return Ok(found);
            }
            let wanted = workflows
                .is_none_or(|names| names.iter().any(|n| n.as_bytes() == entry.value.as_slice()));
            if wanted {
                found.push((at, id.to_owned()));
                if found.len() == CANDIDATES {
                    return Ok(found);
                }
            }
        }
        match page.next_cursor {
            Some(next) if !page.entries.is_empty() && scanned < SCAN_LIMIT => cursor = Some(next),
            _ => return Ok(found),
        }
    }
}

/// `POST /workflows/next`: 200 with the claimed step, or 204 when nothing
/// is runnable.
pub fn next(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    req.caller.organization()?;
    let (workflows, lease_seconds) = if req.body.is_empty() {
        NextRequest::default().check()?
    } else {
        req.json::<NextRequest>()?.check()?
    };
    let bucket = Bucket::caller()?;
    let now = clock::now_millis();
    let due = due(&bucket, workflows.as_deref(), now)?;
    let start = record::random_below(due.len());
    for i in 0..due.len() {
        let (at, id) = &due[(start + i) % due.len()];
        let Some(loaded) = store::load(&bucket, id)? else {
            continue;
        };
        let ready = loaded.run.step.as_ref().map(|s| s.ready_at);
        if !loaded.run.status.is_active() || ready != Some(*at) {
            continue;
        }
        if let Some(claim) = claim(&bucket, loaded, now, lease_seconds)? {
            return Ok(Response::ok(&claim));
        }
    }
    Ok(Response::no_content())
}

/// Claims the current step of an active, due run; `None` if it was taken,
/// or failed because its last attempt's lease ran out.
fn claim(
    bucket: &Bucket,
    loaded: Loaded,
    now: u64,
    lease_seconds: u32,
) -> Result<Option<Claim>, ApiError> {
    let run = &loaded.run;
    let step = run.step.as_ref().expect("an active run has a step");
    let mut next = run.clone();
    next.updated_at = now;
    if step.lease.is_some() && step.attempt >= run.max_attempts {
        let error = format!(
            "the lease of attempt {} of step {} ran out and no attempts are left",
            step.attempt, step.name
        );
        fail_run(bucket, &loaded, next, error, now, None)?;
        return Ok(None);
    }
    let token = record::new_token();
    let expires_at = now + u64::from(lease_seconds) * 1000;
    let mut current = step.clone();
    current.attempt += 1;
    current.ready_at = expires_at;
    current.lease = Some(Lease {
        token: token.clone(),
        expires_at,
    });
    current.first_claimed_at = current.first_claimed_at.or(Some(now));
    let was_sleeping = run.status == Status::Sleeping;
    next.status = Status::Running;
    next.step = Some(current.clone());
    if !store::claim(bucket, &loaded, &next)? {
        return Ok(None);
    }
    if was_sleeping {
        emit(&next, "woken", None)?;
    }
    Ok(Some(Claim {
        run_id: run.id.clone(),
        workflow: run.workflow.clone(),
        input: run.input.clone(),
        step: current.name,
        seq: current.seq,
        attempt: current.attempt,
        max_attempts: run.max_attempts,
        previous_output: run.last_output.clone(),
        lease_token: token,
        lease_expires_at: clock::rfc3339(expires_at),
    }))
}

/// Fails the run `loaded` as `next` (already stamped) with `error`; the
/// failed run, or `None` on a lost race.
fn fail_run(
    bucket: &Bucket,
    loaded: &Loaded,
    mut next: Run,
    error: String,
    now: u64,
    organization: Option<&str>,
) -> Result<Option<Run>, ApiError> {
    let step = next.step.take();
    next.status = Status::Failed;
    next.error = Some(error);
    next.finished_at = Some(now);
    if !store::swap(bucket, loaded, &next)? {
        return Ok(None);
    }
    if let Some(step) = step {
        store::record_step(
            bucket,
            &next.id,
            &StepRecord::of(&step, StepStatus::Failed, None, now),
        )?;
    }
    emit(&next, "failed", organization)?;
    Ok(Some(next))
}

/// The run `id` if `token` is the live lease of its current step.
fn by_lease(bucket: &Bucket, id: &str, token: &str, now: u64) -> Result<Loaded, ApiError> {
    let loaded = api::load(bucket, id)?;
    let run = &loaded.run;
    if !run.status.is_active() {
        return Err(ApiError::conflict(format!(
            "run {id} is {}: its steps can no longer be reported",
            run.status.as_str()
        )));
    }
    let step = run.step.as_ref().expect("an active run has a step");
    match &step.lease {
        Some(lease) if lease.token == token && lease.expires_at > now => Ok(loaded),
        Some(lease) if lease.token == token => Err(ApiError::conflict(format!(
            "the lease on step {} of run {id} expired at {}: the step is claimable again; claim work with POST /workflows/next",
            step.name,
            clock::rfc3339(lease.expires_at)
        ))),
        _ => Err(ApiError::conflict(format!(
            "lease token is stale: step {} of run {id} was claimed again or reported since; claim work with POST /workflows/next",
            step.name
        ))),
    }
}

fn lost_race(id: &str) -> ApiError {
    ApiError::conflict(format!(
        "run {id} is being changed concurrently: retry the request"
    ))
}

/// A fresh step `name` at `seq`, claimable at `ready_at`.
fn new_step(seq: u32, name: String, ready_at: u64, wake_at: Option<u64>) -> Current {
    Current {
        seq,
        name,
        attempt: 0,
        ready_at,
        lease: None,
        wake_at,
        first_claimed_at: None,
        errors: Vec::new(),
    }
}

/// `POST /workflows/runs/{id}/complete`: the step's output; with
/// `nextStep` the run goes on with that step, without it the run completes
/// with the output. 200 with the run.
pub fn complete(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let (token, output, next_step) = req.json::<CompleteRequest>()?.check()?;
    let bucket = Bucket::caller()?;
    let now = clock::now_millis();
    let loaded = by_lease(&bucket, &params["id"], &token, now)?;
    let run = &loaded.run;
    let step = run.step.as_ref().expect("a leased run has a step");
    let record = StepRecord::of(step, StepStatus::Completed, Some(output.clone()), now);
    let mut next = run.clone();
    next.updated_at = now;
    match next_step {
        Some(name) => {
            next.step = Some(new_step(step.seq + 1, name, now, None));
            next.last_output = output;
        }
        None => {
            next.step = None;
            next.status = Status::Completed;
            next.finished_at = Some(now);
            next.output = Some(output);
            next.last_output = Value::Null;
        }
    }
    if !store::swap(&bucket, &loaded, &next)? {
        return Err(lost_race(&run.id));
    }
    store::record_step(&bucket, &run.id, &record)?;
    if next.status == Status::Completed {
        emit(&next, "completed", None)?;
    }
    Ok(Response::ok(&view(&next)))
}

/// `POST /workflows/runs/{id}/fail`: the attempt's error; the step is
/// tried again after a backoff unless it was its last attempt or `retry`
/// is false, which fails the run. 200 with the run.
pub fn fail(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let (token, error, retry) = req.json::<FailRequest>()?.check()?;
    let bucket = Bucket::caller()?;
    let now = clock::now_millis();
    let loaded = by_lease(&bucket, &params["id"], &token, now)?;
    let run = &loaded.run;
    let mut step = run.step.clone().expect("a leased run has a step");
    step.errors.push(AttemptError {
        attempt: step.attempt,
        error: error.clone(),
        at: now,
    });
    let mut next = run.clone();
    next.updated_at = now;
    if retry && step.attempt < run.max_attempts {
        step.ready_at = now + backoff::delay_ms(step.attempt, record::random_u64());
        step.lease = None;
        next.step = Some(step);
        if !store::swap(&bucket, &loaded, &next)? {
            return Err(lost_race(&run.id));
        }
    } else {
        let attempts = step.attempt;
        let name = step.name.clone();
        next.step = Some(step);
        let why = format!("step {name} failed on attempt {attempts}: {error}");
        next =
            fail_run(&bucket, &loaded, next, why, now, None)?.ok_or_else(|| lost_race(&run.id))?;
    }
    Ok(Response::ok(&view(&next)))
}

/// `POST /workflows/runs/{id}/sleep`: the step ends (with its output, if
/// any) and the run sleeps `seconds` on the host clock, then goes on with
/// `nextStep` (the same step name when absent). 200 with the run.
pub fn sleep(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let sleep = req.json::<SleepRequest>()?.check()?;
    let bucket = Bucket::caller()?;
    let now = clock::now_millis();
    let loaded = by_lease(&bucket, &params["id"], &sleep.lease_token, now)?;
    let run = &loaded.run;
    let step = run.step.as_ref().expect("a leased run has a step");
    let wake_at = now + sleep.seconds * 1000;
    let mut record = StepRecord::of(step, StepStatus::Slept, Some(sleep.output.clone()), now);
    record.wake_at = Some(wake_at);
    let name = sleep.next_step.unwrap_or_else(|| step.name.clone());
    let mut next = run.clone();
    next.updated_at = now;
    next.status = Status::Sleeping;
    next.step = Some(new_step(step.seq + 1, name, wake_at, Some(wake_at)));
    if !sleep.output.is_null() {
        next.last_output = sleep.output;
    }
    if !store::swap(&bucket, &loaded, &next)? {
        return Err(lost_race(&run.id));
    }
    store::record_step(&bucket, &run.id, &record)?;
    jobs::schedule(NewJob::at(wake_job_key(&run.id), wake_at).payload(run.id.clone()))?;
    emit(&next, "sleeping", None)?;
    Ok(Response::ok(&view(&next)))
}

/// Job `wake:{id}`: a sleeping run whose time has come is running again
/// (its step was claimable from its wake time on already).
pub fn wake(job: &Job) -> Result<(), String> {
    let Some(org) = job.organization_id.as_deref() else {
        return Ok(());
    };
    let id = &job.payload;
    let bucket = Bucket::organization(org).map_err(|e| e.to_string())?;
    let loaded = match store::load(&bucket, id) {
        Ok(Some(loaded)) => loaded,
        Ok(None) => return Ok(()),
        Err(e) => return Err(e.detail().to_owned()),
    };
    let now = clock::now_millis();
    let due = loaded
        .run
        .step
        .as_ref()
        .and_then(|s| s.wake_at)
        .is_some_and(|at| at <= now);
    if loaded.run.status != Status::Sleeping || !due {
        return Ok(());
    }
    let mut next = loaded.run.clone();
    next.status = Status::Running;
    next.updated_at = now;
    let woke = store::swap(&bucket, &loaded, &next).map_err(|e| e.detail().to_owned())?;
    if !woke {
        return Err(format!("run {id} changed while waking it: try again"));
    }
    emit(&next, "woken", Some(org)).map_err(|e| e.detail().to_owned())
}
