//! Plateau's persistence.
//!
//! One schema, kept as two sets of migrations (`migrations/sqlite` and
//! `migrations/postgres`), reached through sqlx's `Any` driver so that every
//! query is written once with `$1`-style placeholders and runs on both.
//! SQLite is the embedded default; PostgreSQL lets several hosts act as one.
//!
//! Everything the API promises (tokens, idempotency records, cursor keys,
//! events, sessions) lives here, never only in a process's memory.

pub mod alarms;
pub mod anomalies;
pub mod apps;
pub mod bots;
pub mod cache_snapshots;
pub mod caches;
pub mod databases;
pub mod db;
pub mod deliveries;
pub mod error;
pub mod events;
pub mod grants;
pub mod group;
pub mod hosts;
pub mod idempotency;
pub mod jobs;
pub mod managed;
pub mod members;
pub mod orgs;
pub mod plans;
pub mod plugins;
pub mod prefs;
pub mod projects;
pub mod provision;
pub mod query;
pub mod registry;
pub mod rewards;
pub mod runners;
pub mod series;
pub mod sessions;
pub mod settings;
pub mod spend;
pub mod storage;
pub mod token_spend;
pub mod tokens;
pub mod usage;
pub mod waf;

pub use db::{Backend, Db, Tx};
pub use error::{Error, Result};
