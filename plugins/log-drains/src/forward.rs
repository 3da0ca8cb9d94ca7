//! A drain's job, `drain:{id}`, every second: read the organisation's new
//! lines after the drain's cursor (the `logs` capability), keep those its
//! filters want in its bounded buffer, and, unless it is backing off, send
//! the buffer in batches: gzipped NDJSON signed per Standard Webhooks
//! through `outbound-http`, or RFC 5424 frames through `tcp`. A batch
//! leaves the buffer only once it was acknowledged (a 2xx, or every byte
//! written and the connection closed cleanly); a failure keeps it and
//! waits 1 s, doubling up to 5 minutes. The cursor and the buffer commit
//! together, so a line is read into the buffer once.

use plateau_sdk::jobs::Job;
use plateau_sdk::outbound::OutgoingRequest;
use plateau_sdk::platform_logs::{self, Line, Owner, Source};
use plateau_sdk::serde_json::json;
use plateau_sdk::{ApiError, Bucket, NewEvent, clock, jobs, log, tcp, webhooks};

use crate::format;
use crate::input::{Destination, parse_url};
use crate::level::{self, Level};
use crate::record::{self, Buffered, DeliveryState, Drain};
use crate::secret;

/// Lines of one batch.
pub const BATCH_LINES: usize = 500;
/// Batches one run may send before the next run.
const BATCHES_PER_RUN: usize = 4;
/// Pages of new lines one run may read.
const PAGES_PER_RUN: usize = 4;
/// How long one send may take.
pub const SEND_TIMEOUT_MS: u32 = 10_000;

/// The sources of the `logs` capability a drain reads.
pub fn sources(drain: &Drain) -> Vec<Source> {
    drain
        .sources
        .iter()
        .filter_map(|s| match s.as_str() {
            "app" => Some(Source::App),
            "event" => Some(Source::Event),
            _ => None,
        })
        .collect()
}

/// The line as buffered, if the drain's filters want it: an app line of
/// one of its apps (any, if it names none) at its level or above; every
/// event of the timeline (at `info`).
pub fn admit(drain: &Drain, min_level: Level, line: Line) -> Option<Buffered> {
    let (source, level) = match line.source? {
        Source::App => {
            if !drain.apps.is_empty() && !drain.apps.contains(&line.resource_id) {
                return None;
            }
            let level = level::of_line(&line.message, &line.channel);
            (level >= min_level).then_some(("app", level))?
        }
        Source::Event => ("event", Level::Info),
    };
    Some(Buffered {
        id: line.id,
        source: source.to_owned(),
        at: line.at,
        level: level.as_str().to_owned(),
        resource_id: line.resource_id,
        resource_name: line.resource_name,
        deployment: line.deployment,
        replica: line.replica,
        channel: line.channel,
        message: record::cap_message(line.message),
    })
}

/// A `drain:` job.
pub fn run(job: &Job) -> Result<(), ApiError> {
    let Some(org) = job.organization_id.as_deref() else {
        return Ok(());
    };
    let id = job.payload.as_str();
    let bucket = Bucket::organization(org)?;
    let Some(drain) = bucket.get::<Drain>(&record::drain_key(id))? else {
        // Deleted: the job goes too.
        jobs::cancel(
            plateau_sdk::Namespace::Organization(org.to_owned()),
            &job.key,
        )?;
        return Ok(());
    };
    if !drain.enabled {
        return Ok(());
    }
    let state_key = record::state_key(id);
    let mut state: DeliveryState = bucket.get(&state_key)?.unwrap_or_default();
    let was_failing = state.failures > 0;
    read_new(org, &drain, &mut state);
    let now = clock::now_millis();
    if state.next_attempt_at.is_none_or(|at| at <= now) {
        for _ in 0..BATCHES_PER_RUN {
            if state.buffer.is_empty() || !send_batch(org, &drain, &mut state) {
                break;
            }
        }
    }
    state.fit();
    bucket.set(&state_key, &state)?;
    if was_failing != (state.failures > 0) {
        let (kind, action) = if was_failing {
            ("log-drains.drain.recovered", "recover")
        } else {
            ("log-drains.drain.failing", "fail")
        };
        NewEvent::new(kind, action)
            .organization(org)
            .resource("log_drain", &drain.id)
            .data(&json!({ "name": drain.name, "error": state.last_error }))
            .emit()?;
    }
    Ok(())
}

