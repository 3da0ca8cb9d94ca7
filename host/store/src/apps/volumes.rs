//! Volumes of apps and their backups. A volume is a managed resource of
//! the kernel (`crate::managed`, table `app_volumes`): the API inserts it
//! `creating` or asks for `deleting`; the agent of its host places it.
//! Its size counts against the organisation's storage (`storage_usage`)
//! from the request that made it to the one that deleted it, and a
//! backup's bytes from when it is stored.

use sqlx::FromRow;

use crate::events::{self, NewEvent};
use crate::{Db, Result, Tx};

/// Bytes a GB of `sizeGb` counts for, as the plan's `storage_gb` does.
pub const GB: i64 = 1_000_000_000;

#[derive(Clone, Debug, FromRow)]
pub struct Volume {
    pub id: String,
    pub org_id: String,
    pub app_id: String,
    pub name: String,
    pub size_gb: i64,
    pub mount_path: String,
    pub host_id: String,
    pub source_backup_id: Option<String>,
    pub status: String,
    pub status_detail: Option<String>,
    pub placement: String,
    pub created_at: i64,
    pub updated_at: i64,
}

const COLUMNS: &str = "id, org_id, app_id, name, size_gb, mount_path, host_id, \
    source_backup_id, status, status_detail, placement, created_at, updated_at";

#[derive(Clone, Debug, FromRow)]
pub struct Backup {
    pub id: String,
    pub org_id: String,
    pub app_id: String,
    pub volume_id: String,
    pub volume_name: String,
    pub mount_path: String,
    pub size_gb: i64,
    pub object_key: String,
    pub size_bytes: i64,
    pub created_at: i64,
}

const BACKUP_COLUMNS: &str = "id, org_id, app_id, volume_id, volume_name, mount_path, size_gb, \
    object_key, size_bytes, created_at";

/// Why a volume or backup could not be counted.
#[derive(Debug)]
pub enum Refused {
    /// The organisation's storage would pass its plan's `storage_gb`.
    Quota {
        storage_gb: i64,
        used: i64,
    },
    Store(crate::Error),
}

impl From<crate::Error> for Refused {
    fn from(e: crate::Error) -> Self {
        Refused::Store(e)
    }
}

impl From<sqlx::Error> for Refused {
    fn from(e: sqlx::Error) -> Self {
        Refused::Store(e.into())
    }
}

/// Adds `bytes` to the organisation's storage, refusing growth past its
/// plan's `storage_gb`; a negative `bytes` always goes.
pub async fn count_storage(tx: &mut Tx, org_id: &str, bytes: i64) -> Result<(), Refused> {
    sqlx::query(
        "INSERT INTO storage_usage (org_id, bytes, objects) VALUES ($1, 0, 0) \
         ON CONFLICT (org_id) DO NOTHING",
    )
    .bind(org_id)
    .execute(tx.conn())
    .await?;
    let (storage_gb,): (i64,) = sqlx::query_as(
        "SELECT p.storage_gb FROM organizations o JOIN plans p ON p.name = o.plan WHERE o.id = $1",
    )
    .bind(org_id)
    .fetch_one(tx.conn())
    .await?;
    let done = sqlx::query(
        "UPDATE storage_usage SET bytes = bytes + $2 WHERE org_id = $1 AND ($2 <= 0 OR bytes + $2 <= $3)",
    )
    .bind(org_id)
    .bind(bytes)
    .bind(storage_gb.saturating_mul(GB))
    .execute(tx.conn())
    .await?;
    if done.rows_affected() == 1 {
        return Ok(());
    }
    let (used,): (i64,) = sqlx::query_as("SELECT bytes FROM storage_usage WHERE org_id = $1")
        .bind(org_id)
        .fetch_one(tx.conn())
        .await?;
    Err(Refused::Quota { storage_gb, used })
}

