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

/// Replaces the headers (tags, ACL) of the object `key` as it was when
/// read (`etag`, `modified_at`); false when it changed or went away
/// meanwhile, so a concurrent overwrite is never given stale headers.
pub async fn set_headers(
    db: &Db,
    bucket_id: &str,
    key: &str,
    seen: (&str, i64),
    headers: &str,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE storage_objects SET headers = $5 \
         WHERE bucket_id = $1 AND key = $2 AND etag = $3 AND modified_at = $4",
    )
    .bind(bucket_id)
    .bind(key)
    .bind(seen.0)
    .bind(seen.1)
    .bind(headers)
    .execute(db.pool())
    .await?;
    Ok(done.rows_affected() == 1)
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

/// One object write of a [`put_group`].
#[derive(Clone, Debug)]
pub struct Put {
    pub org_id: String,
    pub object: Object,
    /// The organisation's limit in bytes.
    pub limit: i64,
    pub event: NewEvent,
}

/// Records many objects in one SQLite transaction, in order, as [`put`]
/// would one by one: each is refused alone (quota, bucket gone) without
/// failing the others, and returns the object it replaced. Three round
/// trips whatever the group's size: the replaced rows, the usage and
/// buckets, then every write with the commit, which the caller sends.
/// SQLite only: its one writer holds everything read here until the commit.
pub async fn put_group(
    tx: &mut Tx,
    puts: &[Put],
) -> Result<Vec<std::result::Result<Option<Object>, WriteError>>> {
    use std::collections::HashMap;
    let mut sql =
        format!("SELECT {COLUMNS} FROM storage_objects WHERE (bucket_id, key) IN (VALUES ");
    let mut binds = Vec::new();
    for (i, p) in puts.iter().enumerate() {
        if i > 0 {
            sql.push_str(", ");
        }
        sql.push_str(&format!("(${}, ${})", 2 * i + 1, 2 * i + 2));
        binds.push(p.object.bucket_id.as_str());
        binds.push(p.object.key.as_str());
    }
    sql.push(')');
    let mut query = sqlx::query_as::<_, Object>(&sql);
    for b in &binds {
        query = query.bind(*b);
    }
    let mut current: HashMap<(String, String), Object> = query
        .fetch_all(tx.conn())
        .await?
        .into_iter()
        .map(|o| ((o.bucket_id.clone(), o.key.clone()), o))
        .collect();
    let (usage, buckets) = usage_and_buckets(tx, puts).await?;
    let mut usage: HashMap<String, (i64, i64, i64)> = usage
        .into_iter()
        .map(|(org, bytes)| (org, (bytes, 0, 0)))
        .collect();
    let mut buckets: HashMap<String, (i64, i64)> =
        buckets.into_iter().map(|b| (b, (0, 0))).collect();
    let mut outcomes = Vec::with_capacity(puts.len());
    for p in puts {
        let o = &p.object;
        let id = (o.bucket_id.clone(), o.key.clone());
        let (old_size, old_count) = current.get(&id).map_or((0, 0), |old| (old.size, 1));
        let (bytes, objects) = (o.size - old_size, 1 - old_count);
        let (Some(org), Some(bucket)) = (usage.get_mut(&p.org_id), buckets.get_mut(&o.bucket_id))
        else {
            outcomes.push(Err(WriteError::Gone));
            continue;
        };
        if bytes > 0 && org.0 + bytes > p.limit {
            outcomes.push(Err(WriteError::Quota));
            continue;
        }
        *org = (org.0 + bytes, org.1 + bytes, org.2 + objects);
        *bucket = (bucket.0 + bytes, bucket.1 + objects);
        upsert(tx, o).await?;
        events::record(tx, &p.event, o.modified_at).await?;
        outcomes.push(Ok(current.insert(id, o.clone())));
    }
    const USAGE: &str = "UPDATE storage_usage SET bytes = bytes + $2, objects = objects + $3 \
                         WHERE org_id = $1";
    const BUCKET: &str = "UPDATE storage_buckets SET bytes = bytes + $2, objects = objects + $3 \
                          WHERE id = $1";
    let counters = usage
        .into_iter()
        .map(|(org, (_, bytes, objects))| (USAGE, org, bytes, objects))
        .chain(
            buckets
                .into_iter()
                .map(|(id, (bytes, objects))| (BUCKET, id, bytes, objects)),
        );
    for (sql, id, bytes, objects) in counters {
        tx.defer(Deferred::new(sql).bind(id).bind(bytes).bind(objects))
            .await?;
    }
    Ok(outcomes)
}

/// The bytes stored by the organisations of `puts`, and which of their
/// buckets still exist.
async fn usage_and_buckets(tx: &mut Tx, puts: &[Put]) -> Result<(Vec<(String, i64)>, Vec<String>)> {
    let mut orgs: Vec<&str> = puts.iter().map(|p| p.org_id.as_str()).collect();
    let mut ids: Vec<&str> = puts.iter().map(|p| p.object.bucket_id.as_str()).collect();
    orgs.sort_unstable();
    orgs.dedup();
    ids.sort_unstable();
    ids.dedup();
    let list = |from: usize, n: usize| {
        (from + 1..=from + n)
            .map(|i| format!("${i}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let sql = format!(
        "SELECT 'usage', org_id, bytes FROM storage_usage WHERE org_id IN ({}) \
         UNION ALL SELECT 'bucket', id, 0 FROM storage_buckets WHERE id IN ({})",
        list(0, orgs.len()),
        list(orgs.len(), ids.len())
    );
    let mut query = sqlx::query_as::<_, (String, String, i64)>(&sql);
    for v in orgs.iter().chain(&ids) {
        query = query.bind(*v);
    }
    let (mut usage, mut buckets) = (Vec::new(), Vec::new());
    for (kind, id, bytes) in query.fetch_all(tx.conn()).await? {
        if kind == "usage" {
            usage.push((id, bytes));
        } else {
            buckets.push(id);
        }
    }
    Ok((usage, buckets))
}
