//! [`JobWorker`]: runs the plugins' durable jobs and the ticks of their
//! schedules, one host at a time per job.
//!
//! Each pass reads when the next job is due (sleeping until then, at most
//! one poll), claims the due jobs under a lease (see `plateau_store::jobs`)
//! in batches of up to [`HELD`] claimed and unfinished jobs, runs each in
//! the plugin's current version (at most `concurrency` at once), and commits the end of the
//! run (the next due time of a repeating job, or its removal) with the
//! run's own writes. A failed run is retried with exponential backoff; a
//! one-shot job that fails [`MAX_ATTEMPTS`] times is dropped, a repeating
//! one waits for its next interval. A host that dies mid-run leaves a lease
//! that expires, and another host runs the job again: at least once.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use plateau_core::id::new_id;
use plateau_core::time;
use plateau_plugin_runtime::{
    BucketId, Clock, HookOutcome, Job, JobId, JobKind, JobWrite, Namespace, PluginVersion, Tick,
};
use plateau_store::Db;
use plateau_store::jobs::{self, Backlog, ClaimedJob};
use tokio::sync::{Notify, Semaphore};

use crate::host::PluginHost;

/// A run that fails this many times in a row stops being retried.
pub const MAX_ATTEMPTS: i32 = 8;
/// The longest wait between two attempts.
const MAX_BACKOFF_MS: i64 = 10 * 60 * 1000;
/// How long a claim holds; longer than any plugin's deadline.
const LEASE_MS: i64 = 5 * 60 * 1000;
/// The most jobs a host holds claimed and not yet ended: the runs under
/// way and those waiting for one of the worker's `concurrency` permits
/// (one that waited half its lease is left to be claimed again).
const HELD: usize = 256;
/// A pass claims at least this many jobs (when so many are due): with
/// fewer places free it waits for runs to end first, so that a busy
/// worker claims in batches rather than one job per ended run.
const CLAIM_AT_LEAST: usize = 32;
/// How many lateness samples the statistics keep.
const SAMPLES: usize = 100_000;

/// Lateness of recent runs: how long after its due time each one started.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Lateness {
    pub samples: u64,
    pub p50_ms: u64,
    pub p99_ms: u64,
    pub max_ms: u64,
}

pub struct JobWorker {
    host: Arc<PluginHost>,
    db: Db,
    clock: Arc<dyn Clock>,
    owner: String,
    permits: Arc<Semaphore>,
    /// Places for claimed jobs ([`HELD`]).
    held: Arc<Semaphore>,
    wake: Notify,
    poll: Duration,
    samples: Mutex<VecDeque<u64>>,
    ticks_synced: Mutex<HashMap<String, String>>,
}

impl JobWorker {
    /// A worker with at most `concurrency` runs at once, looking for due jobs
    /// every `poll` (and at once after [`JobWorker::wake`]).
    pub fn new(
        host: Arc<PluginHost>,
        db: Db,
        clock: Arc<dyn Clock>,
        concurrency: usize,
        poll: Duration,
    ) -> Self {
        JobWorker {
            host,
            db,
            clock,
            owner: new_id("host"),
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            held: Arc::new(Semaphore::new(HELD)),
            wake: Notify::new(),
            poll,
            samples: Mutex::new(VecDeque::with_capacity(SAMPLES)),
            ticks_synced: Mutex::new(HashMap::new()),
        }
    }

    /// Looks for due jobs now, for instance after the clock was moved.
    pub fn wake(&self) {
        self.wake.notify_one();
    }

    /// The lateness of the most recent runs (up to 100,000).
    pub fn lateness(&self) -> Lateness {
        let mut sorted: Vec<u64> = self.lock_samples().iter().copied().collect();
        if sorted.is_empty() {
            return Lateness::default();
        }
        sorted.sort_unstable();
        let at = |q: f64| sorted[((sorted.len() - 1) as f64 * q).round() as usize];
        Lateness {
            samples: sorted.len() as u64,
            p50_ms: at(0.50),
            p99_ms: at(0.99),
            max_ms: *sorted.last().expect("not empty"),
        }
    }

