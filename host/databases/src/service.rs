//! [`DatabaseService`]: what the API and the reconciler (`reconciler`)
//! call. It joins the store (rows, events, plan ceilings), the provider
//! (processes) and the host's sealing key (passwords). The API records
//! what the user asked for; the kernel's supervisor, in `plateau agent`,
//! drives the provider toward it.

use std::sync::Arc;
use std::time::Duration;

use plateau_core::{secret, time};
use plateau_kernel::sealed::Passwords;
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
    /// Time between observations of a running cluster without replicas
    /// (those with replicas are observed every [`WATCH_EVERY`]).
    pub supervise_every: Duration,
    /// Time between checks of the clusters' sizes against their disk
    /// quotas (at most once per supervision round).
    pub disk_check_every: Duration,
    /// Time between scheduled base backups of a cluster (`backups`).
    pub backup_every: Duration,
    /// How long the previous password of a rotation keeps working
    /// (`rotation`).
    pub rotation_overlap: Duration,
    /// The operator's exemptions from the egress guard
    /// (`PLATEAU_EGRESS_ALLOW`), which a subscription's source named by a
    /// connection string must pass (`replication`).
    pub egress_allow: Vec<ipnet::IpNet>,
}

/// How often the leaders of clusters with replicas are checked.
pub const WATCH_EVERY: Duration = Duration::from_millis(500);

pub struct DatabaseService {
    db: Db,
    provider: Arc<dyn DatabaseProvider>,
    passwords: Passwords,
    config: ServiceConfig,
    /// Clusters whose read-only role this process has made sure of, and
    /// when each one's disk was last checked.
    pub(crate) checked: std::sync::Mutex<Checked>,
}

/// What the reconciler did once per cluster, or does now and then.
#[derive(Default)]
pub(crate) struct Checked {
    pub readers: std::collections::HashSet<String>,
    pub disks: std::collections::HashMap<String, std::time::Instant>,
}

/// Which of a cluster's passwords a sealed value holds.
#[derive(Clone, Copy)]
pub enum Which {
    Owner,
    Admin,
}

impl Which {
    fn name(self) -> &'static str {
        match self {
            Which::Owner => "owner",
            Which::Admin => "admin",
        }
    }
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
            passwords: Passwords::new(sealer, "database"),
            config,
            checked: Default::default(),
        }
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    pub fn config(&self) -> &ServiceConfig {
        &self.config
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

    /// Seals a password of a cluster for the store (base64).
    pub fn seal(&self, org_id: &str, id: &str, which: Which, password: &str) -> Result<String> {
        self.passwords
            .seal(org_id, id, which.name(), password)
            .map_err(|e| Error::Seal(e.to_string()))
    }

    fn open(&self, d: &Database, which: Which, sealed: &str) -> Result<String> {
        self.passwords
            .open(&d.org_id, &d.id, which.name(), sealed)
            .map_err(|e| Error::Seal(e.to_string()))
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

    /// Where the cluster runs, `None` until the provider has placed it.
    pub fn placed(d: &Database) -> Result<Option<Placement>> {
        match d.placement.as_str() {
            "" => Ok(None),
            json => Placement::from_json(json).map(Some),
        }
    }

    /// Where the cluster runs; a cluster not placed yet is refused.
    pub fn placement(d: &Database) -> Result<Placement> {
        Self::placed(d)?.ok_or_else(|| {
            Error::NotPlaced(format!(
                "database {} is {}; wait until its status is running",
                d.id, d.status
            ))
        })
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
    /// the console and the data API: through the login role the
    /// connection details name (the owner, or its alias after a rotation,
    /// whose sessions run as the owner).
    pub async fn as_owner(&self, d: &Database) -> Result<sqlx::PgConnection> {
        let placement = Self::placement(d)?;
        let (role, password) = self.login(d, &placement).await?;
        self.provider
            .connect(&placement, &role, &password, &placement.database)
            .await
    }

    /// Compares the cluster's size with its disk quota and, when that
    /// changed, turns its read-only mode on or off, with an event
    /// (`database.disk_full`, `database.disk_ok`).
    pub(crate) async fn check_disk(&self, d: &Database) -> Result<()> {
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
