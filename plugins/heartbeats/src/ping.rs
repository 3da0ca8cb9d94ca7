//! The public ping routes: `GET` or `POST` on
//! `/heartbeats/ping/{token}` (success), `/heartbeats/ping/{token}/start`
//! and `/heartbeats/ping/{token}/fail`. The token is the only credential;
//! an unknown token is 404.
//!
//! The literal `ping` segment keeps these paths apart from
//! `/heartbeats/{id}...`: a heartbeat id always starts with `hb_`, so no id
//! is `ping`, and the router prefers the literal anyway.

use plateau_sdk::{ApiError, Bucket, Params, Request, Response, clock};

use crate::alerts;
use crate::record::{Heartbeat, PING_HISTORY, PingRecord, TokenEntry, is_token_shaped};
use crate::state::{self, PingKind};
use crate::store;

pub fn success(req: &Request, params: &Params) -> Result<Response, ApiError> {
    receive(req, &params["token"], PingKind::Success)
}

pub fn start(req: &Request, params: &Params) -> Result<Response, ApiError> {
    receive(req, &params["token"], PingKind::Start)
}

pub fn fail(req: &Request, params: &Params) -> Result<Response, ApiError> {
    receive(req, &params["token"], PingKind::Fail)
}

fn unknown() -> ApiError {
    ApiError::not_found("no heartbeat has this ping URL: check the URL in the heartbeat's pingUrl")
}

/// Applies one ping: the state machine, the history, the deadline job, and
/// the effects of a change of state. Answers `200 OK` in plain text.
fn receive(req: &Request, token: &str, kind: PingKind) -> Result<Response, ApiError> {
    if !is_token_shaped(token) {
        return Err(unknown());
    }
    let entry: TokenEntry = Bucket::global()?
        .get(&TokenEntry::key(token))?
        .ok_or_else(unknown)?;
    let org = entry.organization_id;
    let bucket = store::bucket(&org)?;
    let now = clock::now_millis();
    let changed = store::modify(&bucket, &entry.heartbeat_id, |heartbeat| {
        if heartbeat.ping_token != token {
            return Err(unknown());
        }
        let outcome = state::ping(&mut heartbeat.status, kind, now);
        heartbeat.ping_count += 1;
        heartbeat.last_ping_at = Some(now);
        heartbeat.last_ping_kind = Some(kind);
        if outcome.duration_ms.is_some() {
            heartbeat.last_duration_ms = outcome.duration_ms;
        }
        let change = outcome
            .transition
            .map(|t| alerts::record_change(heartbeat, t, now));
        Ok((change, outcome.duration_ms))
    })?;
    let (heartbeat, (change, duration_ms)) = changed.ok_or_else(unknown)?;
    record_ping(&bucket, &heartbeat, req, kind, now, duration_ms)?;
    store::sync_deadline(&org, &heartbeat)?;
    if let Some(change) = &change {
        alerts::announce(&org, &heartbeat, change)?;
    }
    Ok(Response::text(200, "OK"))
}

/// Adds the ping to the history and drops the one that falls out of it.
fn record_ping(
    bucket: &Bucket,
    heartbeat: &Heartbeat,
    req: &Request,
    kind: PingKind,
    now: u64,
    duration_ms: Option<u64>,
) -> Result<(), ApiError> {
    let n = heartbeat.ping_count;
    let ping = PingRecord {
        n,
        kind,
        at: clock::rfc3339(now),
        method: req.method.clone(),
        duration_ms,
        source_ip: source_ip(req),
        user_agent: req
            .header("user-agent")
            .map(|ua| ua.chars().take(200).collect()),
        state: heartbeat.status.state,
    };
    bucket.set(&PingRecord::key(&heartbeat.id, n), &ping)?;
    if n > PING_HISTORY {
        bucket.delete(&PingRecord::key(&heartbeat.id, n - PING_HISTORY))?;
    }
    Ok(())
}

/// The client's address as a proxy in front of the host reports it: the
/// first `x-forwarded-for` entry, else `x-real-ip`, else the `for=` of
/// `forwarded`. The host does not pass the peer address to plugins.
pub fn source_ip(req: &Request) -> Option<String> {
    let forwarded_for = || {
        req.header("forwarded")?
            .split([';', ','])
            .find_map(|part| {
                let (key, value) = part.trim().split_once('=')?;
                key.eq_ignore_ascii_case("for").then_some(value)
            })
            .map(|v| v.trim_matches('"').to_owned())
    };
    req.header("x-forwarded-for")
        .and_then(|v| v.split(',').next())
        .map(|v| v.trim().to_owned())
        .or_else(|| req.header("x-real-ip").map(|v| v.trim().to_owned()))
        .or_else(forwarded_for)
        .filter(|ip| {
            !ip.is_empty()
                && ip.len() <= 64
                && ip
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit() || b".:[]".contains(&b))
        })
}
