//! [`CacheService`]: what the API and the reconciler (`reconciler`)
//! call. It joins the store (rows, events, plan ceilings), the provider
//! (processes) and the host's sealing key (passwords). The API records
//! what the user asked for; the kernel's supervisor, in `plateau agent`,
//! drives the provider toward it.

use std::sync::Arc;
use std::time::Duration;

use plateau_core::secret;
use plateau_kernel::sealed::Passwords;
use plateau_seal::Sealer;
use plateau_store::Db;
use plateau_store::caches::Cache;

use crate::snapshots::SnapshotStore;
use crate::spec::{ClusterSpec, Credentials, Placement};
use crate::{CacheProvider, Error, Result};

/// Settings of the service.
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// One lock per cluster, held by every change of its processes in
    /// either process of the host (the API and the agent), so the
    /// supervisor never restarts a process that a change is stopping.
    pub locks: plateau_kernel::ResourceLocks,
    /// This host's identity: clusters it created carry it, and only it
    /// supervises them.
    pub host_id: String,
    /// Time between observations of a running cluster.
    pub supervise_every: Duration,
    /// How long a deleted cache's snapshots are kept.
    pub snapshot_retention: Duration,
}

pub struct CacheService {
    db: Db,
    provider: Arc<dyn CacheProvider>,
    passwords: Passwords,
    snapshots: SnapshotStore,
    config: ServiceConfig,
}

/// Which of a cluster's passwords a sealed value holds.
#[derive(Clone, Copy)]
pub enum Which {
    Customer,
    Admin,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Customer => "user",
            Which::Admin => "admin",
        }
    }
}

impl CacheService {
    pub fn new(
        db: Db,
        provider: Arc<dyn CacheProvider>,
        sealer: Arc<Sealer>,
        snapshots: SnapshotStore,
        config: ServiceConfig,
    ) -> Self {
        CacheService {
            db,
            provider,
            passwords: Passwords::new(sealer, "cache"),
            snapshots,
            config,
        }
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    pub fn provider(&self) -> &dyn CacheProvider {
        self.provider.as_ref()
    }

    pub fn snapshots(&self) -> &SnapshotStore {
        &self.snapshots
    }

    /// The per-cluster locks (the reconciler holds one while it works).
    pub fn locks(&self) -> &plateau_kernel::ResourceLocks {
        &self.config.locks
    }

    /// Excludes the reconciler (and every other change) while cluster
    /// `id`'s processes change.
    pub async fn exclusive(&self, id: &str) -> Result<plateau_kernel::ResourceGuard> {
        Ok(self.config.locks.lock(id).await?)
    }

    /// How long a deleted cache's snapshots are kept.
    pub fn snapshot_retention(&self) -> Duration {
        self.config.snapshot_retention
    }

    pub fn host_id(&self) -> &str {
        &self.config.host_id
    }

    pub fn supervise_every(&self) -> Duration {
        self.config.supervise_every
    }

    /// A new random password (40 letters and digits).
    pub fn generate_password() -> String {
        secret::generate("")
    }

    /// Seals a password of a cluster for the store (base64).
    pub fn seal(
        &self,
        org_id: &str,
        cache_id: &str,
        which: Which,
        password: &str,
    ) -> Result<String> {
        self.passwords
            .seal(org_id, cache_id, which.name(), password)
            .map_err(|e| Error::Seal(e.to_string()))
    }

    fn open(&self, cache: &Cache, which: Which, sealed: &str) -> Result<String> {
        self.passwords
            .open(&cache.org_id, &cache.id, which.name(), sealed)
            .map_err(|e| Error::Seal(e.to_string()))
    }

    pub fn credentials(&self, cache: &Cache) -> Result<Credentials> {
        Ok(Credentials {
            password: self.open(cache, Which::Customer, &cache.password_sealed)?,
            admin_password: self.open(cache, Which::Admin, &cache.admin_password_sealed)?,
        })
    }

    pub fn spec(cache: &Cache) -> Result<ClusterSpec> {
        Ok(ClusterSpec {
            id: cache.id.clone(),
            memory_mb: cache.memory_mb as u32,
            eviction_policy: cache.eviction_policy.parse().map_err(Error::Internal)?,
            replicas: cache.replicas as u32,
            persistence: cache.persistence.parse().map_err(Error::Internal)?,
            tls: cache.tls != 0,
        })
    }

    /// Where the cluster runs, `None` until the provider has placed it.
    pub fn placed(cache: &Cache) -> Result<Option<Placement>> {
        match cache.placement.as_str() {
            "" => Ok(None),
            json => Placement::from_json(json).map(Some),
        }
    }

    /// Where the cluster runs; a cluster not placed yet is refused.
    pub fn placement(cache: &Cache) -> Result<Placement> {
        Self::placed(cache)?.ok_or_else(|| {
            Error::NotPlaced(format!(
                "cache {} is {}; wait until its status is running",
                cache.id, cache.status
            ))
        })
    }
}
