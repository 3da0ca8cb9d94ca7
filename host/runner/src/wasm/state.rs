//! The state of one request's store: WASI with the app's environment and
//! captured output, wasi:http, and the memory cap.

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
    limits: StoreLimits,
    /// Set when the request used up its CPU budget.
    pub out_of_cpu: bool,
}

impl RequestState {
    /// A request's state; fails when a volume's directory cannot be opened.
    pub fn new(
        env: &[(String, String)],
        volumes: &[VolumeMount],
        memory_mb: u32,
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
            limits: StoreLimitsBuilder::new()
                .memory_size(memory_mb as usize * 1024 * 1024)
                .instances(64)
                .trap_on_grow_failure(true)
                .build(),
            out_of_cpu: false,
        })
    }

    pub fn limiter(&mut self) -> &mut dyn ResourceLimiter {
        &mut self.limits
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
