//! Kept-alive HTTP/1.1 connections of the guard, by destination.
//!
//! A connection whose answer was read to its end, and that neither side
//! asked to close, waits here for the next request to the same
//! destination (scheme, host and port), for at most [`IDLE_FOR`]: a burst
//! of requests to one server (cron jobs due together, a run of webhooks)
//! then costs one TCP (and TLS) handshake per connection, not per request.
//! Every connection was opened by the guard to an address it checked, and
//! a taken connection that turns out closed is replaced by a new one
//! before the request is written.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::client::conn::http1::SendRequest;
use tokio::task::AbortHandle;

use super::gates::PER_DESTINATION;

/// How long an idle connection is kept: shorter than the idle timeout of
/// common servers (Node's 5 s), so a kept connection is rarely closed by
/// the server just as a request is written on it.
pub const IDLE_FOR: Duration = Duration::from_secs(2);

/// Where a connection goes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Key {
    pub tls: bool,
    pub host: String,
    pub port: u16,
}

/// An open HTTP/1.1 connection: the handle to send on, and its driver
/// task, stopped when the connection is dropped.
pub struct Conn {
    pub sender: SendRequest<Full<Bytes>>,
    pub driver: AbortHandle,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

#[derive(Default)]
pub struct Pool {
    idle: Mutex<Idle>,
}

#[derive(Default)]
struct Idle {
    by_key: HashMap<Key, Vec<(Conn, Instant)>>,
    swept: Option<Instant>,
}

impl Pool {
    /// The most recently kept open connection to `key`, if any.
    pub fn take(&self, key: &Key) -> Option<Conn> {
        let mut idle = self.lock();
        let kept = idle.by_key.get_mut(key)?;
        let mut found = None;
        while let Some((conn, since)) = kept.pop() {
            if since.elapsed() < IDLE_FOR && !conn.sender.is_closed() {
                found = Some(conn);
                break;
            }
        }
        if kept.is_empty() {
            idle.by_key.remove(key);
        }
        found
    }

    /// Keeps `conn` for the next request to `key`.
    pub fn put(&self, key: Key, conn: Conn) {
        let mut idle = self.lock();
        let now = Instant::now();
        if idle.swept.is_none_or(|at| now - at > IDLE_FOR) {
            idle.by_key.retain(|_, kept| {
                kept.retain(|(conn, since)| now - *since < IDLE_FOR && !conn.sender.is_closed());
                !kept.is_empty()
            });
            idle.swept = Some(now);
        }
        let kept = idle.by_key.entry(key).or_default();
        if kept.len() < PER_DESTINATION {
            kept.push((conn, now));
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Idle> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}
