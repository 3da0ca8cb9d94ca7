//! Blobs: stored once per organisation (`registry_blobs`, with the object
//! key of their content), served by the repositories linked to them
//! (`registry_repository_blobs`), and what garbage collection asks of them.

use crate::registry::repositories;
use crate::{Db, Result, Tx};

/// A stored blob of an organisation.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Blob {
    pub digest: String,
    pub size: i64,
    pub object_key: String,
}

/// A blob the repository may serve.
pub async fn in_repository(db: &Db, name: &str, digest: &str) -> Result<Option<Blob>> {
    Ok(sqlx::query_as(
        "SELECT b.digest, b.size, b.object_key FROM registry_repository_blobs l \
         JOIN registry_blobs b ON b.org_id = l.org_id AND b.digest = l.digest \
         WHERE l.repository = $1 AND l.digest = $2",
    )
    .bind(name)
    .bind(digest)
    .fetch_optional(db.pool())
    .await?)
}

/// An organisation's blob, whichever repository has it.
pub async fn of_org(db: &Db, org_id: &str, digest: &str) -> Result<Option<Blob>> {
    Ok(sqlx::query_as(
        "SELECT digest, size, object_key FROM registry_blobs WHERE org_id = $1 AND digest = $2",
    )
    .bind(org_id)
    .bind(digest)
    .fetch_optional(db.pool())
    .await?)
}

/// Records a blob (or, if the organisation has it already, touches it so
/// GC's grace period starts again) and returns the object key in force.
pub async fn upsert(
    tx: &mut Tx,
    org_id: &str,
    digest: &str,
    size: i64,
    object_key: &str,
    now: i64,
) -> Result<String> {
    let (key,): (String,) = sqlx::query_as(
        "INSERT INTO registry_blobs (org_id, digest, size, object_key, created_at, touched_at) \
         VALUES ($1, $2, $3, $4, $5, $5) \
         ON CONFLICT (org_id, digest) DO UPDATE SET touched_at = excluded.touched_at \
         RETURNING object_key",
    )
    .bind(org_id)
    .bind(digest)
    .bind(size)
    .bind(object_key)
    .bind(now)
    .fetch_one(tx.conn())
    .await?;
    Ok(key)
}

/// Touches an organisation's blob inside a transaction (locking its row,
/// so a concurrent GC cannot delete it); its size, or None when the
/// organisation does not have it.
pub async fn touch(tx: &mut Tx, org_id: &str, digest: &str, now: i64) -> Result<Option<i64>> {
    let row: Option<(i64,)> = sqlx::query_as(
        "UPDATE registry_blobs SET touched_at = $3 WHERE org_id = $1 AND digest = $2 RETURNING size",
    )
    .bind(org_id)
    .bind(digest)
    .bind(now)
    .fetch_optional(tx.conn())
    .await?;
    Ok(row.map(|(s,)| s))
}

/// Lets a repository serve a blob of its organisation (recording the
/// repository on first use).
pub async fn link(tx: &mut Tx, org_id: &str, name: &str, digest: &str, now: i64) -> Result<()> {
    repositories::ensure(tx, org_id, name, now).await?;
    sqlx::query(
        "INSERT INTO registry_repository_blobs (repository, digest, org_id, created_at) \
         VALUES ($1, $2, $3, $4) ON CONFLICT (repository, digest) DO NOTHING",
    )
    .bind(name)
    .bind(digest)
    .bind(org_id)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(())
}

/// Stops a repository serving a blob; false if it did not.
pub async fn unlink(tx: &mut Tx, name: &str, digest: &str) -> Result<bool> {
    let done =
        sqlx::query("DELETE FROM registry_repository_blobs WHERE repository = $1 AND digest = $2")
            .bind(name)
            .bind(digest)
            .execute(tx.conn())
            .await?;
    Ok(done.rows_affected() > 0)
}

/// A blob no manifest references, as garbage collection finds it.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Unreferenced {
    pub org_id: String,
    pub digest: String,
    pub size: i64,
    pub object_key: String,
}

const UNREFERENCED: &str = "NOT EXISTS (SELECT 1 FROM registry_manifest_references r \
                            WHERE r.org_id = registry_blobs.org_id AND r.digest = registry_blobs.digest)";

/// Blobs untouched since `cutoff` that no manifest references.
pub async fn unreferenced(db: &Db, cutoff: i64) -> Result<Vec<Unreferenced>> {
    Ok(sqlx::query_as(&format!(
        "SELECT org_id, digest, size, object_key FROM registry_blobs \
         WHERE touched_at < $1 AND {UNREFERENCED}"
    ))
    .bind(cutoff)
    .fetch_all(db.pool())
    .await?)
}

/// Deletes an organisation's blob, and every repository's link to it, if
/// it is still untouched since `cutoff` and unreferenced at this moment;
/// false when a push took it meanwhile.
pub async fn delete_unreferenced(
    tx: &mut Tx,
    org_id: &str,
    digest: &str,
    cutoff: i64,
) -> Result<bool> {
    let deleted = sqlx::query(&format!(
        "DELETE FROM registry_blobs WHERE org_id = $1 AND digest = $2 AND touched_at < $3 \
         AND {UNREFERENCED}"
    ))
    .bind(org_id)
    .bind(digest)
    .bind(cutoff)
    .execute(tx.conn())
    .await?
    .rows_affected()
        > 0;
    if deleted {
        sqlx::query("DELETE FROM registry_repository_blobs WHERE org_id = $1 AND digest = $2")
            .bind(org_id)
            .bind(digest)
            .execute(tx.conn())
            .await?;
    }
    Ok(deleted)
}

/// Whether a blob row names this object key (GC keeps the object).
pub async fn key_in_use(db: &Db, object_key: &str) -> Result<bool> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT digest FROM registry_blobs WHERE object_key = $1")
            .bind(object_key)
            .fetch_optional(db.pool())
            .await?;
    Ok(row.is_some())
}
