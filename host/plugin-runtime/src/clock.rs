//! Time as plugins see it: the [`Clock`] trait behind the `clock` interface
//! and the WASI wall clock, so tests (and later heartbeats) control it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The host's wall clock.
pub trait Clock: Send + Sync + 'static {
    /// Milliseconds since the Unix epoch.
    fn now_millis(&self) -> u64;
}

/// The system's real time.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_millis(&self) -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }
}

/// A clock that moves only when told to, and counts how often it was read.
#[derive(Debug, Default)]
pub struct ManualClock {
    now: AtomicU64,
    reads: AtomicU64,
}

impl ManualClock {
    pub fn new(now_millis: u64) -> Self {
        ManualClock {
            now: AtomicU64::new(now_millis),
            reads: AtomicU64::new(0),
        }
    }

    pub fn set(&self, now_millis: u64) {
        self.now.store(now_millis, Ordering::SeqCst);
    }

    pub fn advance(&self, by: Duration) {
        self.now.fetch_add(by.as_millis() as u64, Ordering::SeqCst);
    }

    /// How many times [`Clock::now_millis`] was called.
    pub fn reads(&self) -> u64 {
        self.reads.load(Ordering::SeqCst)
    }
}

impl Clock for ManualClock {
    fn now_millis(&self) -> u64 {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.now.load(Ordering::SeqCst)
    }
}

/// The host clock as the WASI wall clock of a plugin instance.
pub(crate) struct WasiWallClock(pub Arc<dyn Clock>);

impl wasmtime_wasi::HostWallClock for WasiWallClock {
    fn resolution(&self) -> Duration {
        Duration::from_millis(1)
    }

    fn now(&self) -> Duration {
        Duration::from_millis(self.0.now_millis())
    }
}