    /// Forgets the lateness samples.
    pub fn reset_lateness(&self) {
        self.lock_samples().clear();
    }

    pub async fn backlog(&self) -> Result<Backlog, plateau_store::Error> {
        jobs::backlog(&self.db, self.now(), time::now_ms()).await
    }

    fn lock_samples(&self) -> std::sync::MutexGuard<'_, VecDeque<u64>> {
        self.samples.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The host clock: when jobs are due.
    fn now(&self) -> i64 {
        i64::try_from(self.clock.now_millis()).unwrap_or(i64::MAX)
    }

    /// Runs passes until the task is dropped.
    pub async fn run(self: Arc<Self>) {
        loop {
            let wait = match self.clone().pass().await {
                Ok(wait) => wait,
                Err(e) => {
                    tracing::warn!(error = %e, "running plugin jobs");
                    self.poll
                }
            };
            if !wait.is_zero() {
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = self.wake.notified() => {}
                }
            }
        }
    }

    /// Syncs ticks, claims what is due and starts the runs; returns how long
    /// to wait before the next pass (zero: at once, more may be due).
    async fn pass(self: Arc<Self>) -> Result<Duration, plateau_store::Error> {
        self.sync_ticks().await?;
        let free = self.held.available_permits();
        if free < CLAIM_AT_LEAST {
            // Wait for runs to end rather than spin or claim one at a time.
            let wanted = u32::try_from(CLAIM_AT_LEAST).expect("small");
            drop(self.held.acquire_many(wanted).await);
            return Ok(Duration::ZERO);
        }
        let now = self.now();
        // Leases are on the system clock, so that moving the host clock
        // never frees a running job.
        let lease_now = time::now_ms();
        // A read first, so an idle host does not take the writer each poll,
        // and sleeps only until the next job is due.
        match jobs::next_due(&self.db, lease_now).await? {
            None => return Ok(self.poll),
            Some(due) if due > now => {
                let until = Duration::from_millis((due - now).unsigned_abs());
                return Ok(self.poll.min(until));
            }
            Some(_) => {}
        }
        let claimed = jobs::claim(
            &self.db,
            &self.owner,
            now,
            lease_now,
            lease_now + LEASE_MS,
            free as i64,
        )
        .await?;
        if claimed.is_empty() {
            // Another host took them.
            return Ok(self.poll);
        }
        for job in claimed {
            // Only this loop takes places, and it claimed no more than
            // were free.
            let place = self
                .held
                .clone()
                .try_acquire_owned()
                .expect("a place for each claimed job");
            let runner = self.clone();
            tokio::spawn(async move {
                let permit = runner
                    .permits
                    .clone()
                    .acquire_owned()
                    .await
                    .expect("the semaphore is never closed");
                // A job that waited in hand for half its lease could be
                // claimed again while it runs: leave it to the next pass.
                if time::now_ms() < lease_now + LEASE_MS / 2 {
                    runner.run_one(job).await;
                }
                drop((permit, place));
            });
        }
        Ok(Duration::ZERO)
    }

    /// Puts the schedules of each plugin's current version in the jobs
    /// table, once per version.
    async fn sync_ticks(&self) -> Result<(), plateau_store::Error> {
        for (name, version, _) in self.host.current() {
            let synced = self
                .ticks_synced
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&name)
                .is_some_and(|d| d == version.digest());
            if synced {
                continue;
            }
            let schedules: Vec<(String, i64)> = version
                .description()
                .schedules
                .iter()
                .map(|s| (s.name.clone(), i64::from(s.every_seconds) * 1000))
                .collect();
            jobs::sync_ticks(&self.db, &name, &schedules, self.now()).await?;
            self.ticks_synced
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(name, version.digest().to_owned());
        }
        Ok(())
    }

    async fn run_one(&self, job: ClaimedJob) {
        let started = self.now();
        {
            let mut samples = self.lock_samples();
            if samples.len() == SAMPLES {
                samples.pop_front();
            }
            samples.push_back(started.saturating_sub(job.due).max(0) as u64);
        }
        let outcome = match self.host.version(&job.plugin) {
            Some(version) => run_in(&version, &job, started).await,
            None => Err(format!("plugin {} is not active", job.plugin)),
        };
        if let Err(why) = outcome {
            tracing::warn!(plugin = %job.plugin, kind = %job.kind, key = %job.key, attempt = job.attempt, error = %why, "plugin job failed");
            if let Err(e) = self.after_failure(&job).await {
                tracing::error!(plugin = %job.plugin, error = %e, "rescheduling a failed job");
            }
        }
    }

    /// Backoff, or giving up after [`MAX_ATTEMPTS`].
    async fn after_failure(&self, job: &ClaimedJob) -> Result<(), plateau_store::Error> {
        let key = job.job_key();
        let now = self.now();
        if job.attempt < MAX_ATTEMPTS {
            let backoff = (1000_i64 << (job.attempt - 1).clamp(0, 20)).min(MAX_BACKOFF_MS);
            return jobs::retry(&self.db, &key, job.version, now + backoff, false).await;
        }
        match job.every_ms {
            Some(every) => {
                let next = next_due(job.due, every, now);
                jobs::retry(&self.db, &key, job.version, next, true).await
            }
            None => {
                tracing::error!(plugin = %job.plugin, key = %job.key, "dropping a job that failed {MAX_ATTEMPTS} times");
                jobs::give_up(&self.db, &key, job.version).await
            }
        }
    }
}

