//! The `scheduler` capability: durable jobs, buffered with the call's
//! key-value writes and committed with them.

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::v0_2::plateau::plugin::scheduler as v0_2;
use crate::host::kv::Namespace0;
use crate::overlay::KvError;
use crate::state::State;
use crate::storage::{BucketId, JobId, JobKind, JobWrite};

/// Job keys are 1 to 256 bytes without control characters.
const MAX_KEY: usize = 256;
/// The largest payload, in bytes.
const MAX_PAYLOAD: usize = 64 << 10;
/// The shortest interval of a repeating job.
pub const MIN_EVERY_MS: u64 = 1000;

pub(crate) fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
    v0_2::add_to_linker::<State, HasSelf<State>>(linker, |s| s)
}

/// A scheduler failure the guest sees.
enum SchedulerError {
    AccessDenied(String),
    Invalid(String),
}

impl From<SchedulerError> for v0_2::Error {
    fn from(e: SchedulerError) -> Self {
        match e {
            SchedulerError::AccessDenied(m) => v0_2::Error::AccessDenied(m),
            SchedulerError::Invalid(m) => v0_2::Error::Invalid(m),
        }
    }
}

fn check_key(key: &str) -> Result<(), SchedulerError> {
    if key.is_empty() || key.len() > MAX_KEY || key.chars().any(char::is_control) {
        return Err(SchedulerError::Invalid(format!(
            "a job key is 1 to {MAX_KEY} bytes without control characters"
        )));
    }
    Ok(())
}

impl State {
    /// The job's identity, under the namespace rules of `kv`, with room
    /// left in the call's write budget.
    fn job_id(&self, ns: Namespace0, key: &str) -> Result<JobId, SchedulerError> {
        check_key(key)?;
        let bucket: BucketId = self.open_bucket(ns).map_err(|e| match e {
            KvError::AccessDenied(m) => SchedulerError::AccessDenied(m),
            other => SchedulerError::Invalid(format!("{other:?}")),
        })?;
        let limits = &self.plugin.settings.limits;
        if self.overlay.write_count() + self.overlay.job_count() >= limits.max_writes {
            return Err(SchedulerError::Invalid(format!(
                "a call may make at most {} writes",
                limits.max_writes
            )));
        }
        Ok(JobId {
            bucket,
            kind: JobKind::Job,
            key: key.to_owned(),
        })
    }

    fn schedule_job(&mut self, job: v0_2::NewJob) -> Result<(), SchedulerError> {
        let id = self.job_id(job.namespace.into(), &job.key)?;
        if job.payload.len() > MAX_PAYLOAD {
            return Err(SchedulerError::Invalid(format!(
                "a job payload is at most {MAX_PAYLOAD} bytes"
            )));
        }
        if job.every_ms.is_some_and(|ms| ms < MIN_EVERY_MS) {
            return Err(SchedulerError::Invalid(format!(
                "a repeating job runs at most every {MIN_EVERY_MS} ms"
            )));
        }
        self.overlay.push_job(JobWrite::Schedule {
            id,
            due: job.at,
            every_ms: job.every_ms,
            payload: job.payload,
        });
        Ok(())
    }
}

impl v0_2::Host for State {
    async fn schedule(&mut self, job: v0_2::NewJob) -> wasmtime::Result<Result<(), v0_2::Error>> {
        Ok(self.schedule_job(job).map_err(Into::into))
    }

    async fn cancel(
        &mut self,
        ns: v0_2::Namespace,
        key: String,
    ) -> wasmtime::Result<Result<(), v0_2::Error>> {
        Ok(match self.job_id(ns.into(), &key) {
            Ok(id) => {
                self.overlay.push_job(JobWrite::Cancel { id });
                Ok(())
            }
            Err(e) => Err(e.into()),
        })
    }
}
