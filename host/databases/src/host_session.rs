//! The settings of every connection the host makes into a customer's
//! cluster as its own superuser (`plateau_admin`), sent in the startup
//! packet so they win over what a tenant may set with `ALTER DATABASE ...
//! SET` or `ALTER ROLE ... SET` (client settings rank above both).
//!
//! A tenant owns its database and may attach settings to it that every
//! session then starts with, the host's included: a `search_path` that
//! puts a schema of theirs before `pg_catalog` (their `pg_database_size`
//! or `pg_roles` would run as superuser), `role` (the host's session would
//! run as the owner, so the disk quota could not be enforced),
//! `standard_conforming_strings = off` (backslashes would end the host's
//! quoted literals), `local_preload_libraries` (refuses every
//! connection), timeouts that cut the host's sessions short. The host's
//! statements stay out of the server log and of `pg_stat_statements`,
//! which a cluster's customers read. Statements the host runs also
//! qualify the catalog's relations and functions with `pg_catalog.`.

use sqlx::postgres::PgConnectOptions;

/// Longest a host statement may run (a promotion waits up to 60 s).
pub const STATEMENT_TIMEOUT: &str = "120s";

/// What every host session pins: `(setting, value)`.
pub const SETTINGS: [(&str, &str); 18] = [
    ("search_path", "pg_catalog,pg_temp"),
    ("role", "none"),
    ("standard_conforming_strings", "on"),
    ("default_transaction_read_only", "off"),
    ("default_transaction_isolation", "read\\ committed"),
    ("statement_timeout", STATEMENT_TIMEOUT),
    ("lock_timeout", "0"),
    ("idle_in_transaction_session_timeout", "0"),
    ("idle_session_timeout", "0"),
    ("exit_on_error", "off"),
    ("local_preload_libraries", ""),
    ("temp_tablespaces", ""),
    ("log_statement", "none"),
    ("log_duration", "off"),
    ("log_min_duration_statement", "-1"),
    ("log_min_error_statement", "panic"),
    ("log_min_duration_sample", "-1"),
    ("pg_stat_statements.track", "none"),
];

/// `options` with [`SETTINGS`] pinned.
pub fn pin(options: PgConnectOptions) -> PgConnectOptions {
    options.options(SETTINGS)
}
