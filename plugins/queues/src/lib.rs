//! Plateau's queues plugin: SQS-style standard queues as a sandboxed
//! component, on the plugin key-value store.
//!
//! Delivery is at least once: a received message is hidden for its
//! visibility timeout and comes back unless acknowledged with the receipt
//! handle of that receive. Messages can be delayed (up to 15 minutes),
//! deduplicated by `dedupeId` (5 minutes), and are moved to a dead-letter
//! queue (or dropped) once received more than `maxReceives` times, from
//! where a redrive sends them back.
//!
//! Layers:
//! - [`input`]: the request bodies and their rules (pure);
//! - [`record`]: the stored shapes, their keys and the visibility index;
//! - [`store`]: the one way a message changes (compare-and-swap, index
//!   moved with it);
//! - [`api`] (queues), [`messages`] (send, receive, ack, visibility),
//!   [`maint`] (purge, stats, redrive, collection), wired in [`plugin`].
//!
//! **Architecture Invariant:** every change of a message is one
//! compare-and-swap on it, committed with the rest of its request: two
//! receives of one message cannot both win, an acknowledged message is
//! gone for good, and a request the server dies in keeps nothing.

pub mod api;
pub mod input;
pub mod maint;
pub mod messages;
pub mod plugin;
pub mod record;
pub mod store;
pub mod views;

pub use plugin::QueuesPlugin;

plateau_sdk::export_plugin!(QueuesPlugin);
