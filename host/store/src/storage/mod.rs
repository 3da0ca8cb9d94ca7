//! Object storage metadata (spec section 4.9): buckets, access keys,
//! objects, multipart uploads and buckets' S3 configurations. Bytes live in an object store that the
//! `plateau-storage` crate owns; here are names, sizes, headers and the
//! organisation's usage, which every write changes in its own transaction.
//!
//! **Invariant:** a write locks the organisation's `storage_usage` row
//! first, so the plan's limit holds across buckets and hosts, and an
//! object row appears only once its bytes are complete.

pub mod buckets;
pub mod keys;
pub mod lifecycle;
pub mod objects;
pub mod settings;
pub mod uploads;
pub mod versions;

use crate::db::Deferred;
use crate::{Db, Result, Tx};

/// An organisation's stored bytes and objects.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct Usage {
    pub bytes: i64,
    pub objects: i64,
}

/// Why a write was refused.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    /// The write would take the organisation past its plan's limit.
    #[error("the plan's storage limit would be exceeded")]
    Quota,
    /// The bucket or upload went away meanwhile.
    #[error("the bucket or upload no longer exists")]
    Gone,
    /// A grouped write to a bucket with versioning set: to be written alone.
    #[error("the bucket has versioning set")]
    Versioned,
    /// The version is protected by object lock (a retention or legal hold).
    #[error("the object version is protected by object lock")]
    Locked,
    #[error(transparent)]
    Store(#[from] crate::Error),
}

impl From<sqlx::Error> for WriteError {
    fn from(e: sqlx::Error) -> Self {
        WriteError::Store(e.into())
    }
}

/// The organisation's total.
pub async fn usage(db: &Db, org_id: &str) -> Result<Usage> {
    Ok(
        sqlx::query_as("SELECT bytes, objects FROM storage_usage WHERE org_id = $1")
            .bind(org_id)
            .fetch_optional(db.pool())
            .await?
            .unwrap_or_default(),
    )
}

/// What an organisation may still write, read in one statement before a
/// write streams its bytes: the plan, its limit, the bytes stored, and
/// the size of the object the write would replace (0 when none).
#[derive(Clone, Debug, sqlx::FromRow)]
pub struct Room {
    pub plan: String,
    pub storage_gb: i64,
    pub used: i64,
    pub replaced: i64,
}

/// The organisation's [`Room`]; `object` is the (bucket id, key) a write
/// would replace, if any.
pub async fn room(db: &Db, org_id: &str, object: Option<(&str, &str)>) -> Result<Room> {
    let (bucket_id, key) = object.unwrap_or(("", ""));
    Ok(sqlx::query_as(
        "SELECT p.name AS plan, p.storage_gb, COALESCE(u.bytes, 0) AS used, \
         COALESCE((SELECT s.size FROM storage_objects s WHERE s.bucket_id = $2 AND s.key = $3), 0) \
         AS replaced \
         FROM organizations o JOIN plans p ON p.name = o.plan \
         LEFT JOIN storage_usage u ON u.org_id = o.id WHERE o.id = $1",
    )
    .bind(org_id)
    .bind(bucket_id)
    .bind(key)
    .fetch_one(db.pool())
    .await?)
}

/// Locks the organisation's usage row for the rest of the transaction
/// (on SQLite the one writer holds everything already, and the statement
/// goes with the next one).
async fn lock_usage(tx: &mut Tx, org_id: &str) -> Result<()> {
    tx.defer(Deferred::new("UPDATE storage_usage SET bytes = bytes WHERE org_id = $1").bind(org_id))
        .await
}

/// Adds to the organisation's usage; refuses growth past `limit` bytes.
async fn add_usage(
    tx: &mut Tx,
    org_id: &str,
    bytes: i64,
    objects: i64,
    limit: i64,
) -> Result<(), WriteError> {
    let done = sqlx::query(
        "UPDATE storage_usage SET bytes = bytes + $2, objects = objects + $3 \
         WHERE org_id = $1 AND ($2 <= 0 OR bytes + $2 <= $4)",
    )
    .bind(org_id)
    .bind(bytes)
    .bind(objects)
    .bind(limit)
    .execute(tx.conn())
    .await?;
    if done.rows_affected() == 1 {
        Ok(())
    } else {
        Err(WriteError::Quota)
    }
}

/// Adds to a bucket's counters.
async fn add_bucket_usage(
    tx: &mut Tx,
    bucket_id: &str,
    bytes: i64,
    objects: i64,
) -> Result<(), WriteError> {
    let done = sqlx::query(
        "UPDATE storage_buckets SET bytes = bytes + $2, objects = objects + $3 WHERE id = $1",
    )
    .bind(bucket_id)
    .bind(bytes)
    .bind(objects)
    .execute(tx.conn())
    .await?;
    if done.rows_affected() == 1 {
        Ok(())
    } else {
        Err(WriteError::Gone)
    }
}

#[cfg(test)]
mod group_tests;
