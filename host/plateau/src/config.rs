//! Settings shared by the commands, from flags or `PLATEAU_*` variables.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Args, ValueEnum};
use plateau_store::Db;

/// Where the data lives.
#[derive(Args, Clone, Debug)]
pub struct StoreArgs {
    /// Directory for the embedded database and other local state.
    #[arg(long, env = "PLATEAU_DATA_DIR", default_value = "./data")]
    pub data_dir: PathBuf,
    /// `sqlite://PATH` or `postgres://...`; default: a SQLite file in the data directory.
    #[arg(long, env = "PLATEAU_DATABASE_URL")]
    pub database_url: Option<String>,
}

impl StoreArgs {
    /// Opens (creating and migrating as needed) the configured database.
    pub async fn open(&self) -> anyhow::Result<Db> {
        std::fs::create_dir_all(&self.data_dir)
            .with_context(|| format!("creating the data directory {}", self.data_dir.display()))?;
        let url = match &self.database_url {
            Some(url) => url.clone(),
            None => Db::sqlite_url(&self.data_dir),
        };
        Db::connect(&url)
            .await
            .with_context(|| format!("opening {}", plateau_store::db::redact(&url)))
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Where registry content lives.
#[derive(Args, Clone, Debug)]
pub struct RegistryStoreArgs {
    /// Registry blob storage: a directory, `file:///dir`, or `s3://bucket[/prefix]` (with the
    /// usual AWS_* variables: AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_REGION, AWS_ENDPOINT,
    /// AWS_ALLOW_HTTP); default: `registry` in the data directory.
    #[arg(long, env = "PLATEAU_REGISTRY_STORE")]
    pub registry_store: Option<String>,
}

impl RegistryStoreArgs {
    pub fn open(&self, data_dir: &std::path::Path) -> anyhow::Result<plateau_registry::BlobStore> {
        let store = match &self.registry_store {
            Some(spec) => plateau_registry::BlobStore::open(spec),
            None => plateau_registry::BlobStore::local(&data_dir.join("registry")),
        };
        store.context("opening the registry store")
    }
}

/// Garbage collection of the registry.
#[derive(Args, Clone, Debug)]
pub struct RegistryGcArgs {
    /// Seconds an unreferenced blob is kept before GC deletes it (pushes in flight use it).
    #[arg(long, env = "PLATEAU_REGISTRY_GC_GRACE_SECS", default_value_t = 3600)]
    pub registry_gc_grace_secs: i64,
    /// Seconds an unfinished upload may stay untouched.
    #[arg(
        long,
        env = "PLATEAU_REGISTRY_UPLOAD_TTL_SECS",
        default_value_t = 86400
    )]
    pub registry_upload_ttl_secs: i64,
}

impl RegistryGcArgs {
    pub fn options(&self) -> plateau_registry::gc::GcOptions {
        plateau_registry::gc::GcOptions {
            grace_secs: self.registry_gc_grace_secs.max(0),
            upload_ttl_secs: self.registry_upload_ttl_secs.max(0),
        }
    }
}

/// How long a client may keep a listener waiting (the API with the
/// registry, the apps edge, the S3 endpoint).
#[derive(Args, Clone, Debug)]
pub struct ListenArgs {
    /// How long a client may take to send a request's headers (and a
    /// kept-alive connection may stay idle), in milliseconds; then the
    /// connection is closed. 0: no limit.
    #[arg(long, env = "PLATEAU_HEADER_READ_TIMEOUT_MS", default_value_t = 30_000)]
    pub header_read_timeout_ms: u64,
    /// How long a request body may send nothing, in milliseconds; then the
    /// request fails (408 on the API) and the connection is closed. A
    /// bound on each pause, not on the whole upload. 0: no limit.
    #[arg(long, env = "PLATEAU_BODY_READ_TIMEOUT_MS", default_value_t = 30_000)]
    pub body_read_timeout_ms: u64,
}

impl ListenArgs {
    pub fn timeouts(&self) -> plateau_listen::Timeouts {
        plateau_listen::Timeouts::from_millis(
            self.header_read_timeout_ms,
            self.body_read_timeout_ms,
        )
    }
}