/// Reads what is new into the buffer, moving the cursor with it.
fn read_new(org: &str, drain: &Drain, state: &mut DeliveryState) {
    let min_level = Level::parse(&drain.min_level).unwrap_or(Level::Debug);
    let owner = Owner::Organization(org.to_owned());
    let wanted = sources(drain);
    for _ in 0..PAGES_PER_RUN {
        match platform_logs::read(&owner, &wanted, &state.cursor, 1000) {
            Ok(page) => {
                let admitted: Vec<Buffered> = page
                    .lines
                    .into_iter()
                    .filter_map(|l| admit(drain, min_level, l))
                    .collect();
                state.push(admitted);
                state.cursor = page.cursor;
                if !page.more {
                    return;
                }
            }
            Err(e) => {
                log::warn(&format!("drain {}: reading logs: {e}", drain.id));
                state.last_error = Some(format!("reading the platform's logs: {e}"));
                return;
            }
        }
    }
}

/// Sends the buffer's first batch; answers whether it was acknowledged.
fn send_batch(org: &str, drain: &Drain, state: &mut DeliveryState) -> bool {
    let n = state.buffer.len().min(BATCH_LINES);
    let batch = &state.buffer[..n];
    let started = clock::now_millis();
    let outcome = match parse_url(&drain.url) {
        Some(Destination::Http { url }) => send_http(org, drain, &url, batch),
        Some(Destination::Syslog { host, port, tls }) => {
            let destination = tcp::Destination {
                host,
                port,
                tls,
                timeout_ms: SEND_TIMEOUT_MS,
            };
            tcp::send(&destination, &format::syslog_frames(batch))
                .map(|_| None)
                .map_err(|e| (None, e.to_string()))
        }
        None => Err((None, "the drain's url is not one it can send to".to_owned())),
    };
    let now = clock::now_millis();
    state.last_attempt_at = Some(now);
    state.last_latency_ms = Some(now.saturating_sub(started));
    match outcome {
        Ok(status) => {
            state.buffer.drain(..n);
            state.delivered += n as u64;
            state.batches += 1;
            state.failures = 0;
            state.last_success_at = Some(now);
            state.last_error = None;
            state.last_status_code = status;
            state.next_attempt_at = None;
            true
        }
        Err((status, error)) => {
            state.failures = state.failures.saturating_add(1);
            state.last_error = Some(error);
            state.last_status_code = status;
            state.next_attempt_at = Some(now + record::backoff_ms(state.failures));
            false
        }
    }
}

/// One signed POST; `Ok(status)` on a 2xx, else the status (if any) and
/// why.
fn send_http(
    org: &str,
    drain: &Drain,
    url: &str,
    batch: &[Buffered],
) -> Result<Option<u16>, (Option<u16>, String)> {
    let body = format::ndjson(batch);
    let id = format!("{}.{}", drain.id, batch[0].id);
    let timestamp = clock::now_millis() / 1000;
    let signature = secret::open(org, drain)
        .map_err(|e| (None, e.detail().to_owned()))?
        .and_then(|s| webhooks::sign(&s, &id, timestamp, &body))
        .ok_or_else(|| (None, "the drain has no signing secret".to_owned()))?;
    let request = OutgoingRequest::post(url.to_owned())
        .header("content-type", "application/x-ndjson")
        .header("content-encoding", "gzip")
        .header("user-agent", "Plateau-Log-Drains/1")
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(format::gzip(&body))
        .timeout_ms(SEND_TIMEOUT_MS)
        .keep_body_bytes(512);
    match request.send() {
        Ok(r) if (200..300).contains(&r.status) => Ok(Some(r.status)),
        Ok(r) => Err((
            Some(r.status),
            format!("the endpoint answered {}", r.status),
        )),
        Err(e) => Err((None, e.to_string())),
    }
}
