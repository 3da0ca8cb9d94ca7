//! Plateau's workflows plugin: durable step functions over HTTP, as a
//! sandboxed component on the plugin key-value store.
//!
//! A run has a workflow name, an input, a status and a sequence of named
//! steps. Workers poll `POST /workflows/next` to claim the next runnable
//! step under a lease, run it themselves, and report `complete` (with an
//! output and optionally the next step), `fail` (retried with exponential
//! backoff and jitter until `maxAttempts`) or `sleep` (1 second to 90
//! days, on the host clock). A lease that runs out makes the step
//! claimable again; the old lease token is refused from then on.
//!
//! Layers:
//! - [`input`]: the request bodies and their rules (pure);
//! - [`backoff`]: the retry delays (pure);
//! - [`record`]: the stored shapes, their keys and the ready index;
//! - [`store`]: the one way a run changes (compare-and-swap, indexes moved
//!   with it);
//! - [`api`] (start, list, read, cancel), [`worker`] (claim, complete,
//!   fail, sleep, wake), answering [`views`], wired in [`plugin`].
//!
//! **Architecture Invariant:** every change of a run is one
//! compare-and-swap on its record, committed with the rest of its request:
//! two workers cannot both claim a step, a stale lease changes nothing, and
//! a request the server dies in keeps nothing.

pub mod api;
pub mod backoff;
pub mod input;
pub mod plugin;
pub mod record;
pub mod store;
pub mod views;
pub mod worker;

pub use plugin::WorkflowsPlugin;

plateau_sdk::export_plugin!(WorkflowsPlugin);
