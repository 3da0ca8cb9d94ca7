//! [`PluginVersion`] and the execution of one call: a fresh store and
//! instance per call, with a memory cap, fuel, a deadline, and a
//! transactional commit of the call's writes.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::{Store, Trap, UpdateDeadline};

use plateau_contract::api_schema::ApiSchema;

use crate::bindings::{Call, Returned, WorldPre};
use crate::config::{PluginLimits, PluginSettings};
use crate::context::{MAX_PARKED, Phase, PluginContext};
use crate::error::ExecError;
use crate::inspect::WitVersion;
use crate::load::RuntimeInner;
use crate::overlay::Overlay;
use crate::state::State;
use crate::storage::{BucketId, JobWrite, KvWrite, StorageError};
use crate::types::{Caller, Description, Event, Job, Request, Response, Tick};

/// Past the deadline, the epoch trap should have fired; the executor-level
/// timeout is the backstop for a host call that ignores it.
const BACKSTOP_GRACE: Duration = Duration::from_millis(250);

/// One loaded version of a plugin, ready to serve.
pub struct PluginVersion {
    pub(crate) runtime: Arc<RuntimeInner>,
    pub(crate) pre: WorldPre,
    pub(crate) context: Arc<PluginContext>,
    pub(crate) description: Description,
    /// `name@version`, as responses name the version that served them.
    pub(crate) served_by: String,
    pub(crate) digest: String,
    pub(crate) wit_version: WitVersion,
    /// Its routes' bodies, when it told them.
    pub(crate) api_schema: Option<ApiSchema>,
}

/// A request's result.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub response: Response,
    /// Fuel the call consumed.
    pub fuel_consumed: u64,
    /// Whether writes or events were committed (false when there were none
    /// or the status was 500 or more).
    pub committed: bool,
}

/// A tick's or an event's result.
#[derive(Debug, Clone)]
pub struct HookOutcome {
    /// The plugin's own answer; on `Err` nothing was committed.
    pub result: Result<(), String>,
    pub fuel_consumed: u64,
    pub committed: bool,
}

/// What a finished call left behind.
pub(crate) struct Ran {
    pub returned: Returned,
    pub overlay: Overlay,
    pub fuel_consumed: u64,
}

impl PluginVersion {
    pub fn name(&self) -> &str {
        &self.description.name
    }

    pub fn description(&self) -> &Description {
        &self.description
    }

    /// Its routes' request and response bodies, when the component told
    /// them at load.
    pub fn api_schema(&self) -> Option<&ApiSchema> {
        self.api_schema.as_ref()
    }

    /// `name@version` of the component's self-description.
    pub fn served_by(&self) -> &str {
        &self.served_by
    }

