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
//! - [`record`] (stored shapes and keys), [`stored`] (writing a job with
//!   its due index entry, recording a run), [`run`] (running one job, its
//!   next time and the durable job that runs it), [`missed`] (the starting
//!   deadline of a late delivery), [`batch`] (the http jobs
//!   of an organisation due together) and [`api`] with its answers in
//!   [`views`], wired in [`plugin`].
//!
//! **Architecture Invariants:** an http job that is not paused has one
//! entry in the due index, `d/{nextRunAt}/{id}`, holding the bytes of its
//! record, and its organisation has a durable `due:{nextRunAt}` job; a
//! container job has a durable `cron:{id}` job due at its `nextRunAt`.
//! Every write of a record expects the bytes it read, so a run never
//! undoes a change made through the API, and a delivery whose time is not
//! the job's `nextRunAt` runs nothing.

pub mod api;
pub mod batch;
pub mod input;
pub mod missed;
pub mod plugin;
pub mod record;
pub mod run;
pub mod schedule;
pub mod stored;
pub mod views;

pub use plugin::CronPlugin;

plateau_sdk::export_plugin!(CronPlugin);
