//! Host capabilities, one module each: a view over the store's state, the
//! capability's logic on that view, its generated bindings (private), and
//! one `add_to_linker` that links every WIT version of it.
//!
//! Each capability implements its logic once on its view and the generated
//! traits of each WIT version as thin adapters over it. A guest-visible
//! failure is a WIT error value, a host failure (or the deadline) is a trap,
//! and the two never mix.
//!
//! **Architecture invariant:** a capability depends on [`crate::context`]
//! and the runtime's services, never on the store's `State`, on the
//! bindings of the `handler` export, or on another capability's logic (the
//! WASI output stream reuses `log`'s truncation); `State` hands out the
//! views and links them (`crate::state`).

pub(crate) mod app_env;
pub(crate) mod clock;
pub(crate) mod config;
pub(crate) mod cursors;
pub(crate) mod events;
pub(crate) mod http;
pub(crate) mod kv;
pub(crate) mod log;
pub(crate) mod logs;
pub(crate) mod runner;
pub(crate) mod scheduler;
pub(crate) mod secrets;
pub(crate) mod smtp;
pub(crate) mod tcp;
pub(crate) mod wasi;