/// Inserts `v` (in `creating`), with its event, counting its size.
pub async fn insert(tx: &mut Tx, v: &Volume, event: &NewEvent) -> Result<(), Refused> {
    count_storage(tx, &v.org_id, v.size_gb.saturating_mul(GB)).await?;
    let sql = format!(
        "INSERT INTO app_volumes ({COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
    );
    sqlx::query(&sql)
        .bind(&v.id)
        .bind(&v.org_id)
        .bind(&v.app_id)
        .bind(&v.name)
        .bind(v.size_gb)
        .bind(&v.mount_path)
        .bind(&v.host_id)
        .bind(&v.source_backup_id)
        .bind(&v.status)
        .bind(&v.status_detail)
        .bind(&v.placement)
        .bind(v.created_at)
        .bind(v.updated_at)
        .execute(tx.conn())
        .await?;
    events::record(tx, event, v.created_at).await?;
    Ok(())
}

/// The app's volumes, oldest first (those being deleted too).
pub async fn list(db: &Db, app_id: &str) -> Result<Vec<Volume>> {
    let sql = format!("SELECT {COLUMNS} FROM app_volumes WHERE app_id = $1 ORDER BY id");
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .fetch_all(db.pool())
        .await?)
}

/// [`list`] inside a write transaction.
pub async fn list_in(tx: &mut Tx, app_id: &str) -> Result<Vec<Volume>> {
    let sql = format!("SELECT {COLUMNS} FROM app_volumes WHERE app_id = $1 ORDER BY id");
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .fetch_all(tx.conn())
        .await?)
}

/// Volume `id` of the organisation's app `app_id`.
pub async fn get(db: &Db, org_id: &str, app_id: &str, id: &str) -> Result<Option<Volume>> {
    let sql =
        format!("SELECT {COLUMNS} FROM app_volumes WHERE org_id = $1 AND app_id = $2 AND id = $3");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(app_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// Volume `id`, for the host's own work (never for a caller).
pub async fn get_any(db: &Db, id: &str) -> Result<Option<Volume>> {
    let sql = format!("SELECT {COLUMNS} FROM app_volumes WHERE id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// Asks for volume `id` to be deleted (a new generation in `deleting`),
/// its size leaving the organisation's storage; whether it was not being
/// deleted already.
pub async fn request_delete(tx: &mut Tx, v: &Volume, event: &NewEvent, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE app_volumes SET status = 'deleting', status_detail = NULL, \
         generation = generation + 1, updated_at = $1 WHERE id = $2 AND status <> 'deleting'",
    )
    .bind(now)
    .bind(&v.id)
    .execute(tx.conn())
    .await?;
    if done.rows_affected() == 0 {
        return Ok(false);
    }
    count_storage(tx, &v.org_id, -v.size_gb.saturating_mul(GB))
        .await
        .map_err(|e| match e {
            Refused::Store(e) => e,
            Refused::Quota { .. } => unreachable!("a negative count is never refused"),
        })?;
    events::record(tx, event, now).await?;
    Ok(true)
}

/// Records a stored backup, counting its bytes, with its event.
pub async fn insert_backup(tx: &mut Tx, b: &Backup, event: &NewEvent) -> Result<(), Refused> {
    count_storage(tx, &b.org_id, b.size_bytes).await?;
    let sql = format!(
        "INSERT INTO app_volume_backups ({BACKUP_COLUMNS}) VALUES \
         ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    );
    sqlx::query(&sql)
        .bind(&b.id)
        .bind(&b.org_id)
        .bind(&b.app_id)
        .bind(&b.volume_id)
        .bind(&b.volume_name)
        .bind(&b.mount_path)
        .bind(b.size_gb)
        .bind(&b.object_key)
        .bind(b.size_bytes)
        .bind(b.created_at)
        .execute(tx.conn())
        .await?;
    events::record(tx, event, b.created_at).await?;
    Ok(())
}

/// The backups of volume `volume_id` of app `app_id`, oldest first.
pub async fn backups(db: &Db, app_id: &str, volume_id: &str) -> Result<Vec<Backup>> {
    let sql = format!(
        "SELECT {BACKUP_COLUMNS} FROM app_volume_backups \
         WHERE app_id = $1 AND volume_id = $2 ORDER BY id"
    );
    Ok(sqlx::query_as(&sql)
        .bind(app_id)
        .bind(volume_id)
        .fetch_all(db.pool())
        .await?)
}

/// Backup `id` of the organisation.
pub async fn backup(db: &Db, org_id: &str, id: &str) -> Result<Option<Backup>> {
    let sql =
        format!("SELECT {BACKUP_COLUMNS} FROM app_volume_backups WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}
