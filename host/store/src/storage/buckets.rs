//! Buckets: an organisation's named containers of objects.

use sqlx::FromRow;

use crate::query::{Bind, Conditions, Keyset, Listed, Order};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Bucket {
    pub id: String,
    pub org_id: String,
    pub project_id: Option<String>,
    /// The name the organisation chose.
    pub name: String,
    /// The S3 name clients use.
    pub bucket: String,
    pub bytes: i64,
    pub objects: i64,
    pub created_at: i64,
}

const COLUMNS: &str = "id, org_id, project_id, name, bucket, bytes, objects, created_at";

/// Inserts a bucket (and the organisation's usage row on its first).
pub async fn insert(tx: &mut Tx, b: &Bucket) -> Result<()> {
    sqlx::query(
        "INSERT INTO storage_usage (org_id, bytes, objects) VALUES ($1, 0, 0) \
         ON CONFLICT (org_id) DO NOTHING",
    )
    .bind(&b.org_id)
    .execute(tx.conn())
    .await?;
    sqlx::query(
        "INSERT INTO storage_buckets (id, org_id, project_id, name, bucket, bytes, objects, created_at) \
         VALUES ($1, $2, $3, $4, $5, 0, 0, $6)",
    )
    .bind(&b.id)
    .bind(&b.org_id)
    .bind(&b.project_id)
    .bind(&b.name)
    .bind(&b.bucket)
    .bind(b.created_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Buckets of an organisation, oldest first; `project_id` narrows.
pub async fn list(
    db: &Db,
    org_id: &str,
    project_id: Option<&str>,
    keyset: &Keyset,
) -> Result<Listed<Bucket>> {
    let mut conds = Conditions::new();
    conds.push("org_id = ?", Bind::Text(org_id.to_owned()));
    if let Some(p) = project_id {
        conds.push("project_id = ?", Bind::Text(p.to_owned()));
    }
    crate::query::list(
        db.pool(),
        COLUMNS,
        "storage_buckets",
        conds,
        keyset,
        "id",
        Order::Asc,
    )
    .await
}

/// Every bucket of an organisation, by S3 name (ListBuckets).
pub async fn all(db: &Db, org_id: &str) -> Result<Vec<Bucket>> {
    let sql = format!("SELECT {COLUMNS} FROM storage_buckets WHERE org_id = $1 ORDER BY bucket");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .fetch_all(db.pool())
        .await?)
}

pub async fn get(db: &Db, org_id: &str, id: &str) -> Result<Option<Bucket>> {
    let sql = format!("SELECT {COLUMNS} FROM storage_buckets WHERE org_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(org_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// A bucket by its S3 name, whatever its organisation (the caller checks).
pub async fn by_name(db: &Db, bucket: &str) -> Result<Option<Bucket>> {
    let sql = format!("SELECT {COLUMNS} FROM storage_buckets WHERE bucket = $1");
    Ok(sqlx::query_as(&sql)
        .bind(bucket)
        .fetch_optional(db.pool())
        .await?)
}

/// Whether the bucket holds objects, versions (delete markers too) or
/// unfinished uploads.
pub async fn is_empty(tx: &mut Tx, id: &str) -> Result<bool> {
    let (n,): (i64,) = sqlx::query_as(
        "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM storage_objects WHERE bucket_id = $1 LIMIT 1) o) \
         + (SELECT COUNT(*) FROM (SELECT 1 FROM storage_versions WHERE bucket_id = $1 LIMIT 1) v) \
         + (SELECT COUNT(*) FROM (SELECT 1 FROM storage_uploads WHERE bucket_id = $1 LIMIT 1) u)",
    )
    .bind(id)
    .fetch_one(tx.conn())
    .await?;
    Ok(n == 0)
}

/// Deletes an empty bucket; false when it does not exist or is not empty.
pub async fn delete(tx: &mut Tx, org_id: &str, id: &str) -> Result<bool> {
    super::lock_usage(tx, org_id).await?;
    if !is_empty(tx, id).await? {
        return Ok(false);
    }
    let done = sqlx::query("DELETE FROM storage_buckets WHERE org_id = $1 AND id = $2")
        .bind(org_id)
        .bind(id)
        .execute(tx.conn())
        .await?;
    if done.rows_affected() == 1 {
        super::settings::delete_all(tx, id).await?;
    }
    Ok(done.rows_affected() == 1)
}
