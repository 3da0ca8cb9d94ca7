//! What the registry reads of the core's accounts: whether a token still
//! stands, and an organisation's plan storage limit and usage.

use crate::{Db, Result};

/// What authorization needs to know of a token again when a registry
/// bearer built on it comes back: revoked, expired. None when the token or
/// its owner's membership is gone.
pub async fn token_state(db: &Db, token_id: &str) -> Result<Option<(Option<i64>, Option<i64>)>> {
    Ok(sqlx::query_as(
        "SELECT t.revoked_at, t.expires_at FROM tokens t \
         JOIN memberships m ON m.org_id = t.org_id AND m.user_id = t.user_id WHERE t.id = $1",
    )
    .bind(token_id)
    .fetch_optional(db.pool())
    .await?)
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
