//! The backup ledger of managed PostgreSQL (issue 32): one row per base
//! backup (`full`) or archived stretch of WAL (`incremental`) of a
//! cluster, which outlives the cluster until its `expires_at`; and the
//! source of a cluster made by a restore (`database_restores`).

use sqlx::FromRow;

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Backup {
    pub id: String,
    pub org_id: String,
    pub database_id: String,
    pub database_name: String,
    /// The source's version, owner role and database, as JSON.
    pub settings: String,
    /// `full` or `incremental`.
    pub kind: String,
    /// `pending`, `running`, `completed` or `failed`.
    pub status: String,
    /// Why it failed.
    pub detail: Option<String>,
    pub started_at: Option<i64>,
    pub ended_at: Option<i64>,
    pub size_bytes: i64,
    /// The first and last WAL segment it needs.
    pub wal_start: Option<String>,
    pub wal_end: Option<String>,
    pub created_at: i64,
    /// Set when its database is deleted: swept after.
    pub expires_at: Option<i64>,
}

const COLUMNS: &str = "id, org_id, database_id, database_name, settings, kind, status, detail, \
    started_at, ended_at, size_bytes, wal_start, wal_end, created_at, expires_at";

/// What a finished backup measured.
#[derive(Clone, Debug, Default)]
pub struct Finished {
    pub started_at: i64,
    pub ended_at: i64,
    pub size_bytes: i64,
    pub wal_start: String,
    pub wal_end: String,
}

/// Records a backup asked for (`pending`), for the agent to take.
pub async fn insert(db: &Db, b: &Backup) -> Result<()> {
    sqlx::query(
        "INSERT INTO database_backups (id, org_id, database_id, database_name, settings, kind, \
         status, detail, started_at, ended_at, size_bytes, wal_start, wal_end, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)",
    )
    .bind(&b.id)
    .bind(&b.org_id)
    .bind(&b.database_id)
    .bind(&b.database_name)
    .bind(&b.settings)
    .bind(&b.kind)
    .bind(&b.status)
    .bind(&b.detail)
    .bind(b.started_at)
    .bind(b.ended_at)
    .bind(b.size_bytes)
    .bind(&b.wal_start)
    .bind(&b.wal_end)
    .bind(b.created_at)
    .bind(b.expires_at)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// The ledger of one database (live or deleted), oldest first.
pub async fn list(db: &Db, org_id: &str, database_id: &str) -> Result<Vec<Backup>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM database_backups WHERE org_id = $1 AND database_id = $2 ORDER BY id"
    );
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(database_id)
        .fetch_all(db.pool())
        .await?)
}

