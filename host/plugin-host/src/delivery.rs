//! [`EventDelivery`]: hands timeline events to the plugins that subscribe
//! to them (their description's `subscriptions`), at least once and in
//! order, one host at a time per plugin.
//!
//! Each pass leases a plugin's cursor, reads the matching events after it
//! and delivers them one by one to `on-event`, moving the cursor after each
//! success. A failed delivery is retried with backoff; after
//! [`MAX_ATTEMPTS`] the event is skipped and logged. Only events older
//! than [`SETTLE_MS`] are read: ids sort by creation time, and a
//! transaction that made an id a moment ago may not have committed yet.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plateau_core::id::{new_id, time_boundary};
use plateau_core::time;
use plateau_plugin_runtime::{Clock, Event, PluginVersion};
use plateau_store::Db;
use plateau_store::deliveries::{self, PendingEvent};

use crate::host::PluginHost;

/// Attempts at one event before it is skipped.
pub const MAX_ATTEMPTS: i32 = 6;
/// How old an event must be before it is delivered.
pub const SETTLE_MS: u64 = 1000;
/// How long a lease holds; passes renew it.
const LEASE_MS: i64 = 30_000;
/// How far an idle plugin's cursor may fall behind before a pass moves it.
const IDLE_ADVANCE_MS: u64 = 60_000;
/// The most events one pass delivers to one plugin.
const BATCH: i64 = 100;

pub struct EventDelivery {
    host: Arc<PluginHost>,
    db: Db,
    clock: Arc<dyn Clock>,
    owner: String,
    /// Per plugin version (name and digest, as subscriptions differ between
    /// versions): an event id up to which this host found nothing to
    /// deliver. Settled events never change, so later scans start there
    /// instead of at a cursor that idle plugins move only now and then.
    scanned: Mutex<HashMap<(String, String), String>>,
}

impl EventDelivery {
    pub fn new(host: Arc<PluginHost>, db: Db, clock: Arc<dyn Clock>) -> Self {
        EventDelivery {
            host,
            db,
            clock,
            owner: new_id("host"),
            scanned: Mutex::default(),
        }
    }

    /// Delivers every `period` until the task is dropped.
    pub async fn run(self: Arc<Self>, period: Duration) {
        let mut every = tokio::time::interval(period);
        loop {
            every.tick().await;
            for (name, version, _) in self.host.current() {
                if version.description().subscriptions.is_empty() {
                    continue;
                }
                if let Err(e) = self.pass(&name, &version).await {
                    tracing::warn!(plugin = %name, error = %e, "delivering events");
                }
            }
        }
    }

    fn now(&self) -> i64 {
        i64::try_from(self.clock.now_millis()).unwrap_or(i64::MAX)
    }

    fn lock_scanned(&self) -> std::sync::MutexGuard<'_, HashMap<(String, String), String>> {
        self.scanned.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// One pass for one plugin; returns how many events it delivered.
    pub async fn pass(
        &self,
        name: &str,
        version: &PluginVersion,
    ) -> Result<usize, plateau_store::Error> {
        // Ids carry the system time of their creation, whatever the host
        // clock says.
        let settled = time_boundary("evt", (time::now_ms() as u64).saturating_sub(SETTLE_MS));
        let subscriptions = &version.description().subscriptions;
        // Look with reads first: an idle plugin costs no write, except to
        // move its cursor on now and then.
        let scanned_key = (name.to_owned(), version.digest().to_owned());
        let peeked = match deliveries::position(&self.db, name).await? {
            Some(position) => {
                let known = self.lock_scanned().get(&scanned_key).cloned();
                let start = known.filter(|k| *k > position).unwrap_or(position.clone());
                let events =
                    deliveries::pending(&self.db, &start, &settled, subscriptions, BATCH).await?;
                if events.is_empty() {
                    self.lock_scanned().insert(scanned_key, settled.clone());
                    let stale = time_boundary(
                        "evt",
                        (time::now_ms() as u64).saturating_sub(SETTLE_MS + IDLE_ADVANCE_MS),
                    );
                    if position >= stale {
                        return Ok(0);
                    }
                }
                Some((start, events))
            }
            None => None,
        };
        let now = self.now();
        // Leases are on the system clock, so that moving the host clock
        // never frees a cursor in use.
        let lease_now = time::now_ms();
        let lease = deliveries::lease(
            &self.db,
            name,
            &self.owner,
            &settled,
            now,
            lease_now,
            lease_now + LEASE_MS,
        );
        let Some(cursor) = lease.await? else {
            return Ok(0);
        };
        let events = match peeked {
            // Nothing to deliver lies between the cursor and the scan's start.
            Some((start, events)) if cursor.position <= start => events,
            _ => {
                deliveries::pending(&self.db, &cursor.position, &settled, subscriptions, BATCH)
                    .await?
            }
        };
        if events.is_empty() {
            // Everything before the boundary has been looked at.
            if settled > cursor.position {
                deliveries::advance(&self.db, name, &self.owner, &settled).await?;
            }
            return Ok(0);
        }
        let mut attempt = cursor.attempt;
        let mut delivered = 0;
        for event in events {
            let id = event.id.clone();
            match deliver(version, event).await {
                Ok(()) => {}
                Err(why) if attempt + 1 < MAX_ATTEMPTS => {
                    attempt += 1;
                    let backoff = 1000_i64 << attempt.min(10);
                    tracing::warn!(plugin = name, event = %id, attempt, error = %why, "event delivery failed");
                    deliveries::failed(&self.db, name, &self.owner, attempt, now + backoff).await?;
                    return Ok(delivered);
                }
                Err(why) => {
                    tracing::error!(plugin = name, event = %id, error = %why, "skipping an event that failed {MAX_ATTEMPTS} times");
                }
            }
            attempt = 0;
            delivered += 1;
            deliveries::advance(&self.db, name, &self.owner, &id).await?;
        }
        Ok(delivered)
    }
}

async fn deliver(version: &PluginVersion, event: PendingEvent) -> Result<(), String> {
    let event = Event {
        id: event.id,
        organization_id: event.org_id,
        event_type: event.kind,
        resource_type: event.resource_type,
        resource_id: event.resource_id,
        data: event.data,
        at: event.created_at.max(0) as u64,
    };
    let outcome = version.on_event(event).await.map_err(|e| e.to_string())?;
    outcome.result
}
