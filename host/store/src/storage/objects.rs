//! Objects: one row per key, written only once its bytes are complete.

use sqlx::FromRow;

use super::{WriteError, add_bucket_usage, add_usage, lock_usage};
use crate::db::Deferred;
use crate::events::{self, NewEvent};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Object {
    pub bucket_id: String,
    pub key: String,
    pub size: i64,
    pub etag: String,
    /// JSON `[[object store key, size], ...]`.
    pub blobs: String,
    /// JSON: content headers, user metadata, checksums.
    pub headers: String,
    pub modified_at: i64,
}

const COLUMNS: &str = "bucket_id, key, size, etag, blobs, headers, modified_at";

pub async fn get(db: &Db, bucket_id: &str, key: &str) -> Result<Option<Object>> {
    let sql = format!("SELECT {COLUMNS} FROM storage_objects WHERE bucket_id = $1 AND key = $2");
    Ok(sqlx::query_as(&sql)
        .bind(bucket_id)
        .bind(key)
        .fetch_optional(db.pool())
        .await?)
}

async fn get_in(tx: &mut Tx, bucket_id: &str, key: &str) -> Result<Option<Object>> {
    let sql = format!("SELECT {COLUMNS} FROM storage_objects WHERE bucket_id = $1 AND key = $2");
    Ok(sqlx::query_as(&sql)
        .bind(bucket_id)
        .bind(key)
        .fetch_optional(tx.conn())
        .await?)
}

/// Up to `limit` objects whose keys are above `after` and at least
/// `from`, in byte order. The caller stops at the first key outside its
/// prefix.
pub async fn scan(
    db: &Db,
    bucket_id: &str,
    after: &str,
    from: &str,
    limit: i64,
) -> Result<Vec<Object>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM storage_objects WHERE bucket_id = $1 AND key > $2 AND key >= $3 \
         ORDER BY key LIMIT $4"
    );
    Ok(sqlx::query_as(&sql)
        .bind(bucket_id)
        .bind(after)
        .bind(from)
        .bind(limit)
        .fetch_all(db.pool())
        .await?)
}

/// Records `object` (replacing any object of its key) and its event,
/// within the organisation's limit of `limit` bytes. Returns the replaced
/// object, whose blobs the caller deletes after the commit.
pub async fn put(
    tx: &mut Tx,
    org_id: &str,
    object: &Object,
    limit: i64,
    event: &NewEvent,
) -> Result<Option<Object>, WriteError> {
    lock_usage(tx, org_id).await?;
    let old = get_in(tx, &object.bucket_id, &object.key).await?;
    let (old_size, old_count) = old.as_ref().map_or((0, 0), |o| (o.size, 1));
    add_usage(tx, org_id, object.size - old_size, 1 - old_count, limit).await?;
    add_bucket_usage(tx, &object.bucket_id, object.size - old_size, 1 - old_count).await?;
    upsert(tx, object).await?;
    events::record(tx, event, object.modified_at).await?;
    Ok(old)
}

/// Writes the row; on SQLite it goes with the transaction's next statement.
pub(super) async fn upsert(tx: &mut Tx, object: &Object) -> Result<()> {
    let write = Deferred::new(
        "INSERT INTO storage_objects (bucket_id, key, size, etag, blobs, headers, modified_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (bucket_id, key) DO UPDATE SET \
         size = excluded.size, etag = excluded.etag, blobs = excluded.blobs, \
         headers = excluded.headers, modified_at = excluded.modified_at",
    )
    .bind(object.bucket_id.as_str())
    .bind(object.key.as_str())
    .bind(object.size)
    .bind(object.etag.as_str())
    .bind(object.blobs.as_str())
    .bind(object.headers.as_str())
    .bind(object.modified_at);
    tx.defer(write).await
}

/// Removes an object and records its event; returns it (for its blobs),
/// or None when there was none.
pub async fn delete(
    tx: &mut Tx,
    org_id: &str,
    bucket_id: &str,
    key: &str,
    event: &NewEvent,
    now: i64,
) -> Result<Option<Object>, WriteError> {
    lock_usage(tx, org_id).await?;
    let Some(old) = get_in(tx, bucket_id, key).await? else {
        return Ok(None);
    };
    sqlx::query("DELETE FROM storage_objects WHERE bucket_id = $1 AND key = $2")
        .bind(bucket_id)
        .bind(key)
        .execute(tx.conn())
        .await?;
    add_usage(tx, org_id, -old.size, -1, 0).await?;
    add_bucket_usage(tx, bucket_id, -old.size, -1).await?;
    events::record(tx, event, now).await?;
    Ok(Some(old))
}
