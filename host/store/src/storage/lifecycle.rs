//! Lifecycle runs: the buckets that have lifecycle rules, and a lease per
//! bucket so that one host at a time applies them, at most once per
//! interval. A host that dies mid-run leaves its lease to expire; the next
//! run does what it left, since the rules are applied to the bucket's
//! state, not to a queue.

use super::buckets::Bucket;
use crate::{Db, Result};

/// The kind of the bucket setting that holds the rules.
pub const SETTING: &str = "lifecycle";

/// Every bucket with lifecycle rules.
pub async fn buckets(db: &Db) -> Result<Vec<Bucket>> {
    Ok(sqlx::query_as(
        "SELECT b.id, b.org_id, b.project_id, b.name, b.bucket, b.bytes, b.objects, b.created_at \
         FROM storage_buckets b JOIN storage_bucket_settings s ON s.bucket_id = b.id \
         AND s.kind = $1 ORDER BY b.id",
    )
    .bind(SETTING)
    .fetch_all(db.pool())
    .await?)
}

/// Leases the bucket's run to `owner` until `until` when no other host
/// holds it and it last ran at or before `ran_before`; false otherwise.
pub async fn lease(
    db: &Db,
    bucket_id: &str,
    owner: &str,
    now: i64,
    until: i64,
    ran_before: i64,
) -> Result<bool> {
    let done = sqlx::query(
        "INSERT INTO storage_lifecycle_runs (bucket_id, lease_owner, lease_until, ran_at) \
         VALUES ($1, $2, $3, 0) ON CONFLICT (bucket_id) DO UPDATE SET \
         lease_owner = excluded.lease_owner, lease_until = excluded.lease_until \
         WHERE (storage_lifecycle_runs.lease_until <= $4 OR storage_lifecycle_runs.lease_owner = $2) \
         AND storage_lifecycle_runs.ran_at <= $5",
    )
    .bind(bucket_id)
    .bind(owner)
    .bind(until)
    .bind(now)
    .bind(ran_before)
    .execute(db.pool())
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Ends `owner`'s run of the bucket at `now`.
pub async fn finish(db: &Db, bucket_id: &str, owner: &str, now: i64) -> Result<()> {
    sqlx::query(
        "UPDATE storage_lifecycle_runs SET lease_until = 0, ran_at = $3 \
         WHERE bucket_id = $1 AND lease_owner = $2",
    )
    .bind(bucket_id)
    .bind(owner)
    .bind(now)
    .execute(db.pool())
    .await?;
    Ok(())
}
