//! The `scheduler` capability: durable jobs, buffered with the call's
//! key-value writes and committed with them.

use wasmtime::component::{HasData, Linker};

use crate::context::{CallContext, GuestNamespace, guest_namespace_from};
use crate::overlay::{KvError, Overlay};
use crate::storage::{JobId, JobKind, JobWrite};

mod gen_ {
    wasmtime::component::bindgen!({
        path: ["../../wit/legacy/plugin@0.2.0", "../../wit/deps/scheduler"],
        interfaces: "
            import plateau:plugin/scheduler@0.2.0;
            import plateau:scheduler/scheduler@0.3.0;
        ",
        imports: { default: async | trappable },
    });
}
use gen_::plateau::{plugin::scheduler as v0_2, scheduler::scheduler as v0_3};

guest_namespace_from!(v0_2::Namespace, v0_3::Namespace);

/// Job keys are 1 to 256 bytes without control characters.
const MAX_KEY: usize = 256;
/// The largest payload, in bytes.
const MAX_PAYLOAD: usize = 64 << 10;
/// The shortest interval of a repeating job.
pub const MIN_EVERY_MS: u64 = 1000;

/// What `scheduler` sees of the store: the call, and the overlay the jobs
/// are buffered in.
pub(crate) struct SchedulerView<'a> {
    pub call: &'a CallContext,
    pub overlay: &'a mut Overlay,
}

struct HasScheduler;

impl HasData for HasScheduler {
    type Data<'a> = SchedulerView<'a>;
}

pub(crate) fn add_to_linker<T: Send + 'static>(
    linker: &mut Linker<T>,
    view: fn(&mut T) -> SchedulerView<'_>,
) -> wasmtime::Result<()> {
    v0_2::add_to_linker::<T, HasScheduler>(linker, view)?;
    v0_3::add_to_linker::<T, HasScheduler>(linker, view)
}

/// A scheduler failure the guest sees.
enum SchedulerError {
    AccessDenied(String),
    Invalid(String),
}

/// A job to schedule, whatever the WIT version.
struct NewJob {
    namespace: GuestNamespace,
    key: String,
    at: u64,
    every_ms: Option<u64>,
    payload: String,
}

fn check_key(key: &str) -> Result<(), SchedulerError> {
    if key.is_empty() || key.len() > MAX_KEY || key.chars().any(char::is_control) {
        return Err(SchedulerError::Invalid(format!(
            "a job key is 1 to {MAX_KEY} bytes without control characters"
        )));
    }
    Ok(())
}

impl SchedulerView<'_> {
    /// The job's identity, under the namespace rules of `kv`, with room
    /// left in the call's write budget.
    fn job_id(&self, ns: GuestNamespace, key: &str) -> Result<JobId, SchedulerError> {
        check_key(key)?;
        let bucket = self.call.bucket(ns).map_err(|e| match e {
            KvError::AccessDenied(m) => SchedulerError::AccessDenied(m),
            other => SchedulerError::Invalid(format!("{other:?}")),
        })?;
        let limits = &self.call.plugin.settings.limits;
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

    fn schedule(&mut self, job: NewJob) -> Result<(), SchedulerError> {
        let id = self.job_id(job.namespace, &job.key)?;
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

    fn cancel(&mut self, ns: GuestNamespace, key: &str) -> Result<(), SchedulerError> {
        let id = self.job_id(ns, key)?;
        self.overlay.push_job(JobWrite::Cancel { id });
        Ok(())
    }
}

/// The traits of one WIT version's bindings, on the logic above.
macro_rules! wit_impls {
    ($($wit:ident),+) => {$(
        impl From<SchedulerError> for $wit::Error {
            fn from(e: SchedulerError) -> Self {
                match e {
                    SchedulerError::AccessDenied(m) => $wit::Error::AccessDenied(m),
                    SchedulerError::Invalid(m) => $wit::Error::Invalid(m),
                }
            }
        }

        impl $wit::Host for SchedulerView<'_> {
            async fn schedule(
                &mut self,
                job: $wit::NewJob,
            ) -> wasmtime::Result<Result<(), $wit::Error>> {
                let job = NewJob {
                    namespace: job.namespace.into(),
                    key: job.key,
                    at: job.at,
                    every_ms: job.every_ms,
                    payload: job.payload,
                };
                Ok(SchedulerView::schedule(self, job).map_err(Into::into))
            }

            async fn cancel(
                &mut self,
                ns: $wit::Namespace,
                key: String,
            ) -> wasmtime::Result<Result<(), $wit::Error>> {
                Ok(SchedulerView::cancel(self, ns.into(), &key).map_err(Into::into))
            }
        }
    )+};
}

wit_impls!(v0_2, v0_3);
