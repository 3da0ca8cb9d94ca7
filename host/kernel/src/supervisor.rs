//! [`Supervisor`]: the one loop of a host's data plane (it runs in
//! `plateau agent`). Every `poll` it reads from the store which resources
//! of each kind this host runs, and starts [`reconcile`] of each that is
//! due (it asks for a change, or was last observed `every` ago) in a task
//! of its own under that resource's lock. A resource whose reconcile is
//! still running is skipped, not waited for: a slow or stuck cluster never
//! delays another's failover. The lock (an `flock` per resource, see
//! [`crate::lock`]) also excludes the API process's own operations on
//! that resource.
//!
//! A create is picked up within one `poll` (the store is polled; there is
//! no wake-up beyond it).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plateau_store::managed;
use tokio::time::Instant;

use crate::reconcile::{Resources, reconcile};
use crate::status::Status;

/// How often the store is read for work, by default.
pub const POLL: Duration = Duration::from_millis(200);

pub struct Supervisor {
    poll: Duration,
    kinds: Vec<Arc<dyn Resources>>,
}

/// What the loop knows of one resource between rounds.
#[derive(Default)]
struct Book {
    /// Resources whose reconcile runs now.
    busy: HashSet<String>,
    /// When each resource's last reconcile started.
    last: HashMap<String, Instant>,
}

impl Supervisor {
    pub fn new(poll: Duration) -> Self {
        Supervisor {
            poll,
            kinds: Vec::new(),
        }
    }

    /// Supervises the resources of `kind` too.
    pub fn with(mut self, kind: Arc<dyn Resources>) -> Self {
        self.kinds.push(kind);
        self
    }

    /// Runs until aborted; the resources keep running after.
    pub fn spawn(self) -> tokio::task::JoinHandle<()> {
        let book = Arc::new(Mutex::new(Book::default()));
        tokio::spawn(async move {
            loop {
                for kind in &self.kinds {
                    self.round(kind, &book).await;
                }
                tokio::time::sleep(self.poll).await;
            }
        })
    }

    async fn round(&self, kind: &Arc<dyn Resources>, book: &Arc<Mutex<Book>>) {
        let listed = match managed::list_on_host(kind.db(), kind.table(), kind.host_id()).await {
            Ok(listed) => listed,
            Err(e) => {
                tracing::warn!(kind = kind.kind(), error = %e, "listing the resources to reconcile");
                return;
            }
        };
        let now = Instant::now();
        for state in listed {
            let pending = Status::read(&state.status).pending();
            let key = format!("{}:{}", kind.kind(), state.id);
            {
                let mut b = book.lock().unwrap_or_else(|e| e.into_inner());
                let due = pending
                    || b.last
                        .get(&key)
                        .is_none_or(|t| now.duration_since(*t) >= kind.every(&state));
                if !due || !b.busy.insert(key.clone()) {
                    continue;
                }
                b.last.insert(key.clone(), now);
            }
            let kind = kind.clone();
            let done = Done {
                book: book.clone(),
                key,
            };
            tokio::spawn(async move {
                let _done = done;
                let _held = match kind.locks().lock(&state.id).await {
                    Ok(held) => held,
                    Err(e) => {
                        tracing::warn!(id = %state.id, error = %e, "locking a resource");
                        return;
                    }
                };
                reconcile(kind.as_ref(), &state.id).await;
            });
        }
    }
}

/// Marks a resource free again when its task ends, even by a panic.
struct Done {
    book: Arc<Mutex<Book>>,
    key: String,
}

impl Drop for Done {
    fn drop(&mut self) {
        let mut b = self.book.lock().unwrap_or_else(|e| e.into_inner());
        b.busy.remove(&self.key);
    }
}