    /// `sha256:<hex>` of the component.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    pub fn wit_version(&self) -> WitVersion {
        self.wit_version
    }

    pub fn settings(&self) -> &PluginSettings {
        &self.context.settings
    }

    /// Serves one request. Writes and events are committed when the status
    /// is below 500 and dropped otherwise.
    pub async fn handle(&self, req: Request) -> Result<Outcome, ExecError> {
        let caller = Some(req.caller.clone());
        let ran = self.call(Phase::Request, caller, Call::Handle(req)).await?;
        let Returned::Response(response) = ran.returned else {
            unreachable!("handle returns a response");
        };
        let committed = if (100..500).contains(&response.status) {
            self.commit(ran.overlay).await?
        } else {
            false
        };
        Ok(Outcome {
            response,
            fuel_consumed: ran.fuel_consumed,
            committed,
        })
    }

    /// Creates a fresh store and instance, as every call does, and drops
    /// them without calling the guest: the per-request instantiation cost,
    /// for benchmarks.
    pub async fn instantiate_only(&self) -> Result<(), ExecError> {
        let rt = &self.runtime;
        let _permit = rt
            .permits
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let limits = &self.context.settings.limits;
        let mut store = Store::new(
            &rt.engine,
            State::new(self.context.clone(), Phase::Request, None),
        );
        store.limiter(|state| &mut state.limiter);
        store
            .set_fuel(limits.fuel)
            .map_err(|e| instantiate_error(self.name(), e))?;
        store.set_epoch_deadline(u64::MAX / 2);
        self.pre
            .instantiate(&mut store)
            .await
            .map(drop)
            .map_err(|e| instantiate_error(self.name(), e))
    }

    /// Runs a scheduled tick; its writes, and `finish` (the end of the
    /// durable tick that triggered it), are committed when it returns `Ok`.
    pub async fn on_tick(
        &self,
        tick: Tick,
        finish: Option<JobWrite>,
    ) -> Result<HookOutcome, ExecError> {
        self.hook(Call::Tick(tick), Phase::Tick, finish).await
    }

    /// Delivers an event; its writes are committed when it returns `Ok`.
    pub async fn on_event(&self, event: Event) -> Result<HookOutcome, ExecError> {
        self.hook(Call::Event(event), Phase::Event, None).await
    }

    /// Runs a due job; its writes, and `finish`, are committed when it
    /// returns `Ok`. A component of WIT 0.1.0 answers with an error.
    pub async fn on_job(
        &self,
        job: Job,
        finish: Option<JobWrite>,
    ) -> Result<HookOutcome, ExecError> {
        self.hook(Call::Job(job), Phase::Tick, finish).await
    }

    async fn hook(
        &self,
        call: Call,
        phase: Phase,
        finish: Option<JobWrite>,
    ) -> Result<HookOutcome, ExecError> {
        let ran = self.call(phase, None, call).await?;
        let Returned::Hook(result) = ran.returned else {
            unreachable!("hooks return a result");
        };
        let committed = match result {
            Ok(()) => {
                let mut overlay = ran.overlay;
                if let Some(finish) = finish {
                    overlay.push_job(finish);
                }
                self.commit(overlay).await?
            }
            Err(_) => false,
        };
        Ok(HookOutcome {
            result,
            fuel_consumed: ran.fuel_consumed,
            committed,
        })
    }

    async fn call(
        &self,
        phase: Phase,
        caller: Option<Caller>,
        call: Call,
    ) -> Result<Ran, ExecError> {
        run(
            &self.runtime,
            &self.pre,
            self.context.clone(),
            phase,
            caller,
            call,
        )
        .await
    }

    /// Commits the call's write set; `Ok(false)` when it was empty.
    async fn commit(&self, overlay: Overlay) -> Result<bool, ExecError> {
        let plugin = self.name().to_string();
        let set = overlay.into_write_set(&plugin);
        if set.is_empty() {
            return Ok(false);
        }
        let timeout = self.context.settings.limits.storage_timeout;
        let waits = &self.context.waits;
        // Only while a call is parked does a commit report its keys.
        let written: Vec<(BucketId, String)> = if waits.any() {
            set.writes.iter().map(written_key).collect()
        } else {
            Vec::new()
        };
        let commit = self.context.services.storage.commit(set);
        match tokio::time::timeout(timeout, commit).await {
            Ok(Ok(())) => {
                waits.committed(written.iter().map(|(b, k)| (b, k.as_str())));
                Ok(true)
            }
            Ok(Err(StorageError::Conflict { key })) => Err(ExecError::Conflict { plugin, key }),
            Ok(Err(source)) => Err(ExecError::Commit { plugin, source }),
            Err(_) => Err(ExecError::Commit {
                plugin,
                source: StorageError::Unavailable(format!("the commit took over {timeout:?}")),
            }),
        }
    }
}

/// The bucket and key a write changes.
pub(crate) fn written_key(write: &KvWrite) -> (BucketId, String) {
    match write {
        KvWrite::Set { bucket, key, .. }
        | KvWrite::Delete { bucket, key }
        | KvWrite::Increment { bucket, key, .. } => (bucket.clone(), key.clone()),
    }
}

