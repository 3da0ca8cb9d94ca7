//! The data of one store: the WASI context, the resource table, limits and
//! the call's scope, overlay and deadline.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::ResourceLimiter;
use wasmtime::component::ResourceTable;
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::config::{PluginSettings, Services};
use crate::egress::EgressGuard;
use crate::overlay::{Overlay, Reads};
use crate::types::Caller;

/// What every call of one loaded plugin version shares.
pub(crate) struct PluginContext {
    /// The plugin's name; while loading, a label made of the digest.
    pub name: String,
    pub settings: PluginSettings,
    pub services: Services,
    pub egress: EgressGuard,
}

/// Which entry point a store serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    /// `describe` at load: no data, no events, no network.
    Describe,
    Request,
    Tick,
    Event,
}

/// Refuses linear memory beyond the plugin's cap, and remembers that it did
/// so the failure is reported as a memory limit rather than a plain trap.
pub(crate) struct MemoryLimiter {
    pub max_bytes: usize,
    pub hit: bool,
}

impl ResourceLimiter for MemoryLimiter {
    fn memory_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.max_bytes {
            self.hit = true;
            // An error (not `Ok(false)`) traps at once, so a guest cannot
            // keep running on a failed `memory.grow`.
            return Err(wasmtime::Error::msg(format!(
                "memory limit of {} bytes reached",
                self.max_bytes
            )));
        }
        Ok(true)
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        Ok(desired <= 1_000_000)
    }
}

pub(crate) struct State {
    pub wasi: WasiCtx,
    pub table: ResourceTable,
    pub limiter: MemoryLimiter,
    pub plugin: Arc<PluginContext>,
    pub phase: Phase,
    /// The caller of a request; ticks and events have none.
    pub caller: Option<Caller>,
    pub overlay: Overlay,
    pub reads: Reads,
    pub deadline: Instant,
    /// Set when the deadline interrupted the guest or a host call.
    pub deadline_hit: bool,
}

impl State {
    pub fn new(plugin: Arc<PluginContext>, phase: Phase, caller: Option<Caller>) -> Self {
        let limits = &plugin.settings.limits;
        let deadline = Instant::now() + limits.deadline;
        State {
            wasi: crate::host::wasi::locked_down_ctx(&plugin),
            table: ResourceTable::new(),
            limiter: MemoryLimiter {
                max_bytes: limits.memory_bytes,
                hit: false,
            },
            reads: Reads {
                storage: plugin.services.storage.clone(),
                deadline: deadline.into(),
            },
            plugin,
            phase,
            caller,
            overlay: Overlay::default(),
            deadline,
            deadline_hit: false,
        }
    }

    /// The caller's organisation, if the call has a caller with one.
    pub fn caller_org(&self) -> Option<&str> {
        self.caller.as_ref()?.organization_id.as_deref()
    }

    /// Time left before the deadline.
    pub fn remaining(&self) -> Duration {
        self.deadline.saturating_duration_since(Instant::now())
    }

    /// Records that a host call ran past the deadline and returns the trap
    /// that aborts the call.
    pub fn deadline_trap(&mut self) -> wasmtime::Error {
        self.deadline_hit = true;
        wasmtime::Error::msg("deadline exceeded during a host call")
    }
}

impl WasiView for State {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
