//! Managed dump restore of PostgreSQL (issue 32): dumps uploaded through
//! a presigned URL (`database_dump_uploads`: the URL's token kept as its
//! SHA-256, the object in the backup store), and the restore jobs that
//! run one into a database (`database_dump_restores`), which the agent
//! takes like the backups it is asked for.

use sqlx::FromRow;

use crate::{Db, Result};

#[derive(Clone, Debug, FromRow)]
pub struct Upload {
    pub key: String,
    pub database_id: String,
    pub org_id: String,
    pub token_sha256: String,
    pub expires_at: i64,
    pub bytes: Option<i64>,
    pub stored_at: Option<i64>,
    pub created_at: i64,
}

#[derive(Clone, Debug, FromRow)]
pub struct Job {
    pub id: String,
    pub database_id: String,
    pub org_id: String,
    pub dump_key: String,
    /// JSON array of extension names.
    pub pre_seed: String,
    /// `pending`, `running`, `completed` or `failed`.
    pub status: String,
    /// The root cause of a failure.
    pub error: Option<String>,
    /// JSON object: rows per `schema.table`.
    pub table_counts: Option<String>,
    pub created_at: i64,
    pub started_at: Option<i64>,
    pub ended_at: Option<i64>,
}

const UPLOAD: &str =
    "key, database_id, org_id, token_sha256, expires_at, bytes, stored_at, created_at";
const JOB: &str = "id, database_id, org_id, dump_key, pre_seed, status, error, table_counts, \
    created_at, started_at, ended_at";

pub async fn insert_upload(db: &Db, u: &Upload) -> Result<()> {
    sqlx::query(
        "INSERT INTO database_dump_uploads (key, database_id, org_id, token_sha256, expires_at, \
         bytes, stored_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&u.key)
    .bind(&u.database_id)
    .bind(&u.org_id)
    .bind(&u.token_sha256)
    .bind(u.expires_at)
    .bind(u.bytes)
    .bind(u.stored_at)
    .bind(u.created_at)
    .execute(db.pool())
    .await?;
    Ok(())
}

pub async fn upload(db: &Db, database_id: &str, key: &str) -> Result<Option<Upload>> {
    let sql =
        format!("SELECT {UPLOAD} FROM database_dump_uploads WHERE key = $1 AND database_id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(key)
        .bind(database_id)
        .fetch_optional(db.pool())
        .await?)
}

/// Records that upload `key`'s object is whole.
pub async fn stored(db: &Db, key: &str, bytes: i64, now: i64) -> Result<()> {
    sqlx::query("UPDATE database_dump_uploads SET bytes = $2, stored_at = $3 WHERE key = $1")
        .bind(key)
        .bind(bytes)
        .bind(now)
        .execute(db.pool())
        .await?;
    Ok(())
}

pub async fn insert_job(db: &Db, j: &Job) -> Result<()> {
    sqlx::query(
        "INSERT INTO database_dump_restores (id, database_id, org_id, dump_key, pre_seed, status, \
         error, table_counts, created_at, started_at, ended_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
    )
    .bind(&j.id)
    .bind(&j.database_id)
    .bind(&j.org_id)
    .bind(&j.dump_key)
    .bind(&j.pre_seed)
    .bind(&j.status)
    .bind(&j.error)
    .bind(&j.table_counts)
    .bind(j.created_at)
    .bind(j.started_at)
    .bind(j.ended_at)
    .execute(db.pool())
    .await?;
    Ok(())
}

pub async fn job(db: &Db, database_id: &str, id: &str) -> Result<Option<Job>> {
    let sql =
        format!("SELECT {JOB} FROM database_dump_restores WHERE id = $1 AND database_id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(id)
        .bind(database_id)
        .fetch_optional(db.pool())
        .await?)
}

/// The jobs of database `database_id`, newest first.
pub async fn jobs(db: &Db, database_id: &str) -> Result<Vec<Job>> {
    let sql =
        format!("SELECT {JOB} FROM database_dump_restores WHERE database_id = $1 ORDER BY id DESC");
    Ok(sqlx::query_as(&sql)
        .bind(database_id)
        .fetch_all(db.pool())
        .await?)
}

/// Whether database `database_id` has a job not finished.
pub async fn in_flight(db: &Db, database_id: &str) -> Result<bool> {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT COUNT(*) FROM database_dump_restores WHERE database_id = $1 \
         AND status IN ('pending', 'running')",
    )
    .bind(database_id)
    .fetch_one(db.pool())
    .await?;
    Ok(n > 0)
}

/// The pending jobs of the running databases of host `host_id`.
pub async fn pending(db: &Db, host_id: &str) -> Result<Vec<Job>> {
    let sql = format!(
        "SELECT {} FROM database_dump_restores j JOIN databases d ON d.id = j.database_id \
         WHERE j.status = 'pending' AND d.host_id = $1 AND d.status IN ('running', 'degraded') \
         ORDER BY j.id",
        JOB.split(", ")
            .map(|c| format!("j.{}", c.trim()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(sqlx::query_as(&sql)
        .bind(host_id)
        .fetch_all(db.pool())
        .await?)
}

/// Takes a pending job (`running`); false if another took it.
pub async fn start(db: &Db, id: &str, now: i64) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE database_dump_restores SET status = 'running', started_at = $2 \
         WHERE id = $1 AND status = 'pending'",
    )
    .bind(id)
    .bind(now)
    .execute(db.pool())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// A job done: `completed` with its counts, or `failed` with its error.
pub async fn finish(
    db: &Db,
    id: &str,
    outcome: std::result::Result<&str, &str>,
    now: i64,
) -> Result<()> {
    let (status, counts, error) = match outcome {
        Ok(counts) => ("completed", Some(counts), None),
        Err(error) => ("failed", None, Some(error)),
    };
    sqlx::query(
        "UPDATE database_dump_restores SET status = $2, table_counts = $3, error = $4, \
         ended_at = $5 WHERE id = $1",
    )
    .bind(id)
    .bind(status)
    .bind(counts)
    .bind(error)
    .bind(now)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// Fails the jobs a stopped agent of `host_id` left `running` (their
/// transaction died with its connection: nothing of them stayed).
pub async fn fail_interrupted(db: &Db, host_id: &str, now: i64) -> Result<u64> {
    let done = sqlx::query(
        "UPDATE database_dump_restores SET status = 'failed', \
         error = 'interrupted: the agent stopped; nothing was restored, ask again', \
         ended_at = $2 WHERE status = 'running' AND database_id IN \
         (SELECT id FROM databases WHERE host_id = $1)",
    )
    .bind(host_id)
    .bind(now)
    .execute(db.pool())
    .await?;
    Ok(done.rows_affected())
}
