//! [`DatabaseService`]: what the API calls. It joins the store (rows,
//! events, plan ceilings), the provider (processes) and the host's sealing
//! key (passwords), and runs the supervision loop over this host's
//! clusters.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use plateau_core::{secret, time};
use plateau_seal::Sealer;
use plateau_store::Db;
use plateau_store::databases::{self, Database};
use plateau_store::events::{self, Actor, NewEvent};
use sqlx::Connection as _;

use crate::inside::quota;
use crate::spec::{ClusterSpec, Credentials, Placement};
use crate::{DatabaseProvider, Error, Result};

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
    /// Time between supervision rounds.
    pub supervise_every: Duration,
    /// Time between checks of the clusters' sizes against their disk
    /// quotas (at most once per supervision round).
    pub disk_check_every: Duration,
}

/// How often the leaders of clusters with replicas are checked.
pub const WATCH_EVERY: Duration = Duration::from_millis(500);

pub struct DatabaseService {
    db: Db,
    provider: Arc<dyn DatabaseProvider>,
    sealer: Arc<Sealer>,
    config: ServiceConfig,
}

/// Which of a cluster's passwords a sealed value holds.
#[derive(Clone, Copy)]
pub enum Which {
    Owner,
    Admin,
}

impl DatabaseService {
    pub fn new(
        db: Db,
        provider: Arc<dyn DatabaseProvider>,
        sealer: Arc<Sealer>,
        config: ServiceConfig,
    ) -> Self {
        DatabaseService {
            db,
            provider,
            sealer,
            config,
        }
    }

