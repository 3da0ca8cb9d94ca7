//! The registry's metadata in Plateau's database: repositories, blobs per
//! organisation, the blobs each repository may serve, uploads, manifests,
//! tags and referrers (tables `registry_*`, migration 0003).

pub mod manifests;
pub mod uploads;

use plateau_store::{Db, Tx};

use crate::error::Result;

/// A stored blob of an organisation.
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Blob {
    pub digest: String,
    pub size: i64,
    pub object_key: String,
}

/// Records a repository on first use.
pub async fn ensure_repository(tx: &mut Tx, org_id: &str, name: &str, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO registry_repositories (org_id, name, created_at) VALUES ($1, $2, $3) \
         ON CONFLICT (org_id, name) DO NOTHING",
    )
    .bind(org_id)
    .bind(name)
    .bind(now)
    .execute(tx.conn())
    .await?;
    Ok(())
}

pub async fn repository_exists(db: &Db, org_id: &str, name: &str) -> Result<bool> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT name FROM registry_repositories WHERE org_id = $1 AND name = $2")
            .bind(org_id)
            .bind(name)
            .fetch_optional(db.pool())
            .await?;
    Ok(row.is_some())
}

/// Repositories of an organisation in byte order, after `last`.
pub async fn list_repositories(
    db: &Db,
    org_id: &str,
    last: Option<&str>,
    limit: i64,
) -> Result<Vec<String>> {
    let rows: Vec<(String,)> = sqlx::query_as(
        "SELECT name FROM registry_repositories WHERE org_id = $1 AND name > $2 \
         ORDER BY name LIMIT $3",
    )
    .bind(org_id)
    .bind(last.unwrap_or(""))
    .bind(limit)
    .fetch_all(db.pool())
    .await?;
    Ok(rows.into_iter().map(|(n,)| n).collect())
}

/// A blob the repository may serve.
pub async fn repository_blob(db: &Db, name: &str, digest: &str) -> Result<Option<Blob>> {
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

/// Records a blob (or, if the organisation has it already, touches it so
/// GC's grace period starts again) and returns the object key in force.
pub async fn upsert_blob(
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
/// so a concurrent GC cannot delete it); None when the organisation does
/// not have it.
pub async fn touch_blob(tx: &mut Tx, org_id: &str, digest: &str, now: i64) -> Result<Option<i64>> {
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

/// Lets a repository serve a blob of its organisation.
pub async fn link_blob(
    tx: &mut Tx,
    org_id: &str,
    name: &str,
    digest: &str,
    now: i64,
) -> Result<()> {
    ensure_repository(tx, org_id, name, now).await?;
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
pub async fn unlink_blob(tx: &mut Tx, name: &str, digest: &str) -> Result<bool> {
    let done =
        sqlx::query("DELETE FROM registry_repository_blobs WHERE repository = $1 AND digest = $2")
            .bind(name)
            .bind(digest)
            .execute(tx.conn())
            .await?;
    Ok(done.rows_affected() > 0)
}

/// Bytes an organisation stores: its blobs and its manifests.
pub async fn usage_bytes(db: &Db, org_id: &str) -> Result<i64> {
    let (blobs,): (i64,) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM registry_blobs WHERE org_id = $1",
    )
    .bind(org_id)
    .fetch_one(db.pool())
    .await?;
    let (manifests,): (i64,) = sqlx::query_as(
        "SELECT CAST(COALESCE(SUM(size), 0) AS BIGINT) FROM registry_manifests WHERE org_id = $1",
    )
    .bind(org_id)
    .fetch_one(db.pool())
    .await?;
    Ok(blobs + manifests)
}

/// The organisation's plan and its storage limit in GB.
pub async fn storage_limit(db: &Db, org_id: &str) -> Result<(String, i64)> {
    Ok(sqlx::query_as(
        "SELECT p.name, p.storage_gb FROM organizations o JOIN plans p ON p.name = o.plan \
         WHERE o.id = $1",
    )
    .bind(org_id)
    .fetch_one(db.pool())
    .await?)
}

/// What authorization needs to know of a token again when a registry
/// bearer built on it comes back: revoked, expired.
pub async fn token_state(db: &Db, token_id: &str) -> Result<Option<(Option<i64>, Option<i64>)>> {
    Ok(sqlx::query_as(
        "SELECT t.revoked_at, t.expires_at FROM tokens t \
         JOIN memberships m ON m.org_id = t.org_id AND m.user_id = t.user_id WHERE t.id = $1",
    )
    .bind(token_id)
    .fetch_optional(db.pool())
    .await?)
}

/// An organisation's blob, whichever repository has it.
pub async fn org_blob(db: &Db, org_id: &str, digest: &str) -> Result<Option<Blob>> {
    Ok(sqlx::query_as(
        "SELECT digest, size, object_key FROM registry_blobs WHERE org_id = $1 AND digest = $2",
    )
    .bind(org_id)
    .bind(digest)
    .fetch_optional(db.pool())
    .await?)
}
