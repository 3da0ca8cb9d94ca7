//! The message routes: send (one or a batch), receive, acknowledge (one or
//! a batch) and change visibility.
//!
//! Delivery is at least once. A receive hides each message it returns for
//! the visibility timeout and gives it a fresh receipt token; only the
//! handle of that receive acknowledges or changes the message, so a
//! consumer whose timeout ran out and whose message was received again
//! cannot acknowledge the other consumer's delivery.
//!
//! A receive claims each message it returns with `kv.claim` (kv@0.4.0): a
//! compare-and-swap committed at once with the move of the message's index
//! entry. Concurrent receivers pick among the visible head of the queue at
//! random to spread out; one that loses a claim to another skips to the
//! next candidate, so a lost race costs a candidate, not the receive. A
//! claim stays when the request fails afterwards: the message is then
//! hidden until its visibility timeout passes, and delivered again, which
//! at-least-once delivery allows.
//!
//! With `waitSeconds` (long polling), a receive that finds nothing parks in
//! `kv.wait` on the queue's visibility index until a send (or any change
//! of the index) commits, or until the next delayed or hidden message
//! becomes visible, and tries again, until the wait is over.

use std::time::{Duration, Instant};

use plateau_sdk::{ApiError, Bucket, Params, Request, Response, clock};

use crate::api::load as load_queue;
use crate::input::{
    AckRequest, Acks, NewBatch, NewMessage, Outgoing, Receive, ReceiveRequest, VisibilityRequest,
};
use crate::record::{self, Dedupe, Message, Queue, parse_index_key};
use crate::store::{self, Loaded};
use crate::views::{AckFailure, Acked, Received, ReceivedBatch, Sent, SentBatch};

/// How many index entries a receive reads to choose from.
const HEAD: u32 = 100;

/// Stores one message; `(id, duplicate)`.
fn send_one(
    bucket: &Bucket,
    queue: &Queue,
    out: Outgoing,
    now: u64,
) -> Result<(String, bool), ApiError> {
    let sid = queue.sid();
    let id = record::new_message_id(now);
    if let Some(dedupe_id) = &out.dedupe_id {
        let key = Dedupe::key(&sid, dedupe_id);
        let current = bucket.get_raw(&key)?;
        if let Some(raw) = &current
            && let Ok(seen) = serde_json::from_slice::<Dedupe>(raw)
            && now < seen.at + record::DEDUPE_WINDOW_MS
        {
            return Ok((seen.message_id, true));
        }
        let seen = serde_json::to_vec(&Dedupe {
            message_id: id.clone(),
            at: now,
        })
        .map_err(|e| ApiError::internal(format!("dedupe record does not serialize: {e}")))?;
        if !bucket.compare_and_swap(&key, current.as_deref(), Some(&seen))? {
            return Err(ApiError::conflict(format!(
                "dedupeId {dedupe_id} is being sent concurrently: retry the request"
            )));
        }
    }
    let message = Message {
        id: id.clone(),
        body: out.body,
        sent_at: now,
        visible_at: now + u64::from(out.delay_seconds) * 1000,
        receives: 0,
        receipt: None,
        first_received_at: None,
        source_queue: None,
    };
    if !store::insert(bucket, &sid, &message)? {
        return Err(ApiError::conflict(
            "a message id collided: retry the request",
        ));
    }
    Ok((id, false))
}

fn sent_view(id: &str, duplicate: bool) -> Sent {
    Sent {
        id: id.to_owned(),
        duplicate,
    }
}

/// `POST /queues/{name}/messages`: 201 with the id; 200 with the first
/// message's id when `dedupeId` was sent in the last 5 minutes.
pub fn send(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let out = req.json::<NewMessage>()?.check()?;
    let bucket = Bucket::caller()?;
    let queue = load_queue(&bucket, &params["name"])?;
    let (id, duplicate) = send_one(&bucket, &queue, out, clock::now_millis())?;
    let status = if duplicate { 200 } else { 201 };
    Ok(Response::json(status, &sent_view(&id, duplicate)))
}

/// `POST /queues/{name}/messages/batch`: 1 to 10 messages, all or none.
pub fn send_batch(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let batch = req.json::<NewBatch>()?.check()?;
    let bucket = Bucket::caller()?;
    let queue = load_queue(&bucket, &params["name"])?;
    let now = clock::now_millis();
    let mut sent = Vec::with_capacity(batch.len());
    for out in batch {
        let (id, duplicate) = send_one(&bucket, &queue, out, now)?;
        sent.push(sent_view(&id, duplicate));
    }
    Ok(Response::ok(&SentBatch { messages: sent }))
}

