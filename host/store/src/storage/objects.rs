//! Objects: one row per key, written only once its bytes are complete.

use sqlx::FromRow;

use super::versions::{self, Settled};
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
    /// [`super::versions::NULL`] unless written while versioning was enabled.
    pub version_id: String,
}

const COLUMNS: &str = "bucket_id, key, size, etag, blobs, headers, modified_at, version_id";

pub async fn get(db: &Db, bucket_id: &str, key: &str) -> Result<Option<Object>> {
    let sql = format!("SELECT {COLUMNS} FROM storage_objects WHERE bucket_id = $1 AND key = $2");
    Ok(sqlx::query_as(&sql)
        .bind(bucket_id)
        .bind(key)
        .fetch_optional(db.pool())
        .await?)
}

pub(super) async fn get_in(tx: &mut Tx, bucket_id: &str, key: &str) -> Result<Option<Object>> {
    let sql = format!("SELECT {COLUMNS} FROM storage_objects WHERE bucket_id = $1 AND key = $2");
    Ok(sqlx::query_as(&sql)
        .bind(bucket_id)
        .bind(key)
        .fetch_optional(tx.conn())
        .await?)
}

/// Replaces the headers (tags, ACL) of the object `key` as it was when
/// read (`etag`, `modified_at`, its headers); false when it changed or
/// went away meanwhile, so a concurrent overwrite is never given stale
/// headers and two changes of headers never undo each other.
pub async fn set_headers(
    db: &Db,
    bucket_id: &str,
    key: &str,
    seen: (&str, i64, &str),
    headers: &str,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE storage_objects SET headers = $5 \
         WHERE bucket_id = $1 AND key = $2 AND etag = $3 AND modified_at = $4 AND headers = $6",
    )
    .bind(bucket_id)
    .bind(key)
    .bind(seen.0)
    .bind(seen.1)
    .bind(headers)
    .bind(seen.2)
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

/// Records `object` as the current version of its key (the one it
/// replaces kept or removed as the bucket's versioning says,
/// [`versions::settle`]) and its event, within the organisation's limit of
/// `limit` bytes. The caller deletes the blobs of the removed versions
/// after the commit.
pub async fn put(
    tx: &mut Tx,
    org_id: &str,
    object: &Object,
    limit: i64,
    event: &NewEvent,
) -> Result<Settled, WriteError> {
    lock_usage(tx, org_id).await?;
    let mut object = object.clone();
    let settled = versions::settle(tx, &mut object).await?;
    let (bytes, count) = (object.size - settled.bytes, 1 - settled.count);
    add_usage(tx, org_id, bytes, count, limit).await?;
    add_bucket_usage(tx, &object.bucket_id, bytes, count).await?;
    events::record(tx, event, object.modified_at).await?;
    Ok(settled)
}

/// Writes the row; on SQLite it goes with the transaction's next statement.
pub(super) async fn upsert(tx: &mut Tx, object: &Object) -> Result<()> {
    let write = Deferred::new(
        "INSERT INTO storage_objects (bucket_id, key, size, etag, blobs, headers, modified_at, \
         version_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (bucket_id, key) DO UPDATE \
         SET size = excluded.size, etag = excluded.etag, blobs = excluded.blobs, \
         headers = excluded.headers, modified_at = excluded.modified_at, \
         version_id = excluded.version_id",
    )
    .bind(object.bucket_id.as_str())
    .bind(object.key.as_str())
    .bind(object.size)
    .bind(object.etag.as_str())
    .bind(object.blobs.as_str())
    .bind(object.headers.as_str())
    .bind(object.modified_at)
    .bind(object.version_id.as_str());
    tx.defer(write).await
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
/// would one by one: each is refused alone (quota, bucket gone, or
/// [`WriteError::Versioned`]: a bucket with versioning set, whose writes
/// go alone through [`put`]) without failing the others, and returns
/// what it replaced. Three round
/// trips whatever the group's size: the replaced rows, the usage and
/// buckets, then every write with the commit, which the caller sends.
/// SQLite only: its one writer holds everything read here until the commit.
pub async fn put_group(
    tx: &mut Tx,
    puts: &[Put],
) -> Result<Vec<std::result::Result<Settled, WriteError>>> {
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
    let versioned: Vec<String> = buckets
        .iter()
        .filter(|(_, v)| *v)
        .map(|(b, _)| b.clone())
        .collect();
    let mut buckets: HashMap<String, (i64, i64)> =
        buckets.into_iter().map(|(b, _)| (b, (0, 0))).collect();
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
        if versioned.contains(&o.bucket_id) {
            outcomes.push(Err(WriteError::Versioned));
            continue;
        }
        if bytes > 0 && org.0 + bytes > p.limit {
            outcomes.push(Err(WriteError::Quota));
            continue;
        }
        *org = (org.0 + bytes, org.1 + bytes, org.2 + objects);
        *bucket = (bucket.0 + bytes, bucket.1 + objects);
        let mut o = o.clone();
        o.version_id = versions::NULL.to_owned();
        upsert(tx, &o).await?;
        events::record(tx, &p.event, o.modified_at).await?;
        let mut settled = Settled {
            version_id: o.version_id.clone(),
            ..Default::default()
        };
        if let Some(old) = current.insert(id, o) {
            settled.bytes = old.size;
            settled.count = 1;
            settled.removed.push(old.blobs);
        }
        outcomes.push(Ok(settled));
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
/// buckets still exist (with whether versioning is set on them).
async fn usage_and_buckets(
    tx: &mut Tx,
    puts: &[Put],
) -> Result<(Vec<(String, i64)>, Vec<(String, bool)>)> {
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
         UNION ALL SELECT 'bucket', b.id, CASE WHEN EXISTS (SELECT 1 FROM \
         storage_bucket_settings s WHERE s.bucket_id = b.id AND s.kind = 'versioning') \
         THEN 1 ELSE 0 END FROM storage_buckets b WHERE b.id IN ({})",
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
            buckets.push((id, bytes != 0));
        }
    }
    Ok((usage, buckets))
}
