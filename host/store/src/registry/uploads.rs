//! Upload sessions: where each stands (bytes received) and the object keys
//! of its parts, in order. A part is recorded only once fully written, so
//! a partial upload is never visible.

use crate::{Db, Result, Tx};

#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Upload {
    pub id: String,
    pub org_id: String,
    pub repository: String,
    pub algorithm: String,
    pub size: i64,
    /// JSON array of object keys.
    pub parts: String,
    pub created_at: i64,
    pub updated_at: i64,
}

impl Upload {
    pub fn part_keys(&self) -> Vec<String> {
        serde_json::from_str(&self.parts).unwrap_or_default()
    }
}

const COLUMNS: &str = "id, org_id, repository, algorithm, size, parts, created_at, updated_at";

pub async fn insert(tx: &mut Tx, upload: &Upload) -> Result<()> {
    sqlx::query(
        "INSERT INTO registry_uploads (id, org_id, repository, algorithm, size, parts, created_at, \
         updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&upload.id)
    .bind(&upload.org_id)
    .bind(&upload.repository)
    .bind(&upload.algorithm)
    .bind(upload.size)
    .bind(&upload.parts)
    .bind(upload.created_at)
    .bind(upload.updated_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// The upload `id` of repository `name`.
pub async fn get(db: &Db, name: &str, id: &str) -> Result<Option<Upload>> {
    let sql = format!("SELECT {COLUMNS} FROM registry_uploads WHERE id = $1 AND repository = $2");
    Ok(sqlx::query_as(&sql)
        .bind(id)
        .bind(name)
        .fetch_optional(db.pool())
        .await?)
}

pub async fn count_for_org(db: &Db, org_id: &str) -> Result<i64> {
    let (n,): (i64,) = sqlx::query_as("SELECT COUNT(*) FROM registry_uploads WHERE org_id = $1")
        .bind(org_id)
        .fetch_one(db.pool())
        .await?;
    Ok(n)
}

/// Appends a part if the upload still stands at `expected_size`; false
/// when another request moved it meanwhile (or it was cancelled).
pub async fn append_part(
    db: &Db,
    upload: &Upload,
    expected_size: i64,
    key: &str,
    len: i64,
    now: i64,
) -> Result<bool> {
    let mut parts = upload.part_keys();
    parts.push(key.to_owned());
    let mut tx = db.begin().await?;
    let done = sqlx::query(
        "UPDATE registry_uploads SET size = size + $3, parts = $4, updated_at = $5 \
         WHERE id = $1 AND size = $2",
    )
    .bind(&upload.id)
    .bind(expected_size)
    .bind(len)
    .bind(serde_json::to_string(&parts).unwrap_or_default())
    .bind(now)
    .execute(tx.conn())
    .await?;
    tx.commit().await?;
    Ok(done.rows_affected() == 1)
}

pub async fn delete(tx: &mut Tx, id: &str) -> Result<bool> {
    let done = sqlx::query("DELETE FROM registry_uploads WHERE id = $1")
        .bind(id)
        .execute(tx.conn())
        .await?;
    Ok(done.rows_affected() == 1)
}

/// Uploads untouched since `before`.
pub async fn stale(db: &Db, before: i64) -> Result<Vec<Upload>> {
    let sql = format!("SELECT {COLUMNS} FROM registry_uploads WHERE updated_at < $1");
    Ok(sqlx::query_as(&sql)
        .bind(before)
        .fetch_all(db.pool())
        .await?)
}

/// Whether an upload id is still in the database (GC keeps its parts).
pub async fn exists(db: &Db, id: &str) -> Result<bool> {
    let row: Option<(String,)> = sqlx::query_as("SELECT id FROM registry_uploads WHERE id = $1")
        .bind(id)
        .fetch_optional(db.pool())
        .await?;
    Ok(row.is_some())
}