/// Runs one call in a fresh store; the store is dropped afterwards whatever
/// happened, so a trapped or interrupted instance is never entered again.
pub(crate) async fn run(
    rt: &RuntimeInner,
    pre: &WorldPre,
    context: Arc<PluginContext>,
    phase: Phase,
    caller: Option<Caller>,
    call: Call,
) -> Result<Ran, ExecError> {
    let _permit = rt
        .permits
        .acquire()
        .await
        .expect("the semaphore is never closed");
    let limits = context.settings.limits.clone();
    let plugin = context.name.clone();
    let mut store = fresh_store(rt, context, phase, caller)?;

    // A call parked in `kv.wait` has its deadline moved by the time parked,
    // up to `MAX_PARKED` in all.
    let backstop = limits.deadline + MAX_PARKED + BACKSTOP_GRACE;
    let result = tokio::time::timeout(backstop, async {
        let instance = match pre.instantiate(&mut store).await {
            Ok(instance) => instance,
            Err(e) => return Err((true, e)),
        };
        instance
            .call(&mut store, call)
            .await
            .map_err(|e| (false, e))
    })
    .await;
    let fuel_consumed = limits.fuel.saturating_sub(store.get_fuel().unwrap_or(0));
    let deadline = |plugin: String| ExecError::DeadlineExceeded {
        plugin,
        deadline_ms: limits.deadline.as_millis() as u64,
    };
    match result {
        Err(_elapsed) => Err(deadline(plugin)),
        Ok(Err((instantiating, e))) => {
            Err(classify(&plugin, &limits, store.data(), instantiating, e))
        }
        Ok(Ok(returned)) => Ok(Ran {
            returned,
            overlay: store.into_data().overlay,
            fuel_consumed,
        }),
    }
}

/// A fresh store for one call: the memory cap, the fuel, and an epoch
/// callback that yields to the executor each tick and interrupts the guest
/// past the call's deadline.
pub(crate) fn fresh_store(
    rt: &RuntimeInner,
    context: Arc<PluginContext>,
    phase: Phase,
    caller: Option<Caller>,
) -> Result<Store<State>, ExecError> {
    let fuel = context.settings.limits.fuel;
    let plugin = context.name.clone();
    let mut store = Store::new(&rt.engine, State::new(context, phase, caller));
    store.limiter(|state| &mut state.limiter);
    store
        .set_fuel(fuel)
        .map_err(|e| instantiate_error(&plugin, e))?;
    store.epoch_deadline_callback(|mut cx| {
        if Instant::now() >= cx.data().call.deadline {
            cx.data_mut().call.deadline_hit = true;
            Ok(UpdateDeadline::Interrupt)
        } else {
            Ok(UpdateDeadline::Yield(1))
        }
    });
    store.set_epoch_deadline(1);
    Ok(store)
}

pub(crate) fn instantiate_error(plugin: &str, e: wasmtime::Error) -> ExecError {
    ExecError::Instantiate {
        plugin: plugin.to_string(),
        message: e.to_string(),
    }
}

/// Names the reason a call failed: limits first, then the trap code.
pub(crate) fn classify(
    plugin: &str,
    limits: &PluginLimits,
    state: &State,
    instantiating: bool,
    e: wasmtime::Error,
) -> ExecError {
    let plugin = plugin.to_string();
    if state.limiter.hit {
        return ExecError::MemoryLimit {
            plugin,
            limit_bytes: limits.memory_bytes,
        };
    }
    let trap = e.downcast_ref::<Trap>().copied();
    if state.call.deadline_hit || trap == Some(Trap::Interrupt) {
        return ExecError::DeadlineExceeded {
            plugin,
            deadline_ms: limits.deadline.as_millis() as u64,
        };
    }
    if trap == Some(Trap::OutOfFuel) {
        return ExecError::FuelExhausted {
            plugin,
            fuel: limits.fuel,
        };
    }
    if instantiating && trap.is_none() {
        return instantiate_error(&plugin, e);
    }
    ExecError::Trap {
        plugin,
        message: format!("{e:?}"),
    }
}
