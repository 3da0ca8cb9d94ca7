//! The management routes: create, list, read, change and delete queues.

use plateau_sdk::jobs::{self, NewJob};
use plateau_sdk::{
    ApiError, Bucket, Namespace, NewEvent, Params, Request, Response, clock, paginate_kv_with,
};

use crate::input::{self, NewQueue, QueuePatch, Settings};
use crate::record::{self, Queue};
use crate::views::QueueView;

pub fn not_found(name: &str) -> ApiError {
    ApiError::not_found(format!(
        "queue {name} does not exist: list them with GET /queues"
    ))
}

/// The queue `name` of `bucket`, or 404.
pub fn load(bucket: &Bucket, name: &str) -> Result<Queue, ApiError> {
    if !input::is_queue_name(name) {
        return Err(not_found(name));
    }
    bucket
        .get(&Queue::key(name))?
        .ok_or_else(|| not_found(name))
}

fn settings(queue: &Queue) -> Settings {
    Settings {
        visibility_timeout_seconds: queue.visibility_timeout_seconds,
        retention_seconds: queue.retention_seconds,
        max_receives: queue.max_receives,
        dead_letter_queue: queue.dead_letter_queue.clone(),
    }
}

/// A named dead-letter queue must exist.
fn check_dead_letter_queue(bucket: &Bucket, settings: &Settings) -> Result<(), ApiError> {
    if let Some(dlq) = &settings.dead_letter_queue
        && bucket.get_raw(&Queue::key(dlq))?.is_none()
    {
        return Err(ApiError::validation(
            "deadLetterQueue",
            format!("queue {dlq} does not exist: create it first"),
        ));
    }
    Ok(())
}

/// Removes the data of generation `sid` in the background (job `gc:{sid}`).
pub fn collect_generation(org: &str, sid: &str) -> Result<(), ApiError> {
    jobs::schedule(
        NewJob::at(format!("gc:{sid}"), clock::now_millis())
            .namespace(Namespace::Organization(org.to_owned()))
            .payload(sid),
    )?;
    Ok(())
}

/// `POST /queues`: 201 with the queue.
pub fn create(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    req.caller.organization()?;
    let (name, settings) = req.json::<NewQueue>()?.check()?;
    let bucket = Bucket::caller()?;
    check_dead_letter_queue(&bucket, &settings)?;
    let now = clock::now_rfc3339();
    let queue = Queue {
        generation: bucket.increment(&record::generation_key(&name), 1)?,
        name: name.clone(),
        visibility_timeout_seconds: settings.visibility_timeout_seconds,
        retention_seconds: settings.retention_seconds,
        max_receives: settings.max_receives,
        dead_letter_queue: settings.dead_letter_queue,
        created_at: now.clone(),
        updated_at: now,
    };
    if !bucket.insert_new(&Queue::key(&name), &queue)? {
        return Err(ApiError::conflict(format!(
            "queue {name} already exists: choose another name or change it with PATCH /queues/{name}"
        )));
    }
    NewEvent::new("queues.queue.created", "create")
        .resource("queue", &name)
        .data(&QueueView::from(&queue))
        .audit()
        .emit()?;
    Ok(Response::created(&QueueView::from(&queue))
        .with_header("location", format!("/queues/{name}")))
}

/// `GET /queues`: by name, paginated like core lists.
pub fn list(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let page = paginate_kv_with(&Bucket::caller()?, "q/", &req.page_query()?, |entry| {
        Ok(QueueView::from(&entry.json::<Queue>()?))
    })?;
    Ok(page.into_response())
}

/// `GET /queues/{name}`
pub fn get(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let queue = load(&Bucket::caller()?, &params["name"])?;
    Ok(Response::ok(&QueueView::from(&queue)))
}

/// `PATCH /queues/{name}`: changes the settings sent.
pub fn update(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let name = &params["name"];
    let patch: QueuePatch = req.json()?;
    let bucket = Bucket::caller()?;
    load(&bucket, name)?;
    let now = clock::now_rfc3339();
    let mut checked = None;
    let updated = bucket.update::<Queue, _>(&Queue::key(name), |current| {
        let Some(mut queue) = current else {
            return Err(not_found(name));
        };
        let next = patch.apply(name, settings(&queue))?;
        queue.visibility_timeout_seconds = next.visibility_timeout_seconds;
        queue.retention_seconds = next.retention_seconds;
        queue.max_receives = next.max_receives;
        queue.dead_letter_queue = next.dead_letter_queue.clone();
        queue.updated_at = now.clone();
        checked = Some(next);
        Ok(Some(queue))
    })?;
    let queue = updated.ok_or_else(|| not_found(name))?;
    if let Some(next) = &checked {
        check_dead_letter_queue(&bucket, next)?;
    }
    NewEvent::new("queues.queue.updated", "update")
        .resource("queue", name)
        .data(&QueueView::from(&queue))
        .audit()
        .emit()?;
    Ok(Response::ok(&QueueView::from(&queue)))
}

/// `DELETE /queues/{name}`: 204; its messages go with it.
pub fn delete(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let name = &params["name"];
    let bucket = Bucket::caller()?;
    if !input::is_queue_name(name) {
        return Err(not_found(name));
    }
    let raw = bucket
        .get_raw(&Queue::key(name))?
        .ok_or_else(|| not_found(name))?;
    let queue: Queue = serde_json::from_slice(&raw)
        .map_err(|e| ApiError::internal(format!("queue {name} is not readable: {e}")))?;
    if !bucket.compare_and_swap(&Queue::key(name), Some(&raw), None)? {
        return Err(ApiError::conflict(format!(
            "queue {name} is being changed concurrently: retry the request"
        )));
    }
    bucket.delete(&record::dead_counter_key(name))?;
    collect_generation(&org, &queue.sid())?;
    NewEvent::new("queues.queue.deleted", "delete")
        .resource("queue", name)
        .audit()
        .emit()?;
    Ok(Response::no_content())
}
