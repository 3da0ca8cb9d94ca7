//! Whole-queue operations: purge, stats, redrive from a dead-letter queue,
//! and the job that removes the data of a purged or deleted generation.

use plateau_sdk::jobs::Job;
use plateau_sdk::serde_json::json;
use plateau_sdk::{ApiError, Bucket, NewEvent, Params, Request, Response, clock};

use crate::api::{self, load as load_queue};
use crate::input::RedriveRequest;
use crate::record::{self, IndexEntry, Message, Queue, parse_index_key};
use crate::store;
use crate::views::{Redriven, Stats};

/// `POST /queues/{name}/purge`: every message goes at once (the queue moves
/// to a new generation); 204.
pub fn purge(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let name = &params["name"];
    let bucket = Bucket::caller()?;
    load_queue(&bucket, name)?;
    let generation = bucket.increment(&record::generation_key(name), 1)?;
    let mut old = None;
    bucket.update::<Queue, _>(&Queue::key(name), |current| {
        let Some(mut queue) = current else {
            return Err(api::not_found(name));
        };
        old = Some(queue.sid());
        queue.generation = generation;
        Ok(Some(queue))
    })?;
    if let Some(old) = old {
        api::collect_generation(&org, &old)?;
    }
    NewEvent::new("queues.queue.purged", "purge")
        .resource("queue", name)
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

/// `GET /queues/{name}/stats`: counts by state and the oldest message's
/// age, from the visibility index (linear in the queue's length).
pub fn stats(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let name = &params["name"];
    let bucket = Bucket::caller()?;
    let queue = load_queue(&bucket, name)?;
    let now = clock::now_millis();
    let (mut visible, mut in_flight, mut delayed) = (0u64, 0u64, 0u64);
    let mut oldest: Option<u64> = None;
    let mut cursor = None;
    loop {
        let page = bucket.list(&record::index_prefix(&queue.sid()), cursor.as_deref(), 200)?;
        for entry in &page.entries {
            let Some((at, _)) = parse_index_key(&entry.key) else {
                continue;
            };
            let index: IndexEntry = entry.json()?;
            if at <= now {
                visible += 1;
            } else if index.in_flight {
                in_flight += 1;
            } else {
                delayed += 1;
            }
            oldest = Some(oldest.map_or(index.sent_at, |o| o.min(index.sent_at)));
        }
        match page.next_cursor {
            Some(next) if !page.entries.is_empty() => cursor = Some(next),
            _ => break,
        }
    }
    let dead: Option<i64> = bucket.get(&record::dead_counter_key(name))?;
    Ok(Response::ok(&Stats {
        visible,
        in_flight,
        delayed,
        total: visible + in_flight + delayed,
        dead_lettered: dead.unwrap_or(0),
        oldest_age_seconds: oldest.map_or(0, |o| now.saturating_sub(o) / 1000),
    }))
}

/// `POST /queues/{name}/redrive`: moves up to `maxMessages` messages of
/// this (dead-letter) queue back to the queue each came from, or to
/// `targetQueue`. Answers how many moved and whether more remain.
pub fn redrive(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let (target, max) = if req.body.is_empty() {
        RedriveRequest::default().check()?
    } else {
        req.json::<RedriveRequest>()?.check()?
    };
    let name = &params["name"];
    let bucket = Bucket::caller()?;
    let queue = load_queue(&bucket, name)?;
    let sid = queue.sid();
    let fixed = target
        .as_deref()
        .map(|t| load_queue(&bucket, t))
        .transpose()?;
    let now = clock::now_millis();
    let page = bucket.list(&format!("m/{sid}/"), None, max as u32)?;
    let mut moved = 0u64;
    let mut skipped = 0u64;
    for entry in &page.entries {
        let Some(id) = entry.key.rsplit('/').next() else {
            continue;
        };
        let loaded = store::Loaded {
            raw: entry.value.clone(),
            message: store::decode(&entry.value, id)?,
        };
        let destination = match (&fixed, &loaded.message.source_queue) {
            (Some(queue), _) => Some(queue.clone()),
            (None, Some(source)) if source != name => bucket.get::<Queue>(&Queue::key(source))?,
            _ => None,
        };
        let Some(destination) = destination else {
            skipped += 1;
            continue;
        };
        if !store::swap(&bucket, &sid, &loaded, None)? {
            continue;
        }
        let back = Message {
            visible_at: now,
            receives: 0,
            receipt: None,
            first_received_at: None,
            source_queue: None,
            ..loaded.message.clone()
        };
        store::insert(&bucket, &destination.sid(), &back)?;
        moved += 1;
    }
    let remaining = page.next_cursor.is_some() || skipped > 0;
    NewEvent::new("queues.queue.redriven", "redrive")
        .resource("queue", name)
        .data(&json!({ "moved": moved, "targetQueue": target }))
        .audit()
        .emit()?;
    Ok(Response::ok(&Redriven {
        moved,
        skipped,
        remaining,
    }))
}

/// The most keys one collection run deletes (each is one write).
const CHUNK: u32 = 300;

/// Job `gc:{sid}`: deletes a chunk of the generation's keys, and runs again
/// until a run finds none (which also catches a write that raced the last
/// chunk).
pub fn collect(job: &Job) -> Result<(), String> {
    let Some(org) = job.organization_id.as_deref() else {
        return Ok(());
    };
    let sid = &job.payload;
    let bucket = Bucket::organization(org).map_err(|e| e.to_string())?;
    let mut deleted = 0;
    for prefix in record::generation_prefixes(sid) {
        let page = bucket
            .list(&prefix, None, CHUNK)
            .map_err(|e| e.to_string())?;
        for entry in page.entries {
            bucket.delete(&entry.key).map_err(|e| e.to_string())?;
            deleted += 1;
        }
    }
    if deleted > 0 {
        api::collect_generation(org, sid).map_err(|e| e.detail().to_owned())?;
    }
    Ok(())
}
