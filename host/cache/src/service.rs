//! [`CacheService`]: what the API calls. It joins the store (rows, events,
//! plan ceilings), the provider (processes) and the host's sealing key
//! (passwords), and runs the supervision loop over this host's clusters.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use plateau_core::{secret, time};
use plateau_seal::Sealer;
use plateau_store::Db;
use plateau_store::caches::{self, Cache};

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
    /// Seconds between supervision rounds.
    pub supervise_every: Duration,
}

pub struct CacheService {
    db: Db,
    provider: Arc<dyn CacheProvider>,
    sealer: Arc<Sealer>,
    snapshots: SnapshotStore,
    config: ServiceConfig,
}

/// Which of a cluster's passwords a sealed value holds.
#[derive(Clone, Copy)]
pub enum Which {
    Customer,
    Admin,
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
            sealer,
            snapshots,
            config,
        }
    }

    pub fn provider(&self) -> &dyn CacheProvider {
        self.provider.as_ref()
    }

    pub fn snapshots(&self) -> &SnapshotStore {
        &self.snapshots
    }

    /// Excludes the supervisor (and every other change) while cluster
    /// `id`'s processes change.
    pub async fn exclusive(&self, id: &str) -> Result<plateau_kernel::ResourceGuard> {
        Ok(self.config.locks.lock(id).await?)
    }

    pub fn host_id(&self) -> &str {
        &self.config.host_id
    }

    /// A new random password (40 letters and digits).
    pub fn generate_password() -> String {
        secret::generate("")
    }

    fn context(org_id: &str, cache_id: &str, which: Which) -> String {
        let which = match which {
            Which::Customer => "user",
            Which::Admin => "admin",
        };
        format!("cache\u{1f}{org_id}\u{1f}{cache_id}\u{1f}{which}")
    }

    /// Seals a password of a cluster for the store (base64).
    pub fn seal(
        &self,
        org_id: &str,
        cache_id: &str,
        which: Which,
        password: &str,
    ) -> Result<String> {
        let sealed = self
            .sealer
            .seal(&Self::context(org_id, cache_id, which), password.as_bytes())
            .map_err(|e| Error::Seal(e.to_string()))?;
        Ok(BASE64.encode(sealed))
    }

    fn open(&self, cache: &Cache, which: Which, sealed: &str) -> Result<String> {
        let bytes = BASE64
            .decode(sealed)
            .map_err(|e| Error::Seal(e.to_string()))?;
        let plain = self
            .sealer
            .open(&Self::context(&cache.org_id, &cache.id, which), &bytes)
            .map_err(|e| Error::Seal(e.to_string()))?;
        String::from_utf8(plain).map_err(|e| Error::Seal(e.to_string()))
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

    pub fn placement(cache: &Cache) -> Result<Placement> {
        Placement::from_json(&cache.placement)
    }

    /// Supervises this host's clusters every `supervise_every`, starting
    /// with one round at once (adoption after a restart).
    pub fn spawn_supervisor(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let service = self.clone();
        tokio::spawn(async move {
            loop {
                service.supervise_round().await;
                tokio::time::sleep(service.config.supervise_every).await;
            }
        })
    }

    async fn supervise_round(&self) {
        let clusters = match caches::list_on_host(&self.db, &self.config.host_id).await {
            Ok(clusters) => clusters,
            Err(e) => {
                tracing::warn!(error = %e, "listing the caches to supervise");
                return;
            }
        };
        for cache in clusters {
            let healthy = match self.supervise_one(&cache).await {
                Ok(healthy) => healthy,
                Err(e) => {
                    tracing::warn!(cache = %cache.id, error = %e, "supervising a cache");
                    false
                }
            };
            let status = if healthy { "running" } else { "degraded" };
            if let Err(e) = caches::set_status(&self.db, &cache.id, status, time::now_ms()).await {
                tracing::warn!(cache = %cache.id, error = %e, "recording a cache's status");
            }
        }
    }

    async fn supervise_one(&self, cache: &Cache) -> Result<bool> {
        let _changes = self.exclusive(&cache.id).await?;
        // Read again under the lock: the cluster may have changed or gone.
        let Some(cache) = caches::get(&self.db, &cache.org_id, &cache.id).await? else {
            return Ok(true);
        };
        let cache = &cache;
        let spec = Self::spec(cache)?;
        let placement = Self::placement(cache)?;
        let credentials = self.credentials(cache)?;
        self.provider
            .supervise(&spec, &placement, &credentials)
            .await
    }
}
