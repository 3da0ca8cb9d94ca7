//! The wasmtime engine: component model, async, fuel, epoch interruption and
//! the pooling allocator, plus the epoch ticker on its own thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::{Config, Engine, ProfilingStrategy};

use crate::config::RuntimeConfig;
use crate::error::{Error, Result};

fn base_config(runtime: &RuntimeConfig) -> Config {
    let mut config = Config::new();
    config
        .wasm_component_model(true)
        .epoch_interruption(true)
        .consume_fuel(true);
    if runtime.perf_map {
        config.profiler(ProfilingStrategy::PerfMap);
    }
    config
}

/// Builds the engine, with the pooling allocator sized for
/// `max_concurrency` instances when asked; falls back to on-demand
/// allocation if the pool cannot be reserved. Returns whether it pools.
pub(crate) fn build(config: &RuntimeConfig) -> Result<(Engine, bool)> {
    if config.max_concurrency == 0 {
        return Err(Error::Config("max_concurrency must be at least 1".into()));
    }
    if config.pooling
        && let Some(engine) =
            plateau_wasm_pool::pooled_engine(&base_config(config), config.max_concurrency)
    {
        return Ok((engine, true));
    }
    let engine = Engine::new(&base_config(config)).map_err(Error::Engine)?;
    Ok((engine, false))
}

/// Increments the engine's epoch at a fixed period on a std thread, outside
/// the async executor, so a busy executor cannot delay deadlines.
pub(crate) struct EpochTicker {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl EpochTicker {
    pub fn start(engine: Engine, period: Duration) -> Result<Self> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("plateau-epoch".into())
            .spawn(move || {
                while !flag.load(Ordering::Relaxed) {
                    std::thread::sleep(period);
                    engine.increment_epoch();
                }
            })
            .map_err(|e| Error::Config(format!("cannot start the epoch ticker thread: {e}")))?;
        Ok(EpochTicker {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for EpochTicker {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
