//! Plateau's cron jobs plugin: a 5-field cron schedule in an IANA time zone
//! runs an HTTP request (type `http`, through the host's egress guard) or a
//! `wasi:cli` command image of the organisation's registry (type
//! `container`, through the host's `runner`), and records each run: start,
//! end, status, the HTTP status with the response head and a capped body,
//! or the exit code with capped stdout and stderr. Runs are listed newest
//! first; `trigger` runs a job now.
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

pub mod api;
pub mod input;
pub mod plugin;
pub mod record;
pub mod run;
pub mod schedule;

pub use plugin::CronPlugin;

plateau_sdk::export_plugin!(CronPlugin);