/// `POST /queues/{name}/receive`: up to `maxMessages` visible messages,
/// each with the receipt handle of this receive; with `waitSeconds`, waits
/// up to that long for one when none is visible.
pub fn receive(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let asked = if req.body.is_empty() {
        ReceiveRequest::default().check()?
    } else {
        req.json::<ReceiveRequest>()?.check()?
    };
    let bucket = Bucket::caller()?;
    let queue = load_queue(&bucket, &params["name"])?;
    let prefix = record::index_prefix(&queue.sid());
    let started = Instant::now();
    let wait = Duration::from_secs(u64::from(asked.wait_seconds));
    loop {
        let now = clock::now_millis();
        let (received, next_visible) = receive_once(&bucket, &queue, &asked, now)?;
        let left = wait.saturating_sub(started.elapsed());
        if !received.is_empty() || left.is_zero() {
            return Ok(Response::ok(&ReceivedBatch { messages: received }));
        }
        // Until a change of the index commits, or the next hidden message
        // shows (the host clock may be a test's: at least 1 ms).
        let slice = match next_visible {
            Some(at) => left.min(Duration::from_millis(at.saturating_sub(now).max(1))),
            None => left,
        };
        let slice_ms = u32::try_from(slice.as_millis()).unwrap_or(u32::MAX).max(1);
        let parked = Instant::now();
        let woke = bucket.wait(&prefix, slice_ms)?;
        // The host refused to park (too many parked calls): answer now
        // rather than spin.
        if !woke && parked.elapsed() < slice / 2 {
            return Ok(Response::ok(&ReceivedBatch { messages: received }));
        }
    }
}

/// One pass over the visible head: the messages received, and when the
/// first message of the index that is not visible yet becomes visible.
fn receive_once(
    bucket: &Bucket,
    queue: &Queue,
    asked: &Receive,
    now: u64,
) -> Result<(Vec<Received>, Option<u64>), ApiError> {
    let sid = queue.sid();
    let visibility = asked.visibility.unwrap_or(queue.visibility_timeout_seconds);
    let visibility_ms = u64::from(visibility) * 1000;
    let head = bucket.list(&record::index_prefix(&sid), None, HEAD)?;
    let indexed: Vec<(u64, String)> = head
        .entries
        .iter()
        .filter_map(|e| parse_index_key(&e.key))
        .map(|(at, id)| (at, id.to_owned()))
        .collect();
    let split = indexed.partition_point(|(at, _)| *at <= now);
    let next_visible = indexed.get(split).map(|(at, _)| *at);
    let due = &indexed[..split];
    let start = record::random_below(due.len());
    let mut received = Vec::new();
    for i in 0..due.len() {
        if received.len() == asked.max {
            break;
        }
        let (at, id) = &due[(start + i) % due.len()];
        let Some(loaded) = store::load(bucket, &sid, id)? else {
            continue;
        };
        if loaded.message.visible_at != *at {
            continue;
        }
        if let Some(message) = deliver(bucket, queue, loaded, now, visibility_ms)? {
            received.push(message);
        }
    }
    Ok((received, next_visible))
}

/// Receives one visible message, or retires it: past retention it is
/// dropped, past `maxReceives` it moves to the dead-letter queue. Each is a
/// claim: `None` when another request changed the message first.
fn deliver(
    bucket: &Bucket,
    queue: &Queue,
    loaded: Loaded,
    now: u64,
    visibility_ms: u64,
) -> Result<Option<Received>, ApiError> {
    let sid = queue.sid();
    let message = &loaded.message;
    if now >= message.sent_at + u64::from(queue.retention_seconds) * 1000 {
        store::claim(bucket, &sid, &loaded, None, Vec::new())?;
        return Ok(None);
    }
    if let Some(max) = queue.max_receives
        && message.receives >= max
    {
        dead_letter(bucket, queue, &loaded, now)?;
        return Ok(None);
    }
    let token = record::new_token();
    let next = Message {
        receives: message.receives + 1,
        receipt: Some(token.clone()),
        first_received_at: message.first_received_at.or(Some(now)),
        visible_at: now + visibility_ms,
        ..message.clone()
    };
    if !store::claim(bucket, &sid, &loaded, Some(&next), Vec::new())? {
        return Ok(None);
    }
    Ok(Some(Received {
        receipt_handle: record::receipt_handle(&next.id, &token),
        receives: next.receives,
        sent_at: clock::rfc3339(next.sent_at),
        first_received_at: next.first_received_at.map(clock::rfc3339),
        id: next.id,
        body: next.body,
    }))
}

