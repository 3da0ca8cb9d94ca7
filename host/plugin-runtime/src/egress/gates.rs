//! How many connections the guard keeps open to one destination at once.
//!
//! Cron jobs due in the same second, a queue of webhooks, a plugin's
//! `send-many`: without a cap, a burst opens thousands of connections to
//! one server at once, overflows its listen queue (the kernel drops the
//! SYNs past it, and each is retried a second later) and looks like an
//! attack. Past [`PER_DESTINATION`] connections to one `host:port`, a
//! request waits for one to close, in arrival order, within its own
//! timeout.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The most connections open to one destination (`host:port`) at once,
/// over every plugin of the host. `cargo xtask bench cron` measured 64, 128
/// and 256 against one local server whose listen queue holds 1024: 128
/// delivered fastest; 256 let some connections overflow the queue.
pub const PER_DESTINATION: usize = 128;

/// The gate of each destination with a connection open or waiting.
#[derive(Default)]
pub struct Gates {
    open: Mutex<HashMap<String, Arc<Semaphore>>>,
}

/// A connection's place at its destination, given back when dropped.
pub struct Entered {
    gates: Arc<Gates>,
    destination: String,
    permit: Option<OwnedSemaphorePermit>,
}

impl Gates {
    /// Waits for a place at `host:port`.
    pub async fn enter(self: &Arc<Self>, host: &str, port: u16) -> Entered {
        let destination = format!("{host}:{port}");
        let gate = self
            .lock()
            .entry(destination.clone())
            .or_insert_with(|| Arc::new(Semaphore::new(PER_DESTINATION)))
            .clone();
        let permit = gate.acquire_owned().await.ok();
        Entered {
            gates: self.clone(),
            destination,
            permit,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Semaphore>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Destinations with a gate (tests).
    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }
}

impl Drop for Entered {
    /// Gives the place back, and forgets a gate nobody holds or waits for.
    fn drop(&mut self) {
        drop(self.permit.take());
        let mut open = self.gates.lock();
        if let Some(gate) = open.get(&self.destination)
            && Arc::strong_count(gate) == 1
        {
            open.remove(&self.destination);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_destination_takes_so_many_connections_and_its_gate_goes_with_the_last() {
        let gates = Arc::new(Gates::default());
        let mut held = Vec::new();
        for _ in 0..PER_DESTINATION {
            held.push(gates.enter("example.com", 443).await);
        }
        let other = gates.enter("example.org", 443).await;
        let waiting = tokio::spawn({
            let gates = gates.clone();
            async move { gates.enter("example.com", 443).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "one past the cap waits");
        held.pop();
        let late = waiting.await.unwrap();
        drop(other);
        assert_eq!(gates.len(), 1);
        drop(held);
        drop(late);
        assert_eq!(gates.len(), 0);
    }
}