/// The first time after `now` on the grid `due + k * every`, so a repeating
/// job that fell behind skips the runs it missed instead of bunching them.
pub fn next_due(due: i64, every: i64, now: i64) -> i64 {
    if every <= 0 {
        return now;
    }
    let behind = (now - due).max(0) / every + 1;
    due + behind * every
}

/// Runs the job in `version`, committing `finish` with its writes.
async fn run_in(version: &PluginVersion, job: &ClaimedJob, now: i64) -> Result<(), String> {
    let namespace = if job.namespace.is_empty() {
        Namespace::Global
    } else {
        Namespace::Organization(job.namespace.clone())
    };
    let kind = if job.kind == "tick" {
        JobKind::Tick
    } else {
        JobKind::Job
    };
    let finish = JobWrite::Finish {
        id: JobId {
            bucket: BucketId {
                plugin: job.plugin.clone(),
                namespace,
            },
            kind,
            key: job.key.clone(),
        },
        version: job.version,
        next_due: job
            .every_ms
            .map(|every| next_due(job.due, every, now) as u64),
    };
    let due = job.due.max(0) as u64;
    let outcome: HookOutcome = match kind {
        JobKind::Tick => {
            let tick = Tick {
                schedule: job.key.clone(),
                at: due,
            };
            version.on_tick(tick, Some(finish)).await
        }
        JobKind::Job => {
            let run = Job {
                key: job.key.clone(),
                organization_id: (!job.namespace.is_empty()).then(|| job.namespace.clone()),
                payload: job.payload.clone(),
                due,
                attempt: job.attempt.max(1) as u32,
            };
            version.on_job(run, Some(finish)).await
        }
    }
    .map_err(|e| e.to_string())?;
    outcome.result
}

#[cfg(test)]
mod tests {
    use super::next_due;

    #[test]
    fn repeating_jobs_skip_missed_runs() {
        assert_eq!(next_due(1000, 100, 1000), 1100);
        assert_eq!(next_due(1000, 100, 1050), 1100);
        assert_eq!(next_due(1000, 100, 1100), 1200);
        assert_eq!(next_due(1000, 100, 1575), 1600);
        assert_eq!(next_due(1000, 100, 900), 1100);
    }
}
