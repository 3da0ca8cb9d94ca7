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

mod bindings;
mod cache;
pub mod clock;
mod config;
pub mod cursors;
pub mod egress;
mod engine;
mod error;
mod exec;
mod host;
mod inspect;
mod load;
mod memory;
mod overlay;
mod slot;
mod state;
pub mod storage;
mod types;
mod validate;

pub use self::cache::CacheOutcome;
pub use self::clock::{Clock, ManualClock, SystemClock};
pub use self::config::{Capability, PluginLimits, PluginSettings, RuntimeConfig, Services};
pub use self::cursors::{CursorCodec, CursorError, CursorScope, PlainCursorCodec};
pub use self::error::{Error, ExecError, Result};
pub use self::exec::{HookOutcome, Outcome, PluginVersion};
pub use self::inspect::{SUPPORTED_WIT_VERSIONS, WitVersion};
pub use self::load::{LoadReport, Loaded, PluginRuntime};
pub use self::memory::MemoryStore;
pub use self::slot::PluginSlot;
pub use self::storage::{
    BucketId, Entry, EventRecord, Expectation, KvWrite, Namespace, Storage, StorageError, WriteSet,
};
pub use self::types::{
    Access, Caller, Description, Event, Request, Response, Route, Schedule, ScopeInfo, Tick,
};
pub use self::validate::validate_description;
