//! The wasmtime engine: component model, async, fuel, epoch interruption and
//! the pooling allocator, plus the epoch ticker on its own thread.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use wasmtime::{
    Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig, ProfilingStrategy,
};

use crate::config::RuntimeConfig;
use crate::error::{Error, Result};

/// Core instances, memories and tables a Rust component needs at most; a
/// wasm32-wasip2 component has one main module plus a few shims.
const CORE_INSTANCES_PER_COMPONENT: u32 = 16;
const MEMORIES_PER_COMPONENT: u32 = 2;
const TABLES_PER_COMPONENT: u32 = 8;
/// Bytes of each pooled linear memory and table that stay mapped when an
/// instance ends: the pages a call dirtied are reset in place (found with
/// `PAGEMAP_SCAN` where the kernel has it) instead of being unmapped with
/// `madvise`, whose TLB shootdowns and the page faults of the next call
/// cost more than the guest's own work. Bounds the RSS a warm slot keeps.
const MEMORY_KEEP_RESIDENT: usize = 4 << 20;
const TABLE_KEEP_RESIDENT: usize = 1 << 20;

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
    if config.pooling {
        let n = config.max_concurrency;
        let mut pool = PoolingAllocationConfig::default();
        pool.total_component_instances(n)
            .total_core_instances(n.saturating_mul(CORE_INSTANCES_PER_COMPONENT))
            .total_memories(n.saturating_mul(MEMORIES_PER_COMPONENT))
            .total_tables(n.saturating_mul(TABLES_PER_COMPONENT))
            .total_stacks(n)
            .max_core_instances_per_component(CORE_INSTANCES_PER_COMPONENT)
            .max_memories_per_component(MEMORIES_PER_COMPONENT)
            .max_tables_per_component(TABLES_PER_COMPONENT)
            .linear_memory_keep_resident(MEMORY_KEEP_RESIDENT)
            .table_keep_resident(TABLE_KEEP_RESIDENT)
            .pagemap_scan(Enabled::Auto);
        let mut pooled = base_config(config);
        pooled.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        match Engine::new(&pooled) {
            Ok(engine) => return Ok((engine, true)),
            Err(e) => tracing::warn!(
                error = %e,
                max_concurrency = n,
                "the pooling allocator could not reserve its memory; falling back to on-demand allocation"
            ),
        }
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
