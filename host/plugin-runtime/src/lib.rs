//! Plateau's plugin runtime: loads sandboxed WebAssembly components, checks
//! them, and runs their requests, ticks and events under limits.
//!
//! The central type is [`PluginRuntime`]: one per host process. It owns the
//! wasmtime [`Engine`](wasmtime::Engine), the on-disk cache of compiled
//! components and the linker with every host capability of every supported
//! WIT version. [`PluginRuntime::load`] turns component bytes into a
//! [`PluginVersion`], which serves [`PluginVersion::handle`],
//! [`PluginVersion::on_tick`] and [`PluginVersion::on_event`]; a
//! [`PluginSlot`] holds the active version of one plugin for hot swaps.
//!
//! **Architecture invariant:** this crate knows nothing of SQL or of the HTTP
//! server. Key-value data and events go through the [`Storage`] trait, which
//! the host implements on its database; [`MemoryStore`] is the in-memory one
//! used by tests.
//!
//! **Architecture invariant:** no guest code runs before the component's
//! imports have been checked against the grants and the supported WIT
//! versions (`inspect`), and every call gets a fresh store that is dropped
//! afterwards, so a trapped or interrupted instance is never entered again.
//!
//! **Architecture invariant:** a guest-visible failure is a WIT error value;
//! a trap or a deadline is an [`ExecError`]. A call's writes and events reach
//! storage in one [`Storage::commit`] when it succeeds, or not at all.
//!
//! # Code map
//!
//! - `load`: [`PluginRuntime`], compile or cache, checks, `describe`.
//! - `engine`, `cache`: the wasmtime engine and epoch ticker; compiled
//!   components on disk.
//! - `inspect`, `validate`: the load-time checks of imports and of the
//!   description.
//! - `exec`: [`PluginVersion`], one call in a fresh store under the limits,
//!   then the commit.
//! - `bindings`: the private bindings of the `handler` export of each
//!   supported WIT version, and the calls into it.
//! - `capabilities/*`: one module per capability (kv, events, http, log,
//!   config, clock, cursors, scheduler, secrets, smtp, runner, logs, tcp,
//!   app-env,
//!   locked-down WASI):
//!   its view of the store, its private bindings of every WIT version of
//!   its interface, and one `add_to_linker`.
//! - `context`: what a host call knows of its call (plugin, phase, caller,
//!   deadline) and the namespace rules; `state`: the store's data, which
//!   hands out each capability's view.
//! - `overlay`: the per-call buffer of key-value writes and events.
//! - `waits`: the calls parked in `kv.wait`, woken by this host's commits.
//! - [`egress`]: the outbound HTTP and SMTP guard and address policy.
//! - [`storage`], `memory`: the storage trait and [`MemoryStore`].
//! - `edge`: [`EdgeFilter`], components of the edge-filter world, loaded
//!   from the same engine and pool and run per request like plugins.
//! - `slot`: [`PluginSlot`], hot swap and rollback.
//! - [`secrets`]: the host-key encryption behind the `secrets` capability.
//! - [`commands`]: the [`commands::Commands`] trait behind the `runner`
//!   capability, which the host implements (pull, then run).
//! - [`platform_logs`]: the [`platform_logs::PlatformLogs`] trait behind
//!   the `logs` capability, which the host implements on its store.
//! - [`app_env`]: the [`app_env::AppEnv`] trait behind the `app-env`
//!   capability, which the host implements on its apps.

pub mod app_env;
mod bindings;
mod cache;
mod capabilities;
pub mod clock;
pub mod commands;
mod config;
mod context;
pub mod cursors;
mod edge;
pub mod egress;
mod engine;
mod error;
mod exec;
mod inspect;
mod load;
mod memory;
mod overlay;
pub mod platform_logs;
mod slot;
mod state;
pub mod storage;
mod types;
mod validate;
mod waits;

pub use self::cache::CacheOutcome;
pub use self::clock::{Clock, ManualClock, SystemClock};
pub use self::config::{Capability, PluginLimits, PluginSettings, RuntimeConfig, Services};
pub use self::cursors::{CursorCodec, CursorError, CursorScope, PlainCursorCodec};
pub use self::edge::{EDGE_FILTER_PACKAGES, EdgeFilter, FilterInfo};
pub use self::error::{Error, ExecError, Result};
pub use self::exec::{HookOutcome, Outcome, PluginVersion};
pub use self::inspect::{
    SPLIT_PACKAGES, SUPPORTED_WIT_VERSIONS, SUPPORTED_WORLDS, WitVersion, supported_worlds,
};
pub use self::load::{LoadReport, Loaded, PluginRuntime};
pub use self::memory::{MemoryStore, StoredJob};
pub use self::slot::PluginSlot;
pub use self::storage::{
    BucketId, Claim, Entry, EventRecord, Expectation, JobId, JobKind, JobWrite, KvWrite, Namespace,
    Storage, StorageError, WriteSet,
};
pub use self::types::{
    Access, Caller, Description, Event, Job, Request, Response, Route, Schedule, ScopeInfo, Tick,
};
pub use self::validate::validate_description;
