//! Reading versions: one by id, and listings of versions in key order,
//! newest first within a key.

use sqlx::FromRow;

use super::{COLUMNS, Version};
use crate::storage::objects;
use crate::{Db, Result};

/// One version of a key, current or not (a delete marker too).
pub async fn get(db: &Db, bucket_id: &str, key: &str, version_id: &str) -> Result<Option<Version>> {
    if let Some(o) = objects::get(db, bucket_id, key).await?
        && o.version_id == version_id
    {
        return Ok(Some(Version::current(o)));
    }
    let sql = format!(
        "SELECT {COLUMNS} FROM storage_versions WHERE bucket_id = $1 AND key = $2 AND version_id = $3"
    );
    Ok(sqlx::query_as(&sql)
        .bind(bucket_id)
        .bind(key)
        .bind(version_id)
        .fetch_optional(db.pool())
        .await?)
}

/// A version in a listing, and whether it is its key's newest.
#[derive(Clone, Debug, FromRow)]
pub struct Listed {
    pub key: String,
    pub version_id: String,
    pub seq: i64,
    pub delete_marker: i64,
    pub size: i64,
    pub etag: String,
    pub headers: String,
    pub modified_at: i64,
    pub latest: i64,
}

/// Up to `limit` versions of keys at least `from`, in key order and
/// newest first, after `after` (a key and a `seq`: the versions of that
/// key older than it, then later keys; `i64::MIN` skips the whole key).
pub async fn list(
    db: &Db,
    bucket_id: &str,
    from: &str,
    after: (&str, i64),
    limit: i64,
) -> Result<Vec<Listed>> {
    let sql = "SELECT key, version_id, seq, delete_marker, size, etag, headers, modified_at, latest \
         FROM (SELECT key, version_id, CAST(9223372036854775807 AS BIGINT) AS seq, \
         CAST(0 AS BIGINT) AS delete_marker, size, etag, headers, modified_at, \
         CAST(1 AS BIGINT) AS latest FROM storage_objects \
         WHERE bucket_id = $1 AND key >= $2 AND key > $3 \
         UNION ALL SELECT v.key, v.version_id, v.seq, v.delete_marker, v.size, v.etag, v.headers, \
         v.modified_at, CAST(CASE WHEN NOT EXISTS (SELECT 1 FROM storage_objects o \
         WHERE o.bucket_id = v.bucket_id AND o.key = v.key) AND v.seq = (SELECT MAX(w.seq) \
         FROM storage_versions w WHERE w.bucket_id = v.bucket_id AND w.key = v.key) \
         THEN 1 ELSE 0 END AS BIGINT) AS latest FROM storage_versions v \
         WHERE v.bucket_id = $1 AND v.key >= $2 AND (v.key > $3 OR (v.key = $3 AND v.seq < $4))) \
         AS all_versions ORDER BY key, seq DESC LIMIT $5";
    Ok(sqlx::query_as(sql)
        .bind(bucket_id)
        .bind(from)
        .bind(after.0)
        .bind(after.1)
        .bind(limit)
        .fetch_all(db.pool())
        .await?)
}
