//! Managed PostgreSQL clusters (spec sections 4.5 and 8): their rows and
//! the per-plan ceilings of their settings. The provider's placement is
//! kept as opaque JSON; passwords are stored sealed by the host, never in
//! clear. Roles, extensions and data live in the clusters themselves.

pub mod backups;
pub mod branches;
pub mod dumps;
pub mod resets;
pub mod rotations;
pub mod subscriptions;

use sqlx::FromRow;

use crate::events::{self, NewEvent};
use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Database {
    pub id: String,
    pub org_id: String,
    pub project_id: Option<String>,
    pub name: String,
    /// What the reconciler observed: `creating`, `running`, `updating`,
    /// `degraded`, `deleting` or `failed` (see [`crate::managed`]).
    pub status: String,
    /// Why it failed, when it did.
    pub status_detail: Option<String>,
    /// Bumped by every change the user asks for.
    pub generation: i64,
    /// `15`, `16` or `17`.
    pub version: String,
    pub replicas: i64,
    pub memory_mb: i64,
    pub cpus: i64,
    pub disk_gb: i64,
    pub backup_retention_days: i64,
    /// The host whose local provider runs the cluster.
    pub host_id: String,
    /// The provider's JSON (ports, directories, ...).
    pub placement: String,
    pub owner_password_sealed: String,
    pub admin_password_sealed: String,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, org_id, project_id, name, status, status_detail, generation, version, replicas, memory_mb, \
    cpus, disk_gb, backup_retention_days, host_id, placement, owner_password_sealed, \
    admin_password_sealed, created_at, updated_at";

/// The ceilings of one database's settings on one plan.
#[derive(Clone, Debug, FromRow)]
pub struct DatabasePlanLimits {
    pub plan: String,
    pub max_replicas: i64,
    pub max_memory_mb: i64,
    pub max_cpus: i64,
}

/// Inserts a cluster and records `event` in the same transaction.
pub async fn insert(tx: &mut Tx, d: &Database, event: &NewEvent, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO databases (id, org_id, project_id, name, status, status_detail, generation, \
         version, replicas, memory_mb, cpus, disk_gb, backup_retention_days, host_id, placement, \
         owner_password_sealed, admin_password_sealed, created_at, updated_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, \
         $18, $19)",
    )
    .bind(&d.id)
    .bind(&d.org_id)
    .bind(&d.project_id)
    .bind(&d.name)
    .bind(&d.status)
    .bind(&d.status_detail)
    .bind(d.generation)
    .bind(&d.version)
    .bind(d.replicas)
    .bind(d.memory_mb)
    .bind(d.cpus)
    .bind(d.disk_gb)
    .bind(d.backup_retention_days)
    .bind(&d.host_id)
    .bind(&d.placement)
    .bind(&d.owner_password_sealed)
    .bind(&d.admin_password_sealed)
    .bind(d.created_at)
    .bind(d.updated_at)
    .execute(tx.conn())
    .await?;
    events::record(tx, event, now).await?;
    Ok(())
}

/// One of an organisation's clusters.
pub async fn get(db: &Db, org_id: &str, id: &str) -> Result<Option<Database>> {
    let sql = format!("SELECT {COLUMNS} FROM databases WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// [`get`] inside a write transaction, so a change decides on what it sees.
pub async fn get_for_update(tx: &mut Tx, org_id: &str, id: &str) -> Result<Option<Database>> {
    let sql = format!("SELECT {COLUMNS} FROM databases WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(tx.conn())
        .await?)
}

/// An organisation's clusters, oldest first.
pub async fn list(db: &Db, org_id: &str, keyset: &Keyset) -> Result<Listed<Database>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    crate::query::list(
        db.pool(),
        COLUMNS,
        "databases",
        conds,
        keyset,
        "id",
        Order::Asc,
    )
    .await
}

/// How many clusters an organisation has and the disk they hold (GB).
pub async fn usage(db: &Db, org_id: &str) -> Result<(i64, i64)> {
    let (n, disk): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(SUM(disk_gb), 0) AS BIGINT) FROM databases WHERE org_id = $1",
    )
    .bind(org_id)
    .fetch_one(db.pool())
    .await?;
    Ok((n, disk))
}

/// [`usage`] inside the transaction that adds one (the plan's ceilings).
pub async fn usage_for_update(tx: &mut Tx, org_id: &str) -> Result<(i64, i64)> {
    let (n, disk): (i64, i64) = sqlx::query_as(
        "SELECT COUNT(*), CAST(COALESCE(SUM(disk_gb), 0) AS BIGINT) FROM databases WHERE org_id = $1",
    )
    .bind(org_id)
    .fetch_one(tx.conn())
    .await?;
    Ok((n, disk))
}

/// Writes a new name and backup retention (the connection never changes)
/// and records `event`.
pub async fn update_settings(
    tx: &mut Tx,
    org_id: &str,
    id: &str,
    name: &str,
    backup_retention_days: i64,
    event: &NewEvent,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE databases SET name = $1, backup_retention_days = $2, updated_at = $3 \
         WHERE org_id = $4 AND id = $5",
    )
    .bind(name)
    .bind(backup_retention_days)
    .bind(now)
    .bind(org_id)
    .bind(id)
    .execute(tx.conn())
    .await?;
    events::record(tx, event, now).await?;
    Ok(())
}

/// Records the number of replicas the user asked for (what the
/// reconciler applies next, see [`crate::managed::request`]) and `event`.
pub async fn set_replicas(
    tx: &mut Tx,
    org_id: &str,
    id: &str,
    replicas: i64,
    event: &NewEvent,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE databases SET replicas = $1, updated_at = $2 WHERE org_id = $3 AND id = $4",
    )
    .bind(replicas)
    .bind(now)
    .bind(org_id)
    .bind(id)
    .execute(tx.conn())
    .await?;
    events::record(tx, event, now).await?;
    Ok(())
}

/// Keeps where a cluster's members run now and how many replicas it has
/// (after a failover, a switchover or scaling) and records `event`.
pub async fn set_placement(
    tx: &mut Tx,
    id: &str,
    placement: &str,
    replicas: i64,
    event: &NewEvent,
    now: i64,
) -> Result<()> {
    sqlx::query(
        "UPDATE databases SET placement = $1, replicas = $2, updated_at = $3 WHERE id = $4",
    )
    .bind(placement)
    .bind(replicas)
    .bind(now)
    .bind(id)
    .execute(tx.conn())
    .await?;
    events::record(tx, event, now).await?;
    Ok(())
}

/// The ceilings of database settings on `plan`.
pub async fn plan_limits(db: &Db, plan: &str) -> Result<Option<DatabasePlanLimits>> {
    Ok(sqlx::query_as(
        "SELECT plan, max_replicas, max_memory_mb, max_cpus FROM database_plan_limits \
         WHERE plan = $1",
    )
    .bind(plan)
    .fetch_optional(db.pool())
    .await?)
}