/// One backup.
pub async fn get(db: &Db, id: &str) -> Result<Option<Backup>> {
    let sql = format!("SELECT {COLUMNS} FROM database_backups WHERE id = $1");
    Ok(sqlx::query_as(&sql)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// The backups asked for of the databases host `host_id` runs.
pub async fn pending(db: &Db, host_id: &str) -> Result<Vec<Backup>> {
    let sql = format!(
        "SELECT {} FROM database_backups b JOIN databases d ON d.id = b.database_id \
         WHERE b.status = 'pending' AND d.host_id = $1 AND d.status IN ('running', 'degraded') \
         ORDER BY b.id",
        COLUMNS
            .split(", ")
            .map(|c| format!("b.{c}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(sqlx::query_as(&sql)
        .bind(host_id)
        .fetch_all(db.pool())
        .await?)
}

/// Takes a pending backup (`running`); false if another took it.
pub async fn start(db: &Db, id: &str, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE database_backups SET status = 'running', started_at = $2 \
         WHERE id = $1 AND status = 'pending'",
    )
    .bind(id)
    .bind(now)
    .execute(db.pool())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A backup done.
pub async fn complete(db: &Db, id: &str, f: &Finished) -> Result<()> {
    sqlx::query(
        "UPDATE database_backups SET status = 'completed', started_at = $2, ended_at = $3, \
         size_bytes = $4, wal_start = $5, wal_end = $6 WHERE id = $1",
    )
    .bind(id)
    .bind(f.started_at)
    .bind(f.ended_at)
    .bind(f.size_bytes)
    .bind(&f.wal_start)
    .bind(&f.wal_end)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// A backup that failed, and why.
pub async fn fail(db: &Db, id: &str, detail: &str, now: i64) -> Result<()> {
    sqlx::query(
        "UPDATE database_backups SET status = 'failed', detail = $2, ended_at = $3 WHERE id = $1",
    )
    .bind(id)
    .bind(detail)
    .bind(now)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// Fails the backups a stopped agent of `host_id` left `running`.
pub async fn fail_interrupted(db: &Db, host_id: &str, now: i64) -> Result<u64> {
    let done = sqlx::query(
        "UPDATE database_backups SET status = 'failed', detail = 'interrupted: the agent stopped', \
         ended_at = $2 WHERE status = 'running' AND database_id IN \
         (SELECT id FROM databases WHERE host_id = $1)",
    )
    .bind(host_id)
    .bind(now)
    .execute(db.pool())
    .await?;
    Ok(done.rows_affected())
}

/// The newest completed backup of `kind` of a database.
pub async fn latest(db: &Db, database_id: &str, kind: &str) -> Result<Option<Backup>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM database_backups WHERE database_id = $1 AND kind = $2 \
         AND status = 'completed' ORDER BY ended_at DESC LIMIT 1"
    );
    Ok(sqlx::query_as(&sql)
        .bind(database_id)
        .bind(kind)
        .fetch_optional(db.pool())
        .await?)
}

/// When the newest backup of the database was asked for, whatever became
/// of it.
pub async fn last_asked(db: &Db, database_id: &str) -> Result<Option<i64>> {
    let (at,): (Option<i64>,) =
        sqlx::query_as("SELECT MAX(created_at) FROM database_backups WHERE database_id = $1")
            .bind(database_id)
            .fetch_one(db.pool())
            .await?;
    Ok(at)
}

/// Whether a backup of the database is pending or running.
pub async fn in_flight(db: &Db, database_id: &str) -> Result<bool> {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM database_backups WHERE database_id = $1 \
         AND status IN ('pending', 'running')",
    )
    .bind(database_id)
    .fetch_one(db.pool())
    .await?;
    Ok(n > 0)
}

/// Keeps the backups of database `database_id`, which is being deleted,
/// until `expires_at`.
pub async fn retain(tx: &mut Tx, database_id: &str, expires_at: i64) -> Result<()> {
    sqlx::query(
        "UPDATE database_backups SET expires_at = $2 WHERE database_id = $1 AND expires_at IS NULL",
    )
    .bind(database_id)
    .bind(expires_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// The ledgers whose retention ended: database ids whose every row expired
/// before `now`.
pub async fn expired_databases(db: &Db, now: i64, limit: i64) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT database_id FROM database_backups GROUP BY database_id \
         HAVING MAX(COALESCE(expires_at, $1 + 1)) <= $1 LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(db.pool())
    .await?;
    Ok(rows.into_iter().map(|(id,)| id).collect())
}

/// The rows of a live database older than its retention (ended before
/// `before`), the newest completed full backup and what follows it kept.
pub async fn outdated(db: &Db, database_id: &str, before: i64) -> Result<Vec<Backup>> {
    let Some(keep) = latest(db, database_id, "full").await? else {
        return Ok(Vec::new());
    };
    let sql = format!(
        "SELECT {COLUMNS} FROM database_backups WHERE database_id = $1 AND expires_at IS NULL \
         AND status IN ('completed', 'failed') AND COALESCE(ended_at, created_at) < $2 \
         AND id <> $3 AND COALESCE(ended_at, created_at) < $4 ORDER BY id"
    );
    Ok(sqlx::query_as(&sql)
        .bind(database_id)
        .bind(before)
        .bind(&keep.id)
        .bind(keep.ended_at.unwrap_or(0))
        .fetch_all(db.pool())
        .await?)
}

/// Removes ledger rows (their objects are the caller's).
pub async fn remove(db: &Db, ids: &[String]) -> Result<()> {
    for id in ids {
        sqlx::query("DELETE FROM database_backups WHERE id = $1")
            .bind(id)
            .execute(db.pool())
            .await?;
    }
    Ok(())
}

/// Removes the whole ledger of a database.
pub async fn remove_database(db: &Db, database_id: &str) -> Result<()> {
    sqlx::query("DELETE FROM database_backups WHERE database_id = $1")
        .bind(database_id)
        .execute(db.pool())
        .await?;
    Ok(())
}

/// Where a cluster made by a restore comes from.
#[derive(Clone, Debug, FromRow)]
pub struct Restore {
    pub database_id: String,
    pub org_id: String,
    pub source_id: String,
    pub backup_id: String,
    /// Milliseconds; none: the end of the archived WAL.
    pub target_time: Option<i64>,
    pub created_at: i64,
}

/// Records the source of a cluster being made (with its row).
pub async fn insert_restore(tx: &mut Tx, r: &Restore) -> Result<()> {
    sqlx::query(
        "INSERT INTO database_restores (database_id, org_id, source_id, backup_id, target_time, \
         created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&r.database_id)
    .bind(&r.org_id)
    .bind(&r.source_id)
    .bind(&r.backup_id)
    .bind(r.target_time)
    .bind(r.created_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// The source of cluster `database_id`, if a restore makes it.
pub async fn restore_of(db: &Db, database_id: &str) -> Result<Option<Restore>> {
    Ok(sqlx::query_as(
        "SELECT database_id, org_id, source_id, backup_id, target_time, created_at \
         FROM database_restores WHERE database_id = $1",
    )
    .bind(database_id)
    .fetch_optional(db.pool())
    .await?)
}
