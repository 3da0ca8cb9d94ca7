//! Object storage in `plateau serve`: the provider over the configured
//! byte store, access keys sealed with the host's secret key, the S3
//! endpoint on its own listener, the sweeper of staging files and the
//! lifecycle job.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use plateau_api::AppState;
use plateau_seal::Sealer;
use plateau_storage::blobs::Blobs;
use plateau_storage::keys::{Keys, Sealing};
use plateau_storage::local::LocalProvider;
use plateau_storage::{Storage, StorageConfig};

/// Where and how object storage is served.
#[derive(Args, Clone, Debug)]
pub struct StorageArgs {
    /// Address of the S3-compatible endpoint; port 0 picks a free port.
    #[arg(long, env = "PLATEAU_STORAGE_LISTEN", default_value = "127.0.0.1:8082")]
    pub storage_listen: SocketAddr,
    /// Base domain of virtual-host style requests (`<bucket>.<domain>`).
    #[arg(long, env = "PLATEAU_STORAGE_DOMAIN", default_value = "s3.localhost")]
    pub storage_domain: String,
    /// The endpoint's public address (`https://s3.example.com`), for bucket details and
    /// presigned URLs; default `http://<domain>:<port>`.
    #[arg(long, env = "PLATEAU_STORAGE_URL")]
    pub storage_url: Option<String>,
    /// Object bytes: a directory, `file:///dir`, or `s3://bucket[/prefix]` (with the usual
    /// AWS_* variables); default: `storage` in the data directory.
    #[arg(long, env = "PLATEAU_STORAGE_STORE")]
    pub storage_store: Option<String>,
    /// Milliseconds between runs of the lifecycle job (buckets' expiration rules).
    #[arg(
        long,
        env = "PLATEAU_STORAGE_LIFECYCLE_EVERY_MS",
        default_value_t = 3_600_000
    )]
    pub storage_lifecycle_every_ms: u64,
    /// The length of a lifecycle rule's day in milliseconds: a day, but
    /// shorter for tests and conformance runs.
    #[arg(
        long,
        env = "PLATEAU_STORAGE_LIFECYCLE_DAY_MS",
        default_value_t = 86_400_000
    )]
    pub storage_lifecycle_day_ms: u64,
}

/// How often staging files of unfinished writes are swept, and how long one
/// must have gone unwritten; a live write is spared whatever its age.
const SWEEP_EVERY: Duration = Duration::from_secs(10 * 60);
const SWEEP_MIN_AGE: Duration = Duration::from_secs(5 * 60);

/// The host's sealing key, as object storage uses it.
struct HostSealer(Sealer);

impl Sealing for HostSealer {
    fn seal(&self, context: &str, plaintext: &[u8]) -> Option<Vec<u8>> {
        self.0.seal(context, plaintext).ok()
    }

    fn open(&self, context: &str, sealed: &[u8]) -> Option<Vec<u8>> {
        self.0.open(context, sealed).ok()
    }
}

/// Object storage, and its endpoint's listener (bound, not yet serving).
pub async fn open(
    args: &StorageArgs,
    data_dir: &Path,
    state: &AppState,
    sealing_key: &[u8; 32],
) -> anyhow::Result<(Storage, tokio::net::TcpListener)> {
    let blobs = match &args.storage_store {
        Some(spec) => Blobs::open(spec),
        None => Blobs::local(&data_dir.join("storage")),
    }
    .context("opening the object storage store")?;
    tracing::info!(store = %blobs.location, "object storage");
    // No write has started yet: every staging file is one a dead process
    // left. Later, the ones of writes this process lost track of.
    blobs.sweep_staging(Duration::ZERO).await;
    blobs.spawn_sweeper(SWEEP_EVERY, SWEEP_MIN_AGE);
    let ttl = state.config().auth_cache_ttl.max(Duration::from_millis(1));
    let provider = LocalProvider::new(state.db().clone(), blobs, ttl);
    let keys = Keys::new(
        state.db().clone(),
        Arc::new(HostSealer(Sealer::new(sealing_key))),
        ttl,
    );
    let storage = Storage::new(
        Arc::new(provider),
        keys,
        StorageConfig {
            domain: args.storage_domain.clone(),
            public_url: args.storage_url.clone(),
            region: "us-east-1".to_owned(),
        },
    );
    plateau_storage::lifecycle::run::spawn(
        state.db().clone(),
        storage.clone(),
        plateau_storage::lifecycle::run::Config {
            every: Duration::from_millis(args.storage_lifecycle_every_ms.max(1)),
            day: Duration::from_millis(args.storage_lifecycle_day_ms.max(1)),
        },
    );
    let listener = tokio::net::TcpListener::bind(args.storage_listen)
        .await
        .with_context(|| {
            format!(
                "listening on {} (PLATEAU_STORAGE_LISTEN)",
                args.storage_listen
            )
        })?;
    storage.set_port(listener.local_addr()?.port());
    Ok((storage, listener))
}
