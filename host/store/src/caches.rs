//! Managed caches: the clusters, their snapshots, and the per-plan ceilings
//! of their settings. The provider's placement is kept as opaque JSON;
//! passwords are stored sealed by the host, never in clear.

use sqlx::FromRow;

use crate::events::{self, NewEvent};
use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Cache {
    pub id: String,
    pub org_id: String,
    pub name: String,
    /// What the reconciler observed: `creating`, `running`, `updating`,
    /// `degraded`, `deleting` or `failed` (see [`crate::managed`]).
    pub status: String,
    /// Why it failed, when it did.
    pub status_detail: Option<String>,
    /// Bumped by every change the user asks for.
    pub generation: i64,
    pub memory_mb: i64,
    pub eviction_policy: String,
    pub replicas: i64,
    /// `none`, `rdb` or `aof`.
    pub persistence: String,
    pub tls: i64,
    /// The host whose local provider runs the cluster.
    pub host_id: String,
    /// The provider's JSON (ports, directory, master name, ...).
    pub placement: String,
    pub password_sealed: String,
    pub admin_password_sealed: String,
    pub password_rotated_at: i64,
    pub source_snapshot_id: Option<String>,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, org_id, name, status, status_detail, generation, memory_mb, eviction_policy, replicas, \
    persistence, tls, host_id, placement, password_sealed, admin_password_sealed, \
    password_rotated_at, source_snapshot_id, created_at, updated_at";

#[derive(Clone, Debug, FromRow)]
pub struct Snapshot {
    pub id: String,
    pub org_id: String,
    /// The cache it was taken of, which may be deleted since.
    pub cache_id: String,
    /// That cache's name when the snapshot was taken.
    pub cache_name: String,
    /// That cache's settings then (the service's JSON; `{}` for snapshots
    /// taken before they were kept).
    pub settings: String,
    pub object_key: String,
    pub size_bytes: i64,
    pub created_at: i64,
    /// When it is removed: set when its cache is deleted, `None` while the
    /// cache exists.
    pub expires_at: Option<i64>,
}

pub(crate) const SNAPSHOT_COLUMNS: &str =
    "id, org_id, cache_id, cache_name, settings, object_key, size_bytes, created_at, expires_at";

/// The ceilings of a cache's settings on one plan.
#[derive(Clone, Debug, FromRow)]
pub struct CachePlanLimits {
    pub plan: String,
    pub max_replicas: i64,
    pub max_memory_mb: i64,
}

/// Inserts a cluster and records `event` in the same transaction.
pub async fn insert(tx: &mut Tx, cache: &Cache, event: &NewEvent, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO caches (id, org_id, name, status, status_detail, generation, memory_mb, \
         eviction_policy, replicas, persistence, tls, host_id, placement, password_sealed, \
         admin_password_sealed, password_rotated_at, source_snapshot_id, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
         $18, $19)",
    )
    .bind(&cache.id)
    .bind(&cache.org_id)
    .bind(&cache.name)
    .bind(&cache.status)
    .bind(&cache.status_detail)
    .bind(cache.generation)
    .bind(cache.memory_mb)
    .bind(&cache.eviction_policy)
    .bind(cache.replicas)
    .bind(&cache.persistence)
    .bind(cache.tls)
    .bind(&cache.host_id)
    .bind(&cache.placement)
    .bind(&cache.password_sealed)
    .bind(&cache.admin_password_sealed)
    .bind(cache.password_rotated_at)
    .bind(&cache.source_snapshot_id)
    .bind(cache.created_at)
    .bind(cache.updated_at)
    .execute(tx.conn())
    .await?;
    events::record(tx, event, now).await?;
    Ok(())
}

/// One of an organisation's clusters.
pub async fn get(db: &Db, org_id: &str, id: &str) -> Result<Option<Cache>> {
    let sql = format!("SELECT {COLUMNS} FROM caches WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// [`get`] inside a write transaction, so a change decides on what it sees.
pub async fn get_for_update(tx: &mut Tx, org_id: &str, id: &str) -> Result<Option<Cache>> {
    let sql = format!("SELECT {COLUMNS} FROM caches WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?)
}

/// An organisation's clusters, oldest first.
pub async fn list(db: &Db, org_id: &str, keyset: &Keyset) -> Result<Listed<Cache>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    crate::query::list(
        db.pool(),
        COLUMNS,
        "caches",
        conds,
        keyset,
        "id",
        Order::Asc,
    )
    .await
}

/// How many clusters an organisation has.
pub async fn count(db: &Db, org_id: &str) -> Result<i64> {
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM caches WHERE org_id = $1")
        .bind(org_id)
        .fetch_one(db.pool())
        .await?;
    Ok(n)
}

/// [`count`] inside the transaction that adds one (the plan's ceiling).
pub async fn count_for_update(tx: &mut Tx, org_id: &str) -> Result<i64> {
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM caches WHERE org_id = $1")
        .bind(org_id)
        .fetch_one(tx.conn())
        .await?;
    Ok(n)
}

/// The settings a PATCH may change.
#[derive(Clone, Debug)]
pub struct Settings {
    pub memory_mb: i64,
    pub eviction_policy: String,
    pub replicas: i64,
    pub persistence: String,
}

/// Writes changed settings (what the reconciler applies next, see
/// [`crate::managed::request`]) and records `event`.
pub async fn update_settings(
    tx: &mut Tx,
    org_id: &str,
    id: &str,
    settings: &Settings,
    event: &NewEvent,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE caches SET memory_mb = $1, eviction_policy = $2, replicas = $3, \
         persistence = $4, updated_at = $5 WHERE org_id = $6 AND id = $7",
    )
    .bind(settings.memory_mb)
    .bind(&settings.eviction_policy)
    .bind(settings.replicas)
    .bind(&settings.persistence)
    .bind(now)
    .bind(org_id)
    .bind(id)
    .execute(tx.conn())
    .await?;
    events::record(tx, event, now).await?;
    Ok(())
}

/// Replaces the sealed password (rotation) and records `event`.
pub async fn set_password(
    tx: &mut Tx,
    org_id: &str,
    id: &str,
    sealed: &str,
    event: &NewEvent,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE caches SET password_sealed = $1, password_rotated_at = $2, updated_at = $2 \
         WHERE org_id = $3 AND id = $4",
    )
    .bind(sealed)
    .bind(now)
    .bind(org_id)
    .bind(id)
    .execute(tx.conn())
    .await?;
    events::record(tx, event, now).await?;
    Ok(())
}

/// Records a snapshot whose bytes are already stored, with its event.
pub async fn insert_snapshot(
    tx: &mut Tx,
    snapshot: &Snapshot,
    event: &NewEvent,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO cache_snapshots (id, org_id, cache_id, cache_name, settings, object_key, \
         size_bytes, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&snapshot.id)
    .bind(&snapshot.org_id)
    .bind(&snapshot.cache_id)
    .bind(&snapshot.cache_name)
    .bind(&snapshot.settings)
    .bind(&snapshot.object_key)
    .bind(snapshot.size_bytes)
    .bind(snapshot.created_at)
    .execute(tx.conn())
    .await?;
    events::record(tx, event, now).await?;
    Ok(())
}

/// The ceilings of cache settings on `plan`.
pub async fn plan_limits(db: &Db, plan: &str) -> Result<Option<CachePlanLimits>> {
    Ok(sqlx::query_as(
        "SELECT plan, max_replicas, max_memory_mb FROM cache_plan_limits WHERE plan = $1",
    )
    .bind(plan)
    .fetch_optional(db.pool())
    .await?)
}
