//! Plateau's error tracking plugin (`/errors`): the official Sentry SDKs
//! send to it unchanged. A project's DSN points them at the public ingest
//! routes (Sentry's envelope and store endpoints, gzip or deflate bodies,
//! the DSN's key in `X-Sentry-Auth` or the query), and events are grouped
//! into issues by fingerprint, with counts, first and last seen, affected
//! users and the latest events with their stack traces and breadcrumbs;
//! issues are resolved, ignored, and reopen as regressions.
//!
//! Layers:
//! - the pure core: [`envelope`] (encodings, the DSN key, the envelope
//!   format), [`event`] (an event read tolerantly and bounded),
//!   [`grouping`] (the fingerprint) and [`record`] (stored shapes, keys,
//!   plan limits);
//! - [`issue`] (an event recorded into its issue), [`ingest`] (the public
//!   routes), [`projects`] and [`issues`] (the API), wired in [`plugin`].
//!
//! **Architecture Invariants:** an issue's record and the event that
//! changes it are written in one compare-and-swap committed at once
//! (`kv.claim`), by ingest and by the API alike: an event is counted once,
//! gets its own number in the issue, and a status change never undoes a
//! count. An event is stored before the SDK is answered 200.

pub mod envelope;
pub mod event;
pub mod grouping;
pub mod ingest;
pub mod issue;
pub mod issues;
pub mod plugin;
pub mod projects;
pub mod record;
pub mod views;

pub use plugin::ErrorsPlugin;

plateau_sdk::export_plugin!(ErrorsPlugin);