    pub fn provider(&self) -> &dyn DatabaseProvider {
        self.provider.as_ref()
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

    fn context(org_id: &str, id: &str, which: Which) -> String {
        let which = match which {
            Which::Owner => "owner",
            Which::Admin => "admin",
        };
        format!("database\u{1f}{org_id}\u{1f}{id}\u{1f}{which}")
    }

    /// Seals a password of a cluster for the store (base64).
    pub fn seal(&self, org_id: &str, id: &str, which: Which, password: &str) -> Result<String> {
        let sealed = self
            .sealer
            .seal(&Self::context(org_id, id, which), password.as_bytes())
            .map_err(|e| Error::Seal(e.to_string()))?;
        Ok(BASE64.encode(sealed))
    }

    fn open(&self, d: &Database, which: Which, sealed: &str) -> Result<String> {
        let bytes = BASE64
            .decode(sealed)
            .map_err(|e| Error::Seal(e.to_string()))?;
        let plain = self
            .sealer
            .open(&Self::context(&d.org_id, &d.id, which), &bytes)
            .map_err(|e| Error::Seal(e.to_string()))?;
        String::from_utf8(plain).map_err(|e| Error::Seal(e.to_string()))
    }

    /// The password of the host's read-only role
    /// ([`crate::inside::roles::READER_ROLE`]): derived from the host's
    /// own, so it needs no column of its own and never changes.
    pub fn reader_password(credentials: &Credentials) -> String {
        use hmac::Mac;
        let mut mac =
            hmac::Hmac::<sha2::Sha256>::new_from_slice(credentials.admin_password.as_bytes())
                .expect("hmac takes any key length");
        mac.update(crate::inside::roles::READER_ROLE.as_bytes());
        let bytes = mac.finalize().into_bytes();
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    pub fn credentials(&self, d: &Database) -> Result<Credentials> {
        Ok(Credentials {
            owner_password: self.open(d, Which::Owner, &d.owner_password_sealed)?,
            admin_password: self.open(d, Which::Admin, &d.admin_password_sealed)?,
        })
    }

    pub fn spec(d: &Database) -> ClusterSpec {
        ClusterSpec {
            id: d.id.clone(),
            version: d.version.clone(),
            memory_mb: d.memory_mb as u32,
            cpus: d.cpus as u32,
            disk_gb: d.disk_gb as u32,
            replicas: d.replicas as u32,
        }
    }

    pub fn placement(d: &Database) -> Result<Placement> {
        Placement::from_json(&d.placement)
    }

    /// A superuser connection to the cluster's own database.
    pub async fn admin(&self, d: &Database) -> Result<sqlx::PgConnection> {
        let placement = Self::placement(d)?;
        let credentials = self.credentials(d)?;
        self.provider
            .connect(
                &placement,
                crate::spec::ADMIN_ROLE,
                &credentials.admin_password,
                &placement.database,
            )
            .await
    }

    /// A connection as the cluster's owner role (never a superuser), for
    /// the console and the data API.
    pub async fn as_owner(&self, d: &Database) -> Result<sqlx::PgConnection> {
        let placement = Self::placement(d)?;
        let credentials = self.credentials(d)?;
        self.provider
            .connect(
                &placement,
                &placement.owner,
                &credentials.owner_password,
                &placement.database,
            )
            .await
    }

    /// Supervises this host's clusters every `supervise_every`, starting
    /// with one round at once (adoption after a restart), and the clusters
    /// with replicas every [`WATCH_EVERY`] too, so a failover starts
    /// within a second or so of the leader's death.
    pub fn spawn_supervisor(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let service = self.clone();
        tokio::spawn(async move {
            let every = service.config.supervise_every;
            let tick = every.min(WATCH_EVERY);
            let mut last_full: Option<tokio::time::Instant> = None;
            let mut last_disk: Option<tokio::time::Instant> = None;
            loop {
                let full = last_full.is_none_or(|t| t.elapsed() >= every);
                if full {
                    last_full = Some(tokio::time::Instant::now());
                }
                let disk = full
                    && last_disk.is_none_or(|t| t.elapsed() >= service.config.disk_check_every);
                if disk {
                    last_disk = Some(tokio::time::Instant::now());
                }
                service.supervise_round(full, disk).await;
                tokio::time::sleep(tick).await;
            }
        })
    }

    /// One round over every cluster of this host (`all`), or over those
    /// with replicas; with a check of the healthy ones' disk quotas
    /// (`disk`).
    async fn supervise_round(&self, all: bool, disk: bool) {
        let clusters = match databases::list_on_host(&self.db, &self.config.host_id).await {
            Ok(clusters) => clusters,
            Err(e) => {
                tracing::warn!(error = %e, "listing the databases to supervise");
                return;
            }
        };
        for d in clusters {
            if !all && d.replicas == 0 {
                continue;
            }
            let healthy = match self.supervise_one(&d).await {
                Ok(Some(healthy)) => healthy,
                Ok(None) => continue,
                Err(e) => {
                    tracing::warn!(database = %d.id, error = %e, "supervising a database");
                    false
                }
            };
            if disk
                && healthy
                && let Err(e) = self.check_disk(&d).await
            {
                tracing::warn!(database = %d.id, error = %e, "checking a database's disk quota");
            }
            let status = if healthy { "running" } else { "degraded" };
            if let Err(e) = databases::set_status(&self.db, &d.id, status, time::now_ms()).await {
                tracing::warn!(database = %d.id, error = %e, "recording a database's status");
            }
        }
    }

    /// One round over one cluster: whether it is healthy, or `None` when
    /// another change (in this process or another: the API's, a second
    /// agent's) holds its lock. The round never waits for it, so a cluster
    /// under a long change delays no other's failover, and no two
    /// processes ever fail over one cluster at once.
    async fn supervise_one(&self, d: &Database) -> Result<Option<bool>> {
        let Some(_changes) = self.config.locks.try_lock(&d.id)? else {
            return Ok(None);
        };
        // Read again under the lock: the cluster may have changed or gone.
        let Some(d) = databases::get(&self.db, &d.org_id, &d.id).await? else {
            return Ok(Some(true));
        };
        let spec = Self::spec(&d);
        let placement = Self::placement(&d)?;
        let credentials = self.credentials(&d)?;
        let round = self
            .provider
            .supervise(&spec, &placement, &credentials)
            .await?;
        if let Some(new) = &round.placement {
            let data = match &round.failover {
                Some((from, to)) => serde_json::json!({ "from": from, "to": to }),
                None => serde_json::json!({ "leader": new.leader }),
            };
            let kind = if round.failover.is_some() {
                "database.failed_over"
            } else {
                "database.members_changed"
            };
            let event = NewEvent::audited(&d.org_id, kind, "resources", "update", &Actor::system())
                .resource("database", &d.id)
                .data(data);
            self.record_placement(&d, new, d.replicas, &event).await?;
        }
        Ok(Some(round.healthy))
    }

    /// Compares the cluster's size with its disk quota and, when that
    /// changed, turns its read-only mode on or off, with an event
    /// (`database.disk_full`, `database.disk_ok`).
    async fn check_disk(&self, d: &Database) -> Result<()> {
        let quota = quota::quota_bytes(d.disk_gb);
        let mut conn = self.admin(d).await?;
        let usage = quota::usage(&mut conn).await?;
        let over = usage.used_bytes > quota;
        if over != usage.read_only {
            quota::set_read_only(&mut conn, over).await?;
            let kind = if over {
                "database.disk_full"
            } else {
                "database.disk_ok"
            };
            let event = NewEvent::audited(&d.org_id, kind, "resources", "update", &Actor::system())
                .resource("database", &d.id)
                .data(serde_json::json!({
                    "usedBytes": usage.used_bytes,
                    "quotaBytes": quota,
                    "readOnly": over,
                }));
            self.record_event(&event).await?;
        }
        let _ = conn.close().await;
        Ok(())
    }

    /// Records `event` of a change already made in a cluster.
    pub async fn record_event(&self, event: &NewEvent) -> Result<()> {
        let mut tx = self.db.begin().await?;
        events::record(&mut tx, event, time::now_ms()).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Keeps a cluster's new placement and replica count, with `event`.
    pub async fn record_placement(
        &self,
        d: &Database,
        placement: &Placement,
        replicas: i64,
        event: &NewEvent,
    ) -> Result<()> {
        let now = time::now_ms();
        let mut tx = self.db.begin().await?;
        databases::set_placement(&mut tx, &d.id, &placement.to_json(), replicas, event, now)
            .await?;
        tx.commit().await?;
        Ok(())
    }
}
