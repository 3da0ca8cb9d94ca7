//! Multipart uploads: parts count against the organisation's limit from
//! the moment they are stored; completing makes one object of them
//! without copying bytes.

use sqlx::FromRow;

use super::objects::Object;
use super::versions;
use super::{WriteError, add_bucket_usage, add_usage, lock_usage};
use crate::events::{self, NewEvent};
use crate::{Db, Result, Tx};

#[derive(Clone, Debug, FromRow)]
pub struct Upload {
    pub id: String,
    pub bucket_id: String,
    pub org_id: String,
    pub key: String,
    /// JSON: the object's content headers and user metadata.
    pub headers: String,
    pub created_at: i64,
}

#[derive(Clone, Debug, FromRow)]
pub struct Part {
    pub upload_id: String,
    pub part_number: i64,
    pub size: i64,
    pub etag: String,
    pub blob: String,
    /// JSON: the checksums the client sent.
    pub checksums: String,
    pub modified_at: i64,
}

const UPLOAD_COLUMNS: &str = "id, bucket_id, org_id, key, headers, created_at";
const PART_COLUMNS: &str = "upload_id, part_number, size, etag, blob, checksums, modified_at";

pub async fn create(tx: &mut Tx, upload: &Upload) -> Result<()> {
    sqlx::query(
        "INSERT INTO storage_uploads (id, bucket_id, org_id, key, headers, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&upload.id)
    .bind(&upload.bucket_id)
    .bind(&upload.org_id)
    .bind(&upload.key)
    .bind(&upload.headers)
    .bind(upload.created_at)
    .execute(tx.conn())
    .await?;
    Ok(())
}

pub async fn get(db: &Db, bucket_id: &str, id: &str) -> Result<Option<Upload>> {
    let sql =
        format!("SELECT {UPLOAD_COLUMNS} FROM storage_uploads WHERE bucket_id = $1 AND id = $2");
    Ok(sqlx::query_as(&sql)
        .bind(bucket_id)
        .bind(id)
        .fetch_optional(db.pool())
        .await?)
}

/// Unfinished uploads of a bucket after (`key`, `id`), by key then id.
pub async fn list(
    db: &Db,
    bucket_id: &str,
    after_key: &str,
    after_id: &str,
    limit: i64,
) -> Result<Vec<Upload>> {
    let sql = format!(
        "SELECT {UPLOAD_COLUMNS} FROM storage_uploads WHERE bucket_id = $1 \
         AND (key > $2 OR (key = $2 AND id > $3)) ORDER BY key, id LIMIT $4"
    );
    Ok(sqlx::query_as(&sql)
        .bind(bucket_id)
        .bind(after_key)
        .bind(after_id)
        .bind(limit)
        .fetch_all(db.pool())
        .await?)
}

/// Parts of an upload above `after`, by number.
pub async fn parts(db: &Db, upload_id: &str, after: i64, limit: i64) -> Result<Vec<Part>> {
    let sql = format!(
        "SELECT {PART_COLUMNS} FROM storage_parts WHERE upload_id = $1 AND part_number > $2 \
         ORDER BY part_number LIMIT $3"
    );
    Ok(sqlx::query_as(&sql)
        .bind(upload_id)
        .bind(after)
        .bind(limit)
        .fetch_all(db.pool())
        .await?)
}

async fn all_parts(tx: &mut Tx, upload_id: &str) -> Result<Vec<Part>> {
    let sql = format!(
        "SELECT {PART_COLUMNS} FROM storage_parts WHERE upload_id = $1 ORDER BY part_number"
    );
    Ok(sqlx::query_as(&sql)
        .bind(upload_id)
        .fetch_all(tx.conn())
        .await?)
}

async fn exists(tx: &mut Tx, upload_id: &str) -> Result<bool> {
    let row: Option<(String,)> = sqlx::query_as("SELECT id FROM storage_uploads WHERE id = $1")
        .bind(upload_id)
        .fetch_optional(tx.conn())
        .await?;
    Ok(row.is_some())
}

/// Stores a part (replacing one of the same number) within the limit;
/// returns the replaced part, whose blob the caller deletes.
pub async fn put_part(
    tx: &mut Tx,
    org_id: &str,
    part: &Part,
    limit: i64,
) -> Result<Option<Part>, WriteError> {
    lock_usage(tx, org_id).await?;
    if !exists(tx, &part.upload_id).await? {
        return Err(WriteError::Gone);
    }
    let sql = format!(
        "SELECT {PART_COLUMNS} FROM storage_parts WHERE upload_id = $1 AND part_number = $2"
    );
    let old: Option<Part> = sqlx::query_as(&sql)
        .bind(&part.upload_id)
        .bind(part.part_number)
        .fetch_optional(tx.conn())
        .await?;
    let old_size = old.as_ref().map_or(0, |p| p.size);
    add_usage(tx, org_id, part.size - old_size, 0, limit).await?;
    sqlx::query(
        "INSERT INTO storage_parts (upload_id, part_number, size, etag, blob, checksums, modified_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (upload_id, part_number) DO UPDATE SET \
         size = excluded.size, etag = excluded.etag, blob = excluded.blob, \
         checksums = excluded.checksums, modified_at = excluded.modified_at",
    )
    .bind(&part.upload_id)
    .bind(part.part_number)
    .bind(part.size)
    .bind(&part.etag)
    .bind(&part.blob)
    .bind(&part.checksums)
    .bind(part.modified_at)
    .execute(tx.conn())
    .await?;
    Ok(old)
}

/// What completing an upload left for the caller to delete.
#[derive(Debug, Default)]
pub struct Completed {
    /// What the new object replaced (the versions removed).
    pub replaced: versions::Settled,
    /// Parts stored but not named in the completion.
    pub unused: Vec<Part>,
}

/// Turns an upload into `object` (whose blobs are the chosen parts', in
/// order) and records its event. `chosen` are the part numbers used.
pub async fn complete(
    tx: &mut Tx,
    upload: &Upload,
    object: &Object,
    chosen: &[i64],
    event: &NewEvent,
) -> Result<Completed, WriteError> {
    lock_usage(tx, &upload.org_id).await?;
    if !exists(tx, &upload.id).await? {
        return Err(WriteError::Gone);
    }
    let parts = all_parts(tx, &upload.id).await?;
    let unused: Vec<Part> = parts
        .into_iter()
        .filter(|p| !chosen.contains(&p.part_number))
        .collect();
    let unused_bytes: i64 = unused.iter().map(|p| p.size).sum();
    let mut object = object.clone();
    let replaced = versions::settle(tx, &mut object).await?;
    let (old_size, old_count) = (replaced.bytes, replaced.count);
    // The chosen parts' bytes are already counted; they move to the object.
    add_usage(
        tx,
        &upload.org_id,
        -unused_bytes - old_size,
        1 - old_count,
        0,
    )
    .await?;
    add_bucket_usage(tx, &object.bucket_id, object.size - old_size, 1 - old_count).await?;
    remove(tx, &upload.id).await?;
    events::record(tx, event, object.modified_at).await?;
    Ok(Completed { replaced, unused })
}

/// Drops an upload and its parts; returns the parts (for their blobs).
pub async fn abort(tx: &mut Tx, upload: &Upload) -> Result<Vec<Part>, WriteError> {
    lock_usage(tx, &upload.org_id).await?;
    if !exists(tx, &upload.id).await? {
        return Err(WriteError::Gone);
    }
    let parts = all_parts(tx, &upload.id).await?;
    let bytes: i64 = parts.iter().map(|p| p.size).sum();
    add_usage(tx, &upload.org_id, -bytes, 0, 0).await?;
    remove(tx, &upload.id).await?;
    Ok(parts)
}

async fn remove(tx: &mut Tx, upload_id: &str) -> Result<()> {
    sqlx::query("DELETE FROM storage_parts WHERE upload_id = $1")
        .bind(upload_id)
        .execute(tx.conn())
        .await?;
    sqlx::query("DELETE FROM storage_uploads WHERE id = $1")
        .bind(upload_id)
        .execute(tx.conn())
        .await?;
    Ok(())
}
