//! A bucket's S3 configurations (CORS, tags, canned ACL), one JSON body
//! per kind; the storage crate owns their shape.

use crate::{Db, Result, Tx};

/// The bucket's configuration of `kind`, if one is set.
pub async fn get(db: &Db, bucket_id: &str, kind: &str) -> Result<Option<String>> {
    let row: Option<(String,)> = sqlx::query_as(
        "SELECT body FROM storage_bucket_settings WHERE bucket_id = $1 AND kind = $2",
    )
    .bind(bucket_id)
    .bind(kind)
    .fetch_optional(db.pool())
    .await?;
    Ok(row.map(|(body,)| body))
}

/// Every configuration of the bucket, as (kind, body).
pub async fn all(db: &Db, bucket_id: &str) -> Result<Vec<(String, String)>> {
    Ok(
        sqlx::query_as("SELECT kind, body FROM storage_bucket_settings WHERE bucket_id = $1")
            .bind(bucket_id)
            .fetch_all(db.pool())
            .await?,
    )
}

/// Sets (or replaces) the bucket's configuration of `kind`.
pub async fn put(db: &Db, bucket_id: &str, kind: &str, body: &str, now: i64) -> Result<()> {
    sqlx::query(
        "INSERT INTO storage_bucket_settings (bucket_id, kind, body, updated_at) \
         VALUES ($1, $2, $3, $4) \
         ON CONFLICT (bucket_id, kind) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
    )
    .bind(bucket_id)
    .bind(kind)
    .bind(body)
    .bind(now)
    .execute(db.pool())
    .await?;
    Ok(())
}

/// Removes the bucket's configuration of `kind`; false when there was none.
pub async fn delete(db: &Db, bucket_id: &str, kind: &str) -> Result<bool> {
    let done =
        sqlx::query("DELETE FROM storage_bucket_settings WHERE bucket_id = $1 AND kind = $2")
            .bind(bucket_id)
            .bind(kind)
            .execute(db.pool())
            .await?;
    Ok(done.rows_affected() > 0)
}

/// Removes every configuration of a bucket being deleted.
pub(super) async fn delete_all(tx: &mut Tx, bucket_id: &str) -> Result<()> {
    sqlx::query("DELETE FROM storage_bucket_settings WHERE bucket_id = $1")
        .bind(bucket_id)
        .execute(tx.conn())
        .await?;
    Ok(())
}
