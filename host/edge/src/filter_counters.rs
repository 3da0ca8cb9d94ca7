//! What each enabled edge filter did since its chain was set: the
//! requests it ran on, its verdicts, its failures by kind (a trap, its
//! deadline or fuel, anything else) and by what followed (open, closed),
//! and the CPU time it took.
//!
//! CPU time is the thread's CPU clock (`CLOCK_THREAD_CPUTIME_ID`) read
//! around the filter's own work: the call that makes its future (a
//! host-native filter decides there) and each poll of that future (a
//! component runs on the polling thread). Time the thread spends on other
//! tasks between polls is not counted; time the kernel takes the thread
//! away in the middle of a poll is not CPU time either.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll};

/// Why a filter call failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The filter trapped (a panic, an unreachable, a bad memory access).
    Trap,
    /// Its deadline or its fuel ran out.
    Timeout,
    /// Anything else: not loaded, its memory limit, a verdict the
    /// contract refuses.
    Other,
}

/// A failed filter call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterError {
    pub kind: FailureKind,
    pub reason: String,
}

impl From<String> for FilterError {
    fn from(reason: String) -> FilterError {
        FilterError {
            kind: FailureKind::Other,
            reason,
        }
    }
}

impl fmt::Display for FilterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// One enabled filter's counters, since its chain was set.
#[derive(Debug, Default)]
pub struct Counters {
    /// Requests it ran on (its request phase).
    pub runs: AtomicU64,
    pub passed: AtomicU64,
    pub answered: AtomicU64,
    pub failed_open: AtomicU64,
    pub failed_closed: AtomicU64,
    pub traps: AtomicU64,
    pub timeouts: AtomicU64,
    /// CPU nanoseconds of both phases.
    pub cpu_ns: AtomicU64,
}

/// [`Counters`] as read at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FilterStats {
    pub runs: u64,
    pub passed: u64,
    pub answered: u64,
    pub failed_open: u64,
    pub failed_closed: u64,
    pub traps: u64,
    pub timeouts: u64,
    pub cpu_ns: u64,
}

impl FilterStats {
    /// Failures of either phase, whatever followed.
    pub fn failures(&self) -> u64 {
        self.failed_open + self.failed_closed
    }

    /// Mean CPU time per request it ran on, in microseconds.
    pub fn cpu_us_per_request(&self) -> f64 {
        match self.runs {
            0 => 0.0,
            runs => self.cpu_ns as f64 / 1e3 / runs as f64,
        }
    }
}

impl Counters {
    pub fn stats(&self) -> FilterStats {
        let n = |c: &AtomicU64| c.load(Ordering::Relaxed);
        FilterStats {
            runs: n(&self.runs),
            passed: n(&self.passed),
            answered: n(&self.answered),
            failed_open: n(&self.failed_open),
            failed_closed: n(&self.failed_closed),
            traps: n(&self.traps),
            timeouts: n(&self.timeouts),
            cpu_ns: n(&self.cpu_ns),
        }
    }

    /// Counts a failure of `kind` that failed open or closed.
    pub(crate) fn failed(&self, kind: FailureKind, closed: bool) {
        let by_kind = match kind {
            FailureKind::Trap => Some(&self.traps),
            FailureKind::Timeout => Some(&self.timeouts),
            FailureKind::Other => None,
        };
        if let Some(counter) = by_kind {
            counter.fetch_add(1, Ordering::Relaxed);
        }
        let counter = if closed {
            &self.failed_closed
        } else {
            &self.failed_open
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Makes a filter's future with `call` and awaits it, adding the
    /// thread CPU time of both to the counters.
    /// (`'a`: the future borrows what `self` lives in, the enabled filter.)
    #[allow(clippy::needless_lifetimes)]
    pub(crate) async fn timed<'a, T>(
        &'a self,
        call: impl FnOnce() -> Pin<Box<dyn Future<Output = T> + Send + 'a>>,
    ) -> T {
        let began = thread_cpu_ns();
        let inner = call();
        self.cpu_ns
            .fetch_add(thread_cpu_ns().saturating_sub(began), Ordering::Relaxed);
        Timed {
            inner,
            cpu: &self.cpu_ns,
        }
        .await
    }
}

/// A future whose polls add their thread CPU time to `cpu`.
struct Timed<'a, T> {
    inner: Pin<Box<dyn Future<Output = T> + Send + 'a>>,
    cpu: &'a AtomicU64,
}

impl<T> Future for Timed<'_, T> {
    type Output = T;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        let began = thread_cpu_ns();
        let polled = self.inner.as_mut().poll(cx);
        self.cpu
            .fetch_add(thread_cpu_ns().saturating_sub(began), Ordering::Relaxed);
        polled
    }
}

/// This thread's CPU time, in nanoseconds.
fn thread_cpu_ns() -> u64 {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    (t.tv_sec as u64).saturating_mul(1_000_000_000) + t.tv_nsec as u64
}
