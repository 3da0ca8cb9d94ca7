//! The Wasm runtime: `wasi:http/proxy` components run in-process by
//! wasmtime, a fresh instance per request (as `wasmtime serve` does),
//! allocated from a pool of instance slots (as `wasmtime serve` does).
//!
//! Limits: `memoryMb` caps the linear memory of an instance; `milliCpu`
//! is each request's CPU budget, counted in epoch ticks the guest runs
//! through (1000 milli-CPU is [`CPU_PER_CORE`], a second of one core's
//! work) and its guest yields to the executor every tick so one app
//! cannot hold a thread; `replicas` is how many requests of an app run at
//! once, the others wait, as they wait for a free slot of the pool.

mod output;
mod replicas;
mod state;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::Semaphore;
use wasmtime::component::{Component, Linker};
use wasmtime::{Config, Engine};
use wasmtime_wasi_http::p2::bindings::ProxyPre;

use crate::{Artifact, Error, LaunchSpec, Replicas, Result, Runner};
pub use replicas::WasmReplicas;
use state::RequestState;

/// Guest time of one request per whole core of `milliCpu`.
pub const CPU_PER_CORE: Duration = Duration::from_secs(1);
/// How often the epoch advances (each tick, a running guest yields and
/// one tick of its CPU budget is spent).
pub const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Longest time one request may run, whatever its CPU budget.
pub const REQUEST_DEADLINE: Duration = Duration::from_secs(60);
/// Instances of every app of this host alive at once: the slots of the
/// pooling allocator. A request past them waits for a slot.
pub const POOLED_INSTANCES: u32 = 1000;
/// Compiled components kept, by digest; rollbacks and restarts of the
/// same image skip compilation.
const COMPILED_CACHE: usize = 64;
/// Runs Wasm components; one engine for every app of this host.
pub struct WasmRunner {
    engine: Engine,
    linker: Arc<Linker<RequestState>>,
    compiled: Mutex<HashMap<String, Component>>,
    /// One permit per slot of the pool, shared by every app.
    slots: Arc<Semaphore>,
    _ticker: Ticker,
}

impl WasmRunner {
    pub fn new() -> Result<WasmRunner> {
        let engine = engine()?;
        let mut linker = Linker::new(&engine);
        // All of WASI 0.2 (an app reads its environment through
        // wasi:cli; no directories are preopened and no network is
        // allowed), then wasi:http.
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)
            .map_err(|e| Error::NotRunnable(format!("cannot link WASI: {e}")))?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)
            .map_err(|e| Error::NotRunnable(format!("cannot link wasi:http: {e}")))?;
        let ticker = Ticker::start(engine.clone())?;
        Ok(WasmRunner {
            engine,
            linker: Arc::new(linker),
            compiled: Mutex::new(HashMap::new()),
            slots: Arc::new(Semaphore::new(POOLED_INSTANCES as usize)),
            _ticker: ticker,
        })
    }

    async fn compile(&self, digest: &str, bytes: bytes::Bytes) -> Result<Component> {
        if let Some(c) = self.cached(digest) {
            return Ok(c);
        }
        let engine = self.engine.clone();
        let component = tokio::task::spawn_blocking(move || Component::new(&engine, &bytes))
            .await
            .map_err(|e| Error::NotRunnable(format!("compilation stopped: {e}")))?
            .map_err(|e| Error::NotRunnable(format!("{e:#}")))?;
        let mut cache = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= COMPILED_CACHE {
            cache.clear();
        }
        cache.insert(digest.to_owned(), component.clone());
        Ok(component)
    }

    fn cached(&self, digest: &str) -> Option<Component> {
        let cache = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        cache.get(digest).cloned()
    }
}

/// The engine: component model, epoch interruption (no fuel: the CPU
/// budget is counted in epoch ticks, which costs a guest nothing between
/// ticks) and the pooling allocator, or on-demand allocation where the
/// pool's address space cannot be reserved.
fn engine() -> Result<Engine> {
    let mut config = Config::new();
    config.wasm_component_model(true).epoch_interruption(true);
    if let Some(engine) = plateau_wasm_pool::pooled_engine(&config, POOLED_INSTANCES) {
        return Ok(engine);
    }
    Engine::new(&config).map_err(|e| Error::NotRunnable(format!("cannot start wasmtime: {e}")))
}

#[async_trait]
impl Runner for WasmRunner {
    async fn launch(&self, spec: LaunchSpec) -> Result<Arc<dyn Replicas>> {
        let Artifact::Wasm { digest, bytes } = &spec.artifact else {
            return Err(Error::NotRunnable(
                "the Wasm runtime runs wasi:http/proxy components only".to_owned(),
            ));
        };
        let component = self.compile(digest, bytes.clone()).await?;
        let pre = self
            .linker
            .instantiate_pre(&component)
            .map_err(|e| Error::NotRunnable(format!("{e:#}")))?;
        let pre = ProxyPre::new(pre).map_err(|e| {
            Error::NotRunnable(format!(
                "the component does not export wasi:http/incoming-handler: {e:#}"
            ))
        })?;
        Ok(Arc::new(WasmReplicas::new(
            self.engine.clone(),
            pre,
            self.slots.clone(),
            spec,
        )))
    }
}

/// Advances the engine's epoch on its own thread, outside the executor.
pub(crate) struct Ticker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Ticker {
    pub(crate) fn start(engine: Engine) -> Result<Ticker> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("plateau-apps-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(EPOCH_TICK);
                    engine.increment_epoch();
                }
            })
            .map_err(|e| Error::NotRunnable(format!("cannot start the epoch thread: {e}")))?;
        Ok(Ticker {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Ticker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
