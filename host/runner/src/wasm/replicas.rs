//! [`WasmReplicas`]: one deployment's component, linked once; each
//! request instantiates it in a fresh store under the app's limits.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use arc_swap::ArcSwap;
use async_trait::async_trait;
use http_body_util::BodyExt;
use tokio::sync::Semaphore;
use wasmtime::{Engine, Store, UpdateDeadline};
use wasmtime_wasi_http::WasiHttpView;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;

use super::output;
use super::state::RequestState;
use super::{CPU_PER_CORE, EPOCH_TICK, REQUEST_DEADLINE};
use crate::logs::{LogSink, Stream};
use crate::{Body, BoxError, Error, LaunchSpec, Limits, Replicas, Result, VolumeMount};

pub struct WasmReplicas {
    engine: Engine,
    pre: ProxyPre<RequestState>,
    env: Vec<(String, String)>,
    volumes: Vec<VolumeMount>,
    limits: Limits,
    logs: Arc<dyn LogSink>,
    /// The pool's slots, shared by every app of the runner.
    slots: Arc<Semaphore>,
    /// One permit per replica: requests beyond them wait. Replaced whole
    /// on a scale change; requests holding the old one finish with it.
    permits: ArcSwap<Semaphore>,
    /// Requests at once now (the replicas).
    replicas: AtomicU64,
    /// Epoch ticks the guests ran through since launch: their CPU time.
    cpu_ticks: Arc<AtomicU64>,
    /// Bytes of linear memory the live instances hold.
    live_memory: Arc<AtomicU64>,
    stopped: AtomicBool,
    /// Requests being served now (a guest may be writing to a volume).
    in_flight: Arc<AtomicU64>,
}

impl WasmReplicas {
    pub(super) fn new(
        engine: Engine,
        pre: ProxyPre<RequestState>,
        slots: Arc<Semaphore>,
        spec: LaunchSpec,
    ) -> Self {
        WasmReplicas {
            engine,
            pre,
            slots,
            permits: ArcSwap::from_pointee(Semaphore::new(spec.limits.replicas.max(1) as usize)),
            replicas: AtomicU64::new(u64::from(spec.limits.replicas.max(1))),
            cpu_ticks: Arc::new(AtomicU64::new(0)),
            live_memory: Arc::new(AtomicU64::new(0)),
            env: spec.env,
            volumes: spec.volumes,
            limits: spec.limits,
            logs: spec.logs,
            stopped: AtomicBool::new(false),
            in_flight: Arc::new(AtomicU64::new(0)),
        }
    }

    /// The epoch ticks one request's guest may run through.
    fn cpu_ticks(&self) -> u64 {
        let per_core = (CPU_PER_CORE.as_millis() / EPOCH_TICK.as_millis()) as u64;
        (per_core * u64::from(self.limits.milli_cpu) / 1000).max(1)
    }
}

#[async_trait]
impl Replicas for WasmReplicas {
    async fn handle(&self, request: http::Request<Body>) -> Result<http::Response<Body>> {
        let serving = InFlight::count(&self.in_flight);
        if self.stopped.load(Ordering::Acquire) {
            return Err(Error::Stopped);
        }
        let permit = self
            .permits
            .load_full()
            .acquire_owned()
            .await
            .map_err(|_| Error::Stopped)?;
        let slot = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| Error::Stopped)?;
        let stdout = output::new(Stream::Stdout, self.logs.clone());
        let stderr = output::new(Stream::Stderr, self.logs.clone());
        let state = RequestState::new(
            &self.env,
            &self.volumes,
            self.limits.memory_mb,
            self.live_memory.clone(),
            stdout.clone(),
            stderr.clone(),
        )?;
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| s.limiter());
        // Called at the first check of the guest after each tick it runs
        // through (or waits to run through: a tick spent ready but not
        // scheduled counts too, which errs on stopping a runaway sooner).
        let budget = self.cpu_ticks();
        let mut ticks = 0u64;
        let deadline = Instant::now() + REQUEST_DEADLINE;
        let cpu_ticks = self.cpu_ticks.clone();
        store.epoch_deadline_callback(move |mut cx| {
            ticks += 1;
            cpu_ticks.fetch_add(1, Ordering::Relaxed);
            if ticks > budget {
                cx.data_mut().out_of_cpu = true;
                Ok(UpdateDeadline::Interrupt)
            } else if Instant::now() >= deadline {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        store.set_epoch_deadline(1);
        let request = request.map(|body| {
            body.map_err(|e| wasmtime_wasi_http::Error::InternalError(Some(e.to_string())))
                .boxed_unsync()
        });
        let incoming = store
            .data_mut()
            .http()
            .new_incoming_request(Scheme::Http, request)
            .map_err(|e| Error::Failed(format!("{e:#}")))?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let out = store
            .data_mut()
            .http()
            .new_response_outparam(tx)
            .map_err(|e| Error::Failed(format!("{e:#}")))?;
        let pre = self.pre.clone();
        let task = tokio::spawn(async move {
            let _permits = (permit, slot, serving);
            let result = async {
                let proxy = pre.instantiate_async(&mut store).await?;
                proxy
                    .wasi_http_incoming_handler()
                    .call_handle(&mut store, incoming, out)
                    .await
            }
            .await;
            output::finish(&stdout);
            output::finish(&stderr);
            let out_of_cpu = store.data().out_of_cpu;
            // The store goes back to the pool before the slot's permit.
            drop(store);
            result.map_err(|e| explain(e, out_of_cpu))
        });
        match rx.await {
            Ok(Ok(response)) => {
                Ok(response.map(|body| body.map_err(|e| Box::new(e) as BoxError).boxed_unsync()))
            }
            Ok(Err(code)) => Err(Error::Failed(format!(
                "the app answered with error {code:?}"
            ))),
            Err(_) => match task.await {
                Ok(Err(reason)) => Err(Error::Failed(reason)),
                _ => Err(Error::Failed(
                    "the app ended without sending a response".to_owned(),
                )),
            },
        }
    }

    fn env_value(&self, key: &str) -> Option<String> {
        self.env
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    }

    fn set_replicas(&self, replicas: u32) {
        self.permits
            .store(Arc::new(Semaphore::new(replicas.max(1) as usize)));
        self.replicas
            .store(u64::from(replicas.max(1)), Ordering::Relaxed);
    }

    fn usage(&self) -> crate::Usage {
        let replicas = self.replicas.load(Ordering::Relaxed);
        let tick_usec = EPOCH_TICK.as_micros() as u64;
        crate::Usage {
            cpu_usec: self.cpu_ticks.load(Ordering::Relaxed) * tick_usec,
            capacity_milli: replicas * 1000,
            memory_bytes: self.live_memory.load(Ordering::Relaxed),
            replicas: replicas as u32,
        }
    }

    fn stop(&self) {
        self.stopped.store(true, Ordering::Release);
    }

    fn drained(&self) -> bool {
        self.stopped.load(Ordering::Acquire) && self.in_flight.load(Ordering::Acquire) == 0
    }
}

/// Counts a request while its guest may run.
struct InFlight(Arc<AtomicU64>);

impl InFlight {
    fn count(counter: &Arc<AtomicU64>) -> InFlight {
        counter.fetch_add(1, Ordering::AcqRel);
        InFlight(counter.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Says why a guest stopped: its CPU budget, its memory, or its trap.
fn explain(e: wasmtime::Error, out_of_cpu: bool) -> String {
    if out_of_cpu {
        return "the request used up its CPU budget (milliCpu); raise milliCpu or do less per request".to_owned();
    }
    format!("the app trapped: {e:#}")
}
