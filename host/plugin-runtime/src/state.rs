//! The data of one store: the parts a call needs (the WASI context, the
//! resource table, the memory limiter, the call's context, overlay and
//! reads), the views each capability gets of them, and the linking of every
//! capability with its view.
//!
//! Views are structs of borrows made per host call: no allocation, and each
//! capability sees only what it needs.

use std::sync::Arc;

use wasmtime::ResourceLimiter;
use wasmtime::component::{Linker, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::capabilities::app_env::{self, AppEnvView};
use crate::capabilities::clock::{self, ClockView};
use crate::capabilities::config::{self, ConfigView};
use crate::capabilities::cursors::{self, CursorsView};
use crate::capabilities::events::{self, EventsView};
use crate::capabilities::http::{self, HttpView};
use crate::capabilities::kv::{self, KvView};
use crate::capabilities::log::{self, LogView};
use crate::capabilities::logs::{self, LogsView};
use crate::capabilities::runner::{self, RunnerView};
use crate::capabilities::scheduler::{self, SchedulerView};
use crate::capabilities::secrets::{self, SecretsView};
use crate::capabilities::smtp::{self, SmtpView};
use crate::capabilities::tcp::{self, TcpView};
use crate::capabilities::wasi::locked_down_ctx;
use crate::context::{CallContext, Phase, PluginContext};
use crate::overlay::{Overlay, Reads};
use crate::types::Caller;

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
    pub call: CallContext,
    pub overlay: Overlay,
    pub reads: Reads,
}

impl State {
    pub fn new(plugin: Arc<PluginContext>, phase: Phase, caller: Option<Caller>) -> Self {
        let call = CallContext::new(plugin, phase, caller);
        let plugin = &call.plugin;
        State {
            wasi: locked_down_ctx(plugin),
            table: ResourceTable::new(),
            limiter: MemoryLimiter {
                max_bytes: plugin.settings.limits.memory_bytes,
                hit: false,
            },
            reads: Reads {
                storage: plugin.services.storage.clone(),
                deadline: call.deadline.into(),
            },
            overlay: Overlay::default(),
            call,
        }
    }

    /// Links WASI (locked down by the store's context) and every capability
    /// of every supported WIT version, each with its view.
    pub fn add_to_linker(linker: &mut Linker<State>) -> wasmtime::Result<()> {
        wasmtime_wasi::p2::add_to_linker_async(linker)?;
        kv::add_to_linker(linker, State::kv)?;
        events::add_to_linker(linker, |s| EventsView {
            call: &s.call,
            overlay: &mut s.overlay,
        })?;
        http::add_to_linker(linker, |s| HttpView { call: &mut s.call })?;
        log::add_to_linker(linker, |s| LogView { call: &s.call })?;
        config::add_to_linker(linker, |s| ConfigView { call: &s.call })?;
        clock::add_to_linker(linker, |s| ClockView { call: &s.call })?;
        cursors::add_to_linker(linker, |s| CursorsView { call: &s.call })?;
        scheduler::add_to_linker(linker, |s| SchedulerView {
            call: &s.call,
            overlay: &mut s.overlay,
        })?;
        secrets::add_to_linker(linker, |s| SecretsView { call: &s.call })?;
        smtp::add_to_linker(linker, |s| SmtpView { call: &mut s.call })?;
        runner::add_to_linker(linker, |s| RunnerView { call: &mut s.call })?;
        logs::add_to_linker(linker, |s| LogsView { call: &mut s.call })?;
        tcp::add_to_linker(linker, |s| TcpView { call: &mut s.call })?;
        app_env::add_to_linker(linker, |s| AppEnvView { call: &mut s.call })?;
        Ok(())
    }

    fn kv(&mut self) -> KvView<'_> {
        KvView {
            call: &mut self.call,
            table: &mut self.table,
            overlay: &mut self.overlay,
            reads: &mut self.reads,
        }
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
