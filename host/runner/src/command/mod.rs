//! Commands: `wasi:cli` command components run to completion, in-process
//! with wasmtime, for cron jobs of type `container`.
//!
//! Each run gets a fresh store: the arguments and environment it is
//! given, no preopened directory, no network (WASI's sockets are linked
//! but the context allows no address), a memory cap, and a wall-clock
//! deadline enforced by epoch interruption (the guest yields to the
//! executor every tick, so a busy loop holds no thread). Its stdout and
//! stderr are captured up to [`OUTPUT_CAP`] bytes each.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use wasmtime::component::{Component, Linker, ResourceTable};
use wasmtime::{Config, Engine, Store, StoreLimits, StoreLimitsBuilder, UpdateDeadline};
use wasmtime_wasi::p2::bindings::CommandPre;
use wasmtime_wasi::{I32Exit, WasiCtx, WasiCtxView, WasiView};

use crate::output::GuestOutput;
use crate::wasm::Ticker;

/// Bytes of stdout, and of stderr, a run keeps.
pub const OUTPUT_CAP: usize = 64 * 1024;
/// The longest a command may run, whatever it asks for.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(300);
/// The most linear memory a command may have, in MiB.
pub const MAX_MEMORY_MB: u32 = 512;
/// Compiled components kept, by digest.
const COMPILED_CACHE: usize = 64;

/// One run to make.
#[derive(Clone, Debug)]
pub struct CommandSpec {
    /// The arguments after the program name.
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    pub memory_mb: u32,
}

/// What a run printed and how it ended.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CommandOutput {
    pub exit_code: u32,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub stdout_truncated: bool,
    pub stderr_truncated: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The bytes are not a component, or it does not export `wasi:cli/run`.
    #[error("{0}")]
    NotACommand(String),
    #[error("the command ran past its timeout of {} ms", .0.as_millis())]
    Timeout(Duration, CommandOutput),
    /// A trap, or the memory cap: the reason and the output so far.
    #[error("the command trapped: {0}")]
    Trapped(String, CommandOutput),
}

/// Runs command components; one engine for every run of this host.
pub struct CommandRunner {
    engine: Engine,
    linker: Linker<RunState>,
    compiled: Mutex<HashMap<String, Component>>,
    _ticker: Ticker,
}

impl CommandRunner {
    pub fn new() -> crate::Result<CommandRunner> {
        let not_runnable = |what: &str, e: wasmtime::Error| {
            crate::Error::NotRunnable(format!("cannot start the command runner: {what}: {e}"))
        };
        let mut config = Config::new();
        config.wasm_component_model(true).epoch_interruption(true);
        let engine = Engine::new(&config).map_err(|e| not_runnable("wasmtime", e))?;
        let mut linker = Linker::new(&engine);
        // WASI 0.2.12's `exit-with-code` lets a command report codes
        // other than 0 and 1.
        wasmtime_wasi::p2::add_to_linker_async(&mut linker).map_err(|e| not_runnable("WASI", e))?;
        let ticker = Ticker::start(engine.clone())?;
        Ok(CommandRunner {
            engine,
            linker,
            compiled: Mutex::new(HashMap::new()),
            _ticker: ticker,
        })
    }

