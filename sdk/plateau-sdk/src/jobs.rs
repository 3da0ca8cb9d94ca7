//! Durable jobs (the `scheduler` capability, WIT 0.2.0): work the plugin
//! asks for at a time or an interval, delivered to [`crate::Plugin::on_job`]
//! at least once, by one host at a time, also after restarts.
//!
//! A job is committed with the call's other writes: a request that answers
//! 500 or more schedules nothing. Scheduling a key again replaces the job.
//!
//! ```no_run
//! # fn run() -> Result<(), plateau_sdk::ApiError> {
//! use plateau_sdk::jobs::{self, NewJob};
//! // Run the check `chk_1` every minute, starting now.
//! let now = plateau_sdk::clock::now_millis();
//! jobs::schedule(NewJob::at("check:chk_1", now).every_ms(60_000).payload("chk_1"))?;
//! # Ok(()) }
//! ```

use crate::error::ApiError;
use crate::kv::Namespace;
use crate::sys;

/// The shortest interval of a repeating job, in milliseconds.
pub const MIN_EVERY_MS: u64 = 1000;

/// A job to schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewJob {
    /// Whose job it is: the caller's organisation by default.
    pub namespace: Namespace,
    /// Unique per plugin and namespace: 1 to 256 bytes.
    pub key: String,
    /// First due time, in milliseconds since the Unix epoch.
    pub at: u64,
    /// Repeat this many milliseconds after each run.
    pub every_ms: Option<u64>,
    /// Up to 64 KiB handed back in [`Job::payload`].
    pub payload: String,
}

impl NewJob {
    /// A job for the caller's organisation, due at `at` (milliseconds since
    /// the Unix epoch; the past means at once).
    pub fn at(key: impl Into<String>, at: u64) -> Self {
        NewJob {
            namespace: Namespace::Caller,
            key: key.into(),
            at,
            every_ms: None,
            payload: String::new(),
        }
    }

    pub fn namespace(mut self, namespace: Namespace) -> Self {
        self.namespace = namespace;
        self
    }

    pub fn every_ms(mut self, every_ms: u64) -> Self {
        self.every_ms = Some(every_ms);
        self
    }

    pub fn payload(mut self, payload: impl Into<String>) -> Self {
        self.payload = payload.into();
        self
    }
}

/// A due job, as [`crate::Plugin::on_job`] receives it.
pub use plateau_contract::Job;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchedulerError {
    #[error("scheduler namespace refused: {0}")]
    AccessDenied(String),
    #[error("job is not valid: {0}")]
    Invalid(String),
    #[error("the scheduler is unavailable: {0}")]
    Unavailable(String),
}

impl From<SchedulerError> for ApiError {
    fn from(error: SchedulerError) -> ApiError {
        match error {
            SchedulerError::Unavailable(why) => {
                ApiError::unavailable(format!("the scheduler is unavailable, retry later: {why}"))
            }
            other => ApiError::internal(other.to_string()),
        }
    }
}

/// Schedules or replaces a job, committed with the call's other writes.
pub fn schedule(job: NewJob) -> Result<(), SchedulerError> {
    sys::job_schedule(&job)
}

/// Removes a job if there is one, committed with the call's other writes.
pub fn cancel(namespace: Namespace, key: &str) -> Result<(), SchedulerError> {
    sys::job_cancel(&namespace, key)
}
