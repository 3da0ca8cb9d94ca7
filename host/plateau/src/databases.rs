//! The managed databases' service, as `plateau serve` (the API) and
//! `plateau agent` (whose supervisor adopts, restarts and fails over this
//! host's clusters) both build it: the local provider on this host's data
//! directory, and the store of their backups.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use plateau_databases::local::{LocalConfig, LocalProvider};
use plateau_databases::{DatabaseService, ServiceConfig, bins};
use plateau_seal::Sealer;
use plateau_store::Db;

/// Where and how databases run.
#[derive(Args, Clone, Debug)]
pub struct DatabaseArgs {
    /// Where PostgreSQL versions not from Debian are unpacked (`plateau
    /// install postgres` installs 16, 17 and pgbouncer there); default: /usr/local/lib/plateau/postgresql
    /// for root, ~/.cache/plateau/postgresql otherwise.
    #[arg(long, env = "PLATEAU_POSTGRES_DIR")]
    pub postgres_dir: Option<PathBuf>,
    /// The `pgbouncer` binary of the databases' poolers (1.21 or later, for
    /// prepared statements); default: the one `plateau install postgres`
    /// builds under the PostgreSQL directory.
    #[arg(long, env = "PLATEAU_PGBOUNCER")]
    pub pgbouncer: Option<PathBuf>,
    /// The address database servers listen on and clients are given.
    #[arg(long, env = "PLATEAU_DATABASE_ADDRESS", default_value = "127.0.0.1")]
    pub database_address: String,
    /// Milliseconds between supervision rounds over this host's databases.
    #[arg(long, env = "PLATEAU_DATABASE_SUPERVISE_MS", default_value_t = 2000)]
    pub database_supervise_ms: u64,
    /// Milliseconds between checks of the databases' sizes against their
    /// disk quotas (`diskGb`): a database over it becomes read-only until
    /// it is back under.
    #[arg(long, env = "PLATEAU_DATABASE_DISK_CHECK_MS", default_value_t = 30000)]
    pub database_disk_check_ms: u64,
    /// Base backups and archived WAL of the databases: a directory, `file:///dir` or
    /// `s3://bucket[/prefix]` (AWS_* variables); default: `database-backups` in the data directory.
    #[arg(long, env = "PLATEAU_DATABASE_BACKUP_STORE")]
    pub database_backup_store: Option<String>,
    /// Hours between scheduled base backups of each database (its WAL is
    /// archived continuously).
    #[arg(long, env = "PLATEAU_DATABASE_BACKUP_HOURS", default_value_t = 24)]
    pub database_backup_hours: u64,
    /// Seconds the previous password of a rotated database keeps working
    /// beside the new one.
    #[arg(
        long,
        env = "PLATEAU_DATABASE_ROTATION_OVERLAP_SECONDS",
        default_value_t = 3600
    )]
    pub database_rotation_overlap_seconds: u64,
}

pub fn start(
    args: &DatabaseArgs,
    data_dir: &Path,
    db: &Db,
    sealer: Arc<Sealer>,
    host_id: &str,
    haproxy: &Path,
    egress_allow: &str,
) -> anyhow::Result<Arc<DatabaseService>> {
    let root = data_dir.join("databases");
    let binaries = args.postgres_dir.clone().unwrap_or_else(bins::default_root);
    let backups = match &args.database_backup_store {
        Some(spec) => plateau_object_store::open(spec),
        None => plateau_object_store::local(&data_dir.join("database-backups")),
    }
    .context("opening the database backup store")?;
    let provider = LocalProvider::new(LocalConfig {
        root: root.clone(),
        address: args.database_address.clone(),
        pgbouncer: args
            .pgbouncer
            .clone()
            .unwrap_or_else(|| bins::pgbouncer(&binaries)),
        binaries,
        haproxy: haproxy.to_owned(),
        backups,
    })
    .with_context(|| format!("preparing the database directory {}", root.display()))?;
    Ok(Arc::new(DatabaseService::new(
        db.clone(),
        Arc::new(provider),
        sealer,
        ServiceConfig {
            locks: crate::host::locks(data_dir, "databases")?,
            host_id: host_id.to_owned(),
            supervise_every: Duration::from_millis(args.database_supervise_ms.max(100)),
            disk_check_every: Duration::from_millis(args.database_disk_check_ms.max(100)),
            backup_every: Duration::from_secs(args.database_backup_hours.max(1) * 3600),
            rotation_overlap: Duration::from_secs(args.database_rotation_overlap_seconds),
            egress_allow: plateau_egress::parse_allow_list(egress_allow)
                .map_err(|e| anyhow::anyhow!("PLATEAU_EGRESS_ALLOW: {e}"))?,
        },
    )))
}
