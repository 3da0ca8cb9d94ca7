//! The routes: create, list, read, change and delete cron jobs, trigger a
//! run now, and list a job's runs.

use plateau_sdk::serde_json::{Map, Value, json};
use plateau_sdk::{
    ApiError, Bucket, NewEvent, Params, Problem, Request, Response, clock, jobs, paginate_kv,
    paginate_kv_with,
};

use crate::input::{Checked, JobInput};
use crate::record::{self, CronJob, Run};
use crate::run;
use crate::stored::{self, Stored};
use crate::views::{JobView, RunView};

/// Cron jobs per plan (spec section 8).
pub fn plan_limit(plan: Option<&str>) -> u64 {
    match plan {
        Some("starter") => 10,
        Some("pro") => 50,
        Some("scale") => 200,
        _ => 2,
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!(
        "cron job {id} does not exist: list them with GET /cron-jobs"
    ))
}

fn load(bucket: &Bucket, id: &str) -> Result<Stored, ApiError> {
    if !record::is_id(id) {
        return Err(not_found(id));
    }
    Stored::load(bucket, id)?.ok_or_else(|| not_found(id))
}

/// A job as the API shows it.
pub fn view(job: &CronJob) -> JobView {
    JobView::from(job)
}

fn apply(job: &mut CronJob, checked: Checked) {
    job.name = checked.name;
    job.kind = checked.kind;
    job.image = checked.image;
    job.command = checked.command;
    job.schedule = checked.schedule;
    job.timezone = checked.timezone;
    job.url = checked.url;
    job.method = checked.method;
    job.headers = checked.headers;
    job.body = checked.body;
    job.timeout_seconds = checked.timeout_seconds;
    job.starting_deadline_seconds = Some(checked.starting_deadline_seconds);
    job.paused = checked.paused;
}

fn summary(job: &CronJob) -> Value {
    json!({ "name": job.name, "schedule": job.schedule, "timezone": job.timezone, "type": job.kind, "paused": job.paused, "image": (job.kind == "container").then_some(&job.image) })
}

/// 409 `plan_limit_reached`, the host's problem for a plan limit.
fn plan_limit_reached(limit: u64, plan: &str) -> Response {
    let problem = Problem::new(
        409,
        "plan_limit_reached",
        format!("the {plan} plan allows {limit} cron jobs: delete one or upgrade the plan"),
    );
    Response::from_problem(&problem)
}

/// `POST /cron-jobs`: 201 with the job and its `nextRunAt`.
pub fn create(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let checked = req.json::<JobInput>()?.check(&org)?;
    let bucket = Bucket::caller()?;
    let plan = req.caller.plan.clone().unwrap_or_else(|| "free".to_owned());
    let limit = plan_limit(Some(&plan));
    if bucket.count("j/")? >= limit {
        return Ok(plan_limit_reached(limit, &plan));
    }
    let now = clock::now_millis();
    let mut job = CronJob {
        id: record::new_id(now),
        name: String::new(),
        schedule: String::new(),
        timezone: String::new(),
        kind: "http".to_owned(),
        url: String::new(),
        method: String::new(),
        headers: Vec::new(),
        body: None,
        timeout_seconds: 0,
        starting_deadline_seconds: None,
        paused: false,
        image: String::new(),
        command: Vec::new(),
        next_run_at: None,
        last_run: Some(0),
        created_at: now,
        updated_at: now,
    };
    apply(&mut job, checked);
    run::advance(&mut job, now)?;
    run::schedule_delivery(&org, &job)?;
    if !stored::insert(&bucket, &job)? {
        return Err(ApiError::conflict(
            "a cron job id collided: retry the request",
        ));
    }
    NewEvent::new("cron.job.created", "create")
        .resource("cron_job", &job.id)
        .data(&summary(&job))
        .audit()
        .emit()?;
    Ok(Response::created(&view(&job)).with_header("location", format!("/cron-jobs/{}", job.id)))
}

/// `GET /cron-jobs`
pub fn list(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let page = paginate_kv_with(&Bucket::caller()?, "j/", &req.page_query()?, |entry| {
        Ok(view(&entry.json::<CronJob>()?))
    })?;
    Ok(page.into_response())
}

/// `GET /cron-jobs/{id}`
pub fn get(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    Ok(Response::ok(&view(
        &load(&Bucket::caller()?, &params["id"])?.job,
    )))
}

/// `PATCH /cron-jobs/{id}`: the fields sent, over the stored ones.
pub fn update(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let id = &params["id"];
    let bucket = Bucket::caller()?;
    let old = load(&bucket, id)?;
    let mut job = old.job.clone();
    let patch: Map<String, Value> = req.json()?;
    let mut merged = match serde_json::to_value(view(&job)).unwrap_or_default() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    for key in ["id", "nextRunAt", "createdAt", "updatedAt"] {
        merged.remove(key);
    }
    merged.extend(patch);
    let input: JobInput = plateau_sdk::contract::json::parse_json_value(Value::Object(merged))?;
    apply(&mut job, input.check(&org)?);
    let now = clock::now_millis();
    job.updated_at = now;
    run::reschedule(&org, &mut job, now)?;
    stored::save(&bucket, &old, &job)?;
    NewEvent::new("cron.job.updated", "update")
        .resource("cron_job", id)
        .data(&summary(&job))
        .audit()
        .emit()?;
    Ok(Response::ok(&view(&job)))
}

/// `DELETE /cron-jobs/{id}`: 204; its runs go with it.
pub fn delete(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let id = &params["id"];
    let bucket = Bucket::caller()?;
    stored::remove(&bucket, &load(&bucket, id)?)?;
    jobs::cancel(plateau_sdk::Namespace::Organization(org), &run::job_key(id))?;
    for entry in bucket.list(&record::runs_prefix(id), None, 200)?.entries {
        bucket.delete(&entry.key)?;
    }
    bucket.delete(&record::run_counter_key(id))?;
    NewEvent::new("cron.job.deleted", "delete")
        .resource("cron_job", id)
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

/// `POST /cron-jobs/{id}/trigger`: runs the job now; 201 with the run.
pub fn trigger(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let id = &params["id"];
    let bucket = Bucket::caller()?;
    let job = load(&bucket, id)?;
    let mut run = run::execute(&org, &job.job, "manual", clock::now_millis());
    if stored::record_run(&bucket, job, &mut run, None)?.is_none() {
        return Err(not_found(id));
    }
    NewEvent::new("cron.job.triggered", "trigger")
        .resource("cron_job", id)
        .data(&json!({ "run": run.number, "status": run.status }))
        .emit()?;
    Ok(Response::created(&run_view(&run)))
}

fn run_view(run: &Run) -> RunView {
    RunView::from(run)
}

/// `GET /cron-jobs/{id}/runs`: newest first, paginated.
pub fn runs(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let id = &params["id"];
    let bucket = Bucket::caller()?;
    load(&bucket, id)?;
    let page = paginate_kv::<Run>(&bucket, &record::runs_prefix(id), &req.page_query()?)?;
    Ok(page.map(|r| run_view(&r)).into_response())
}
