//! The calls parked in `kv.wait` (kv@0.4.0), and their wake-up when a
//! commit of this host writes under their prefix.
//!
//! A waiter is registered only while it is parked: it holds no
//! transaction and no store lock, only its instance slot. Writes of other
//! hosts sharing the database, and writes committed between a caller's
//! last read and its `wait`, are not seen here; a parked call re-checks
//! every [`RECHECK`] instead (the guest reads again), which bounds how late
//! it notices them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore};

use crate::storage::BucketId;

/// How often a parked call wakes to let its caller read again.
pub(crate) const RECHECK: Duration = Duration::from_secs(1);

/// Why a wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WaitEnd {
    /// A write under the prefix committed on this host.
    Written,
    /// The re-check interval passed: a write elsewhere may have committed.
    Recheck,
    /// The timeout passed.
    Timeout,
    /// Too many calls are parked already; the call returned at once.
    Full,
}

struct Waiter {
    id: u64,
    prefix: String,
    notify: Arc<Notify>,
}

/// The parked calls of one runtime.
pub(crate) struct Waits {
    /// At most this many calls park at once, so parked calls cannot take
    /// every instance slot of the runtime.
    parking: Semaphore,
    waiters: Mutex<HashMap<BucketId, Vec<Waiter>>>,
    /// How many waiters are registered: commits skip the lock when none.
    count: AtomicUsize,
    next_id: AtomicU64,
}

impl Waits {
    pub fn new(max_parked: usize) -> Self {
        Waits {
            parking: Semaphore::new(max_parked.max(1)),
            waiters: Mutex::new(HashMap::new()),
            count: AtomicUsize::new(0),
            next_id: AtomicU64::new(0),
        }
    }

    /// Whether any call is parked (commits then report their keys).
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Acquire) > 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<BucketId, Vec<Waiter>>> {
        self.waiters.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Wakes the calls parked on a prefix of one of the keys a commit wrote.
    pub fn committed<'a>(&self, written: impl IntoIterator<Item = (&'a BucketId, &'a str)>) {
        if !self.any() {
            return;
        }
        let waiters = self.lock();
        for (bucket, key) in written {
            for waiter in waiters.get(bucket).into_iter().flatten() {
                if key.starts_with(&waiter.prefix) {
                    waiter.notify.notify_one();
                }
            }
        }
    }

    /// Parks until a commit writes under `prefix` in `bucket`, the
    /// re-check interval passes, or `timeout` does.
    pub async fn wait(&self, bucket: &BucketId, prefix: &str, timeout: Duration) -> WaitEnd {
        if timeout.is_zero() {
            return WaitEnd::Timeout;
        }
        let Ok(_parked) = self.parking.try_acquire() else {
            return WaitEnd::Full;
        };
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let notify = Arc::new(Notify::new());
        self.lock().entry(bucket.clone()).or_default().push(Waiter {
            id,
            prefix: prefix.to_owned(),
            notify: notify.clone(),
        });
        self.count.fetch_add(1, Ordering::AcqRel);
        let _registered = Registered {
            waits: self,
            bucket,
            id,
        };
        let slice = timeout.min(RECHECK);
        match tokio::time::timeout(slice, notify.notified()).await {
            Ok(()) => WaitEnd::Written,
            Err(_) if slice == timeout => WaitEnd::Timeout,
            Err(_) => WaitEnd::Recheck,
        }
    }
}

/// Removes a waiter however its wait ends (the call may be dropped too).
struct Registered<'a> {
    waits: &'a Waits,
    bucket: &'a BucketId,
    id: u64,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        let mut waiters = self.waits.lock();
        if let Some(list) = waiters.get_mut(self.bucket) {
            list.retain(|w| w.id != self.id);
            if list.is_empty() {
                waiters.remove(self.bucket);
            }
        }
        self.waits.count.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Namespace;

    fn bucket(org: &str) -> BucketId {
        BucketId {
            plugin: "queues".into(),
            namespace: Namespace::Organization(org.into()),
        }
    }

    #[tokio::test]
    async fn a_commit_under_the_prefix_wakes_only_its_bucket_s_waiter() {
        let waits = Arc::new(Waits::new(4));
        let parked = {
            let waits = waits.clone();
            tokio::spawn(async move {
                waits
                    .wait(&bucket("o1"), "v/q/", Duration::from_secs(3600))
                    .await
            })
        };
        while !waits.any() {
            tokio::task::yield_now().await;
        }
        // Another prefix, another organisation: not woken by these.
        waits.committed([(&bucket("o1"), "m/q/1"), (&bucket("o2"), "v/q/1")]);
        waits.committed([(&bucket("o1"), "v/q/1")]);
        assert_eq!(parked.await.unwrap(), WaitEnd::Written);
        assert!(!waits.any(), "the waiter is removed when it returns");
    }

    #[tokio::test]
    async fn beyond_the_parking_cap_a_wait_returns_at_once() {
        let waits = Waits::new(1);
        let _taken = waits.parking.try_acquire().unwrap();
        let end = waits
            .wait(&bucket("o1"), "", Duration::from_secs(3600))
            .await;
        assert_eq!(end, WaitEnd::Full);
    }
}
