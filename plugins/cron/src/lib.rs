//! Plateau's cron jobs plugin: a 5-field cron schedule in an IANA time zone
//! runs an HTTP request (through the host's egress guard) and records each
//! run: start, end, status, HTTP status, the response head and a capped
//! body. Runs are listed newest first; `trigger` runs a job now.
//!
//! Layers:
//! - the pure core: [`schedule`] (cron in a time zone, with Vixie cron's
//!   daylight saving rules) and [`input`] (the rules of a job's fields);
//! - [`record`] (stored shapes and keys), [`run`] (running, recording,
//!   scheduling the next run as a durable job) and [`api`], wired in
//!   [`plugin`].
//!
//! **Architecture Invariant:** a job has one durable `cron:{id}` job, due
//! at its `nextRunAt`; a delivery whose due time is not the job's
//! `nextRunAt` (a replaced schedule) runs nothing.
//!
//! Type `container` (a `wasi:cli` command component from Plateau's
//! registry) is refused for now: running it needs the host runner of apps
//! behind a capability no WIT version has yet.

pub mod api;
pub mod input;
pub mod plugin;
pub mod record;
pub mod run;
pub mod schedule;

pub use plugin::CronPlugin;

plateau_sdk::export_plugin!(CronPlugin);
