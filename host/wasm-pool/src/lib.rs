//! The pooling allocator of this host's wasmtime engines. Plugins
//! (`plateau-plugin-runtime`) and Wasm apps (`plateau-runner`) both run a
//! fresh instance per call or request, as `wasmtime serve` does; both take
//! it from a pool shaped here, once.

use wasmtime::{Config, Enabled, Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

/// Core instances, memories and tables a Rust component needs at most; a
/// wasm32-wasip2 component has one main module plus a few shims.
const CORE_INSTANCES_PER_COMPONENT: u32 = 16;
const MEMORIES_PER_COMPONENT: u32 = 2;
const TABLES_PER_COMPONENT: u32 = 8;
/// Bytes of each pooled linear memory and table that stay mapped when an
/// instance ends: the pages it dirtied are reset in place (found with
/// `PAGEMAP_SCAN` where the kernel has it) instead of being unmapped with
/// `madvise`, whose TLB shootdowns and the page faults of the next
/// instance cost more than the guest's own work. Bounds the RSS a warm
/// slot keeps.
const MEMORY_KEEP_RESIDENT: usize = 4 << 20;
const TABLE_KEEP_RESIDENT: usize = 1 << 20;

/// An engine of `config` whose instances come from a pool of `instances`
/// component instances; `None`, with a warning, where the pool's address
/// space cannot be reserved, and the caller then allocates on demand.
pub fn pooled_engine(config: &Config, instances: u32) -> Option<Engine> {
    let n = instances.max(1);
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
    let mut pooled = config.clone();
    pooled.allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
    match Engine::new(&pooled) {
        Ok(engine) => Some(engine),
        Err(e) => {
            tracing::warn!(
                error = %e,
                instances = n,
                "the pooling allocator could not reserve its memory; instances are allocated on demand"
            );
            None
        }
    }
}