/// Moves a message that was received `maxReceives` times to the queue's
/// dead-letter queue, or drops it when there is none: one claim, so the
/// message is never in neither queue. The dead-letter counter is a
/// statistic, counted at the request's commit.
fn dead_letter(bucket: &Bucket, queue: &Queue, loaded: &Loaded, now: u64) -> Result<(), ApiError> {
    let target = match &queue.dead_letter_queue {
        Some(dlq) => bucket.get::<Queue>(&Queue::key(dlq))?,
        None => None,
    };
    let also = match &target {
        Some(dlq) => {
            let moved = Message {
                visible_at: now,
                receives: 0,
                receipt: None,
                first_received_at: None,
                source_queue: Some(queue.name.clone()),
                ..loaded.message.clone()
            };
            store::insert_writes(&dlq.sid(), &moved)?
        }
        None => Vec::new(),
    };
    if !store::claim(bucket, &queue.sid(), loaded, None, also)? {
        return Ok(());
    }
    bucket.increment(&record::dead_counter_key(&queue.name), 1)?;
    Ok(())
}

/// The message a receipt handle names, if the handle is still its latest.
fn by_handle(
    bucket: &Bucket,
    queue: &Queue,
    handle: &str,
) -> Result<Result<Loaded, ApiError>, ApiError> {
    let Some((id, token)) = record::parse_receipt_handle(handle) else {
        return Ok(Err(ApiError::validation(
            "receiptHandle",
            "is not a receipt handle: pass one that a receive returned",
        )));
    };
    let stale = || {
        ApiError::conflict(format!(
            "receipt handle of message {id} is no longer valid: the message was acknowledged or received again since; receive it again"
        ))
    };
    match store::load(bucket, &queue.sid(), id)? {
        Some(loaded) if loaded.message.receipt.as_deref() == Some(token) => Ok(Ok(loaded)),
        _ => Ok(Err(stale())),
    }
}

/// Acknowledges (deletes) the message of `handle`.
fn ack_one(bucket: &Bucket, queue: &Queue, handle: &str) -> Result<Result<(), ApiError>, ApiError> {
    let loaded = match by_handle(bucket, queue, handle)? {
        Ok(loaded) => loaded,
        Err(e) => return Ok(Err(e)),
    };
    if !store::swap(bucket, &queue.sid(), &loaded, None)? {
        return Ok(Err(ApiError::conflict(
            "the message is being changed concurrently: retry the request",
        )));
    }
    Ok(Ok(()))
}

/// `POST /queues/{name}/ack`: `receiptHandle` answers 204 or the problem;
/// `receiptHandles` answers 200 with `acked` and `failed` per handle.
pub fn ack(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let acks = req.json::<AckRequest>()?.check()?;
    let bucket = Bucket::caller()?;
    let queue = load_queue(&bucket, &params["name"])?;
    match acks {
        Acks::One(handle) => {
            ack_one(&bucket, &queue, &handle)??;
            Ok(Response::no_content())
        }
        Acks::Batch(handles) => {
            let mut acked = Vec::new();
            let mut failed = Vec::new();
            for handle in handles {
                match ack_one(&bucket, &queue, &handle)? {
                    Ok(()) => acked.push(handle),
                    Err(e) => failed.push(AckFailure {
                        receipt_handle: handle,
                        code: e.code().as_str().to_owned(),
                        detail: e.detail().to_owned(),
                    }),
                }
            }
            Ok(Response::ok(&Acked { acked, failed }))
        }
    }
}

/// `POST /queues/{name}/visibility`: hides the message of a receipt handle
/// for the given seconds from now (0: visible at once). 204.
pub fn change_visibility(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let (handle, seconds) = req.json::<VisibilityRequest>()?.check()?;
    let bucket = Bucket::caller()?;
    let queue = load_queue(&bucket, &params["name"])?;
    let loaded = by_handle(&bucket, &queue, &handle)??;
    let next = Message {
        visible_at: clock::now_millis() + u64::from(seconds) * 1000,
        ..loaded.message.clone()
    };
    if !store::swap(&bucket, &queue.sid(), &loaded, Some(&next))? {
        return Err(ApiError::conflict(
            "the message is being changed concurrently: retry the request",
        ));
    }
    Ok(Response::no_content())
}
