//! The Plateau server and its commands as a library. The `plateau` binary
//! (`main.rs`) is their command line; a program that serves the same API
//! with routes of its own (the native twins of `cargo xtask bench flags`,
//! `tests/native-twin`) calls [`serve::run_with`].

pub mod admin;
pub mod agent;
mod app_env;
mod apps;
mod caches;
pub mod cli;
mod commands;
pub mod config;
mod databases;
mod dataplane;
mod edge_tls;
mod guides;
mod host;
pub mod logging;
mod platform_logs;
pub mod plugin_cli;
mod plugin_push;
mod plugins;
pub mod serve;
mod storage;
mod usage;

/// How many tasks a runtime worker runs from its own queue before it looks
/// at the shared one (tokio tunes this itself when it is not set).
///
/// Work that finishes on other threads (a database statement on SQLite's
/// worker thread, a blocking-pool job) wakes its task through the shared
/// queue. A request holding SQLite's one writer waits there between its
/// statements, and every other writer waits for it; looking often keeps
/// that turn short under load (about a tenth more writes per second on two
/// cores, `cargo xtask bench core`).
const GLOBAL_QUEUE_INTERVAL: u32 = 4;

/// The tokio runtime the server runs on.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .global_queue_interval(GLOBAL_QUEUE_INTERVAL)
        .build()
}
