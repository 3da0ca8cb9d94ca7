//! The managed caches' service, as `plateau serve` (the API) and `plateau
//! agent` (whose supervisor adopts or restarts this host's clusters) both
//! build it: the local provider on this host's data directory and the
//! snapshot store.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use plateau_cache::local::{LocalConfig, LocalProvider};
use plateau_cache::snapshots::SnapshotStore;
use plateau_cache::{CacheService, ServiceConfig};
use plateau_seal::Sealer;
use plateau_store::Db;

/// Where and how caches run.
#[derive(Args, Clone, Debug)]
pub struct CacheArgs {
    /// The `redis-server` binary of the managed caches (Redis 7).
    #[arg(long, env = "PLATEAU_REDIS_SERVER", default_value = "redis-server")]
    pub redis_server: PathBuf,
    /// The address cache processes listen on and clients are given.
    #[arg(long, env = "PLATEAU_CACHE_ADDRESS", default_value = "127.0.0.1")]
    pub cache_address: String,
    /// Cache snapshots: a directory, `file:///dir` or `s3://bucket[/prefix]` (AWS_* variables);
    /// default: `cache-snapshots` in the data directory.
    #[arg(long, env = "PLATEAU_CACHE_SNAPSHOT_STORE")]
    pub cache_snapshot_store: Option<String>,
    /// Days a deleted cache's snapshots are kept (listed, restorable and
    /// counted against the organisation's storage) before they are swept.
    #[arg(
        long,
        env = "PLATEAU_CACHE_SNAPSHOT_RETENTION_DAYS",
        default_value_t = 7
    )]
    pub cache_snapshot_retention_days: u64,
    /// Milliseconds between supervision rounds over this host's caches.
    #[arg(long, env = "PLATEAU_CACHE_SUPERVISE_MS", default_value_t = 1000)]
    pub cache_supervise_ms: u64,
}

pub fn start(
    args: &CacheArgs,
    data_dir: &Path,
    db: &Db,
    sealer: Arc<Sealer>,
    host_id: &str,
    haproxy: &Path,
) -> anyhow::Result<Arc<CacheService>> {
    let root = data_dir.join("caches");
    std::fs::create_dir_all(&root)
        .with_context(|| format!("creating the cache directory {}", root.display()))?;
    let snapshots = match &args.cache_snapshot_store {
        Some(spec) => SnapshotStore::open(spec),
        None => SnapshotStore::local(&data_dir.join("cache-snapshots")),
    }
    .context("opening the cache snapshot store")?;
    let provider = LocalProvider::new(LocalConfig {
        root: root.clone(),
        address: args.cache_address.clone(),
        redis_server: args.redis_server.clone(),
        haproxy: haproxy.to_owned(),
    })
    .with_context(|| format!("preparing the cache directory {}", root.display()))?;
    Ok(Arc::new(CacheService::new(
        db.clone(),
        Arc::new(provider),
        sealer,
        snapshots,
        ServiceConfig {
            locks: crate::host::locks(data_dir, "caches")?,
            host_id: host_id.to_owned(),
            supervise_every: Duration::from_millis(args.cache_supervise_ms.max(100)),
            snapshot_retention: Duration::from_secs(args.cache_snapshot_retention_days * 86_400),
        },
    )))
}