    /// Runs the component `bytes` (named by `digest`, under which its
    /// compiled form is cached) to completion.
    pub async fn run(
        &self,
        digest: &str,
        bytes: &[u8],
        spec: CommandSpec,
    ) -> Result<CommandOutput, CommandError> {
        let pre = self.prepare(digest, bytes).await?;
        let stdout = GuestOutput::new(Vec::new(), OUTPUT_CAP);
        let stderr = GuestOutput::new(Vec::new(), OUTPUT_CAP);
        let mut builder = WasiCtx::builder();
        builder
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            // argv[0] is the program's name, as a shell would give it.
            .arg("command")
            .args(&spec.args)
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        for (k, v) in &spec.env {
            builder.env(k, v);
        }
        let memory = spec.memory_mb.clamp(1, MAX_MEMORY_MB) as usize * 1024 * 1024;
        let state = RunState {
            table: ResourceTable::new(),
            wasi: builder.build(),
            limits: StoreLimitsBuilder::new()
                .memory_size(memory)
                .instances(64)
                .trap_on_grow_failure(true)
                .build(),
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| &mut s.limits);
        let timeout = spec.timeout.min(MAX_TIMEOUT);
        let deadline = Instant::now() + timeout;
        store.epoch_deadline_callback(move |_| {
            if Instant::now() >= deadline {
                Ok(UpdateDeadline::Interrupt)
            } else {
                Ok(UpdateDeadline::Yield(1))
            }
        });
        store.set_epoch_deadline(1);
        let run = async {
            let command = pre.instantiate_async(&mut store).await?;
            command.wasi_cli_run().call_run(&mut store).await
        };
        // A host call that blocks (a read of stdin) is cut off here too.
        let result = tokio::time::timeout(timeout, run).await;
        let output = || {
            let (stdout, stdout_truncated) = stdout.with(|kept, cut| (std::mem::take(kept), cut));
            let (stderr, stderr_truncated) = stderr.with(|kept, cut| (std::mem::take(kept), cut));
            CommandOutput {
                exit_code: 0,
                stdout,
                stderr,
                stdout_truncated,
                stderr_truncated,
            }
        };
        match result {
            Err(_) => Err(CommandError::Timeout(timeout, output())),
            Ok(Ok(Ok(()))) => Ok(output()),
            Ok(Ok(Err(()))) => Ok(CommandOutput {
                exit_code: 1,
                ..output()
            }),
            Ok(Err(e)) => {
                if let Some(exit) = e.downcast_ref::<I32Exit>() {
                    return Ok(CommandOutput {
                        exit_code: exit.0 as u32,
                        ..output()
                    });
                }
                if Instant::now() >= deadline
                    && e.downcast_ref::<wasmtime::Trap>() == Some(&wasmtime::Trap::Interrupt)
                {
                    return Err(CommandError::Timeout(timeout, output()));
                }
                Err(CommandError::Trapped(format!("{e:#}"), output()))
            }
        }
    }

    async fn prepare(
        &self,
        digest: &str,
        bytes: &[u8],
    ) -> Result<CommandPre<RunState>, CommandError> {
        let component = match self.cached(digest) {
            Some(c) => c,
            None => {
                let engine = self.engine.clone();
                let owned = bytes.to_vec();
                let component =
                    tokio::task::spawn_blocking(move || Component::new(&engine, &owned))
                        .await
                        .map_err(|e| {
                            CommandError::NotACommand(format!("compilation stopped: {e}"))
                        })?
                        .map_err(|e| {
                            CommandError::NotACommand(format!(
                                "the image is not a WebAssembly component: {e:#}"
                            ))
                        })?;
                let mut cache = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
                if cache.len() >= COMPILED_CACHE {
                    cache.clear();
                }
                cache.insert(digest.to_owned(), component.clone());
                component
            }
        };
        let pre = self.linker.instantiate_pre(&component).map_err(|e| {
            CommandError::NotACommand(format!(
                "the component imports what a command may not use: {e:#}"
            ))
        })?;
        CommandPre::new(pre).map_err(|e| {
            CommandError::NotACommand(format!(
                "the component is not a wasi:cli command (it does not export wasi:cli/run): {e:#}"
            ))
        })
    }

    fn cached(&self, digest: &str) -> Option<Component> {
        let cache = self.compiled.lock().unwrap_or_else(|e| e.into_inner());
        cache.get(digest).cloned()
    }
}

struct RunState {
    table: ResourceTable,
    wasi: WasiCtx,
    limits: StoreLimits,
}

impl WasiView for RunState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}
