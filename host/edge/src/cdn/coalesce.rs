//! Request coalescing: concurrent misses for the same cache key send one
//! request to the app. The first GET that misses a key leads (a
//! [`Flight`]); a GET or HEAD that misses the same key while the flight
//! is under way waits for it to end, then looks the key up again and is
//! answered from what the leader stored, or goes to the app itself when
//! nothing it may use was stored (the response was not storable, varied
//! on a field it sends otherwise, or was cut short).
//!
//! A flight ends when the leader's response is stored (after its body
//! has streamed to the leader's client whole), when it is known not to
//! be stored, or when the leader's request is dropped. A follower waits
//! at most [`WAIT`] (as nginx's `proxy_cache_lock_timeout`): past it, it
//! goes to the app.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

/// The longest a miss waits for another's flight to the app.
pub const WAIT: Duration = Duration::from_secs(5);

/// The flights under way of one app, by cache key.
#[derive(Default)]
pub struct Flights {
    under_way: Mutex<HashMap<String, Arc<watch::Sender<()>>>>,
}

/// What a miss does: lead the flight for its key, or wait for one.
pub enum Turn {
    Lead(Flight),
    Follow(watch::Receiver<()>),
}

/// The one request to the app for a key; ends when dropped.
pub struct Flight {
    flights: Arc<Flights>,
    key: String,
    tx: Arc<watch::Sender<()>>,
}

impl Flights {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<watch::Sender<()>>>> {
        self.under_way.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Leads the flight for `key` when none is under way (and `may_lead`:
    /// only a GET's response is stored), else follows the one there.
    /// `None`: neither (a HEAD with no flight to wait for).
    pub fn turn(self: &Arc<Self>, key: &str, may_lead: bool) -> Option<Turn> {
        let mut map = self.map();
        if let Some(tx) = map.get(key) {
            return Some(Turn::Follow(tx.subscribe()));
        }
        if !may_lead {
            return None;
        }
        let tx = Arc::new(watch::Sender::new(()));
        map.insert(key.to_owned(), tx.clone());
        Some(Turn::Lead(Flight {
            flights: self.clone(),
            key: key.to_owned(),
            tx,
        }))
    }

    /// Requests waiting for the flight of `key`.
    #[cfg(test)]
    pub fn waiting(&self, key: &str) -> usize {
        self.map().get(key).map_or(0, |tx| tx.receiver_count())
    }
}

/// Waits until `flight` ends, or [`WAIT`] passed.
pub async fn follow(mut flight: watch::Receiver<()>) {
    // Nothing is ever sent: `changed` answers when the leader's sender
    // is dropped.
    let _ = tokio::time::timeout(WAIT, flight.changed()).await;
}

impl Drop for Flight {
    /// Leaves the map first, so that a miss after this leads a flight of
    /// its own; the followers wake when the last sender (this one's)
    /// drops, just after.
    fn drop(&mut self) {
        let mut map = self.flights.map();
        if map
            .get(&self.key)
            .is_some_and(|tx| Arc::ptr_eq(tx, &self.tx))
        {
            map.remove(&self.key);
        }
    }
}
