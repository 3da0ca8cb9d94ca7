//! The run routes: start (idempotent by key), list (filtered, paginated),
//! read with the step history, and cancel.

use plateau_sdk::jobs;
use plateau_sdk::serde_json::{Value, json};
use plateau_sdk::{
    ApiError, Bucket, DEFAULT_LIMIT, Namespace, NewEvent, PageQuery, Params, Request, Response,
    clock, paginate_kv_with,
};

use crate::input::{self, StartRequest};
use crate::record::{self, Current, Run, Status, StepRecord, StepStatus};
use crate::store::{self, Loaded};
use crate::views::{RunView, StepView};

pub fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!(
        "run {id} does not exist: list runs with GET /workflows/runs"
    ))
}

/// The run `id` of `bucket`, or 404.
pub fn load(bucket: &Bucket, id: &str) -> Result<Loaded, ApiError> {
    if !record::is_run_id(id) {
        return Err(not_found(id));
    }
    store::load(bucket, id)?.ok_or_else(|| not_found(id))
}

/// A run as the API shows it (without its step history).
pub fn view(run: &Run) -> RunView {
    RunView::new(run)
}

/// Emits `workflows.run.{what}` for `run`.
pub fn emit(run: &Run, what: &str, organization: Option<&str>) -> Result<(), ApiError> {
    let mut event = NewEvent::new(format!("workflows.run.{what}"), what)
        .resource("workflow_run", &run.id)
        .data(&json!({
            "workflow": run.workflow,
            "status": run.status.as_str(),
            "step": run.step.as_ref().map(|s| s.name.clone()),
            "error": run.error,
        }));
    if let Some(org) = organization {
        event = event.organization(org);
    }
    event.emit()?;
    Ok(())
}

/// `POST /workflows/runs`: 201 with the run; 200 with the run started
/// before with the same `idempotencyKey`.
pub fn start(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    req.caller.organization()?;
    let start = req.json::<StartRequest>()?.check()?;
    let bucket = Bucket::caller()?;
    let now = clock::now_millis();
    let id = record::new_run_id(now);
    if let Some(key) = &start.idempotency_key {
        let k = record::idempotency_key(key);
        if let Some(existing) = bucket.get::<String>(&k)? {
            let loaded = load(&bucket, &existing)?;
            return Ok(Response::ok(&view(&loaded.run)));
        }
        if !bucket.insert_new(&k, &id)? {
            return Err(ApiError::conflict(format!(
                "a run with idempotencyKey {key} is being started concurrently: retry the request"
            )));
        }
    }
    let run = Run {
        id: id.clone(),
        workflow: start.workflow,
        input: start.input,
        status: Status::Running,
        max_attempts: start.max_attempts,
        idempotency_key: start.idempotency_key,
        created_at: now,
        updated_at: now,
        finished_at: None,
        step: Some(Current {
            seq: 0,
            name: start.step,
            attempt: 0,
            ready_at: now,
            lease: None,
            wake_at: None,
            first_claimed_at: None,
            errors: Vec::new(),
        }),
        last_output: Value::Null,
        output: None,
        error: None,
    };
    if !store::insert(&bucket, &run)? {
        return Err(ApiError::conflict("a run id collided: retry the request"));
    }
    emit(&run, "started", None)?;
    Ok(Response::created(&view(&run)).with_header("location", format!("/workflows/runs/{id}")))
}

/// `GET /workflows/runs`: oldest first, paginated (50 a page unless
/// `limit` says otherwise), optionally only of `workflow` and `status`.
pub fn list(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let query = req.query();
    let (workflow, status) = input::list_filters(query.get("workflow"), query.get("status"))?;
    let mut page = req.page_query()?;
    if !page.is_paginated() {
        page = PageQuery::first(DEFAULT_LIMIT);
    }
    let bucket = Bucket::caller()?;
    let prefix = record::list_prefix(workflow.as_deref(), status);
    let direct = workflow.is_none() && status.is_none();
    let result = paginate_kv_with(&bucket, &prefix, &page, |entry| {
        if direct {
            let id = entry.key.trim_start_matches("r/");
            return Ok(view(&store::decode(&entry.value, id)?));
        }
        let id = entry.key.rsplit('/').next().unwrap_or_default();
        Ok(view(&load(&bucket, id)?.run))
    })?;
    Ok(result.into_response())
}

/// `GET /workflows/runs/{id}`: the run with its step history, oldest step
/// first; the current step is `currentStep`.
pub fn get(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let loaded = load(&bucket, &params["id"])?;
    let steps: Vec<StepView> = bucket
        .list_all(&StepRecord::prefix(&loaded.run.id))?
        .into_iter()
        .map(|e| Ok(StepView::from(&e.json::<StepRecord>()?)))
        .collect::<Result<_, ApiError>>()?;
    let mut run = view(&loaded.run);
    run.steps = Some(steps);
    Ok(Response::ok(&run))
}

/// `POST /workflows/runs/{id}/cancel`: 200 with the cancelled run; 409 for
/// a finished run. A worker holding a lease on it is refused from then on.
pub fn cancel(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let loaded = load(&bucket, &params["id"])?;
    let run = &loaded.run;
    if !run.status.is_active() {
        return Err(ApiError::conflict(format!(
            "run {} is already {}: only running and sleeping runs can be cancelled",
            run.id,
            run.status.as_str()
        )));
    }
    let now = clock::now_millis();
    let mut next = run.clone();
    next.status = Status::Cancelled;
    next.error = Some("cancelled".to_owned());
    next.updated_at = now;
    next.finished_at = Some(now);
    let step = next.step.take();
    if !store::swap(&bucket, &loaded, &next)? {
        return Err(ApiError::conflict(format!(
            "run {} is being changed concurrently: retry the request",
            run.id
        )));
    }
    if let Some(step) = step {
        let record = StepRecord::of(&step, StepStatus::Cancelled, None, now);
        store::record_step(&bucket, &run.id, &record)?;
    }
    if run.status == Status::Sleeping {
        jobs::cancel(Namespace::Caller, &crate::worker::wake_job_key(&run.id))?;
    }
    emit(&next, "cancelled", None)?;
    Ok(Response::ok(&view(&next)))
}
