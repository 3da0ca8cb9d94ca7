//! The state of one request's store: WASI with the app's environment and
//! captured output, wasi:http, and the memory cap.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use wasmtime::component::ResourceTable;
use wasmtime::{ResourceLimiter, StoreLimits, StoreLimitsBuilder};
use wasmtime_wasi::{FsPerms, WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::{WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

use super::output::Output;
use crate::{Error, Result, VolumeMount};

pub struct RequestState {
    table: ResourceTable,
    wasi: WasiCtx,
    http: WasiHttpCtx,
    hooks: NoOutbound,
    limits: Metered,
    /// Set when the request used up its CPU budget.
    pub out_of_cpu: bool,
}

impl RequestState {
    /// A request's state; fails when a volume's directory cannot be opened.
    pub fn new(
        env: &[(String, String)],
        volumes: &[VolumeMount],
        memory_mb: u32,
        live_memory: Arc<AtomicU64>,
        stdout: Output,
        stderr: Output,
    ) -> Result<Self> {
        let mut builder = WasiCtx::builder();
        builder.stdout(stdout).stderr(stderr);
        for (k, v) in env {
            builder.env(k, v);
        }
        for v in volumes {
            builder
                .preopened_dir(&v.source, &v.path, FsPerms::ReadWrite)
                .map_err(|e| Error::Failed(format!("opening the volume at {}: {e}", v.path)))?;
        }
        Ok(RequestState {
            table: ResourceTable::new(),
            wasi: builder.build(),
            http: WasiHttpCtx::new(),
            hooks: NoOutbound,
            limits: Metered {
                limits: StoreLimitsBuilder::new()
                    .memory_size(memory_mb as usize * 1024 * 1024)
                    .instances(64)
                    .trap_on_grow_failure(true)
                    .build(),
                live: live_memory,
                own: 0,
            },
            out_of_cpu: false,
        })
    }

    pub fn limiter(&mut self) -> &mut dyn ResourceLimiter {
        &mut self.limits
    }
}

/// The store's limits, counting the linear memory its instances hold in
/// the app's `live` total while the store lives.
struct Metered {
    limits: StoreLimits,
    live: Arc<AtomicU64>,
    /// What this store added to `live`.
    own: u64,
}

impl ResourceLimiter for Metered {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let allowed = self.limits.memory_growing(current, desired, maximum)?;
        if allowed {
            let grown = desired.saturating_sub(current) as u64;
            self.own += grown;
            self.live.fetch_add(grown, Ordering::Relaxed);
        }
        Ok(allowed)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.memory_grow_failed(error)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        self.limits.table_growing(current, desired, maximum)
    }

    fn table_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        self.limits.table_grow_failed(error)
    }

    fn instances(&self) -> usize {
        self.limits.instances()
    }

    fn tables(&self) -> usize {
        self.limits.tables()
    }

    fn memories(&self) -> usize {
        self.limits.memories()
    }
}

impl Drop for Metered {
    fn drop(&mut self) {
        self.live.fetch_sub(self.own, Ordering::Relaxed);
    }
}

impl WasiView for RequestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl WasiHttpView for RequestState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView {
            ctx: &mut self.http,
            table: &mut self.table,
            hooks: &mut self.hooks,
        }
    }
}

/// Apps get no outbound HTTP yet: the egress guard that plugins use is
/// not wired to apps, so every outgoing request is refused.
struct NoOutbound;

impl WasiHttpHooks for NoOutbound {
    fn send_request(
        &mut self,
        _request: http::Request<wasmtime_wasi_http::WasiBody>,
        _options: Option<wasmtime_wasi_http::RequestOptions>,
        _io: Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
    ) -> Box<
        dyn Future<
                Output = Result<
                    (
                        http::Response<wasmtime_wasi_http::WasiBody>,
                        Box<dyn Future<Output = Result<(), wasmtime_wasi_http::Error>> + Send>,
                    ),
                    wasmtime_wasi_http::Error,
                >,
            > + Send,
    > {
        Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) })
    }
}
