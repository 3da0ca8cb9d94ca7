//! The local provider: bytes in [`Blobs`] (a directory or an S3 bucket),
//! metadata in Plateau's database through `plateau_store::storage`.
//!
//! A write streams into a fresh blob key, then commits the object row in
//! one transaction with the usage it adds and its event; a refused or
//! interrupted write deletes its blob and leaves nothing visible.

mod cache;
mod conditions;
mod group;
mod list;
mod multipart;
mod objects;
mod provider;
mod settings;
mod versions;

use std::sync::Arc;
use std::time::Duration;

use plateau_store::storage::{self, objects as rows};
use plateau_store::{Backend, Db};

use self::cache::BucketCache;
use self::group::Commits;
use crate::blobs::{Blobs, WriteFailure, Written};
use crate::error::{Error, Result};
use crate::provider::*;

pub(crate) use self::objects::{info, take_digests};

/// Object storage on this host's database and byte store.
#[derive(Clone)]
pub struct LocalProvider {
    db: Db,
    blobs: Blobs,
    buckets: Arc<BucketCache>,
    /// SQLite: object rows committed in groups.
    commits: Option<Commits>,
    /// The keys conditional writes are committing.
    locks: Arc<conditions::KeyLocks>,
}

/// The largest object or part accepted in one request (S3's limit).
pub const MAX_PUT: u64 = 5 * 1024 * 1024 * 1024;

/// What an organisation may still store, for one write.
pub(crate) struct Room {
    /// Bytes.
    limit: i64,
    used: i64,
    /// The size of the object the write replaces.
    replaced: i64,
    /// Why a write past `limit` is refused.
    message: String,
}

impl LocalProvider {
    /// `bucket_ttl` is how long a bucket found by its S3 name is trusted
    /// without reading the database ([`cache`]).
    pub fn new(db: Db, blobs: Blobs, bucket_ttl: Duration) -> Self {
        let commits = (db.backend() == Backend::Sqlite).then(|| Commits::start(db.clone()));
        LocalProvider {
            db,
            blobs,
            buckets: Arc::new(BucketCache::new(bucket_ttl)),
            commits,
            locks: Arc::default(),
        }
    }

    pub fn blobs(&self) -> &Blobs {
        &self.blobs
    }

    /// What the organisation may still store ([`storage::room`]), with the
    /// limit in bytes and the message of a refusal.
    pub(crate) async fn room(&self, org_id: &str, object: Option<(&str, &str)>) -> Result<Room> {
        let room = storage::room(&self.db, org_id, object).await?;
        let message = format!(
            "storage limit reached: the {} plan allows {} GB; delete objects or \
             move to a larger plan",
            room.plan, room.storage_gb
        );
        Ok(Room {
            limit: room.storage_gb.max(0).saturating_mul(1_000_000_000),
            used: room.used,
            replaced: room.replaced,
            message,
        })
    }

    /// Streams an upload into `key` within what the organisation may still
    /// store (plus `freed`, the bytes the write replaces).
    pub(crate) async fn write(
        &self,
        key: &str,
        upload: Upload,
        room: &Room,
        freed: i64,
    ) -> Result<Written> {
        let left = (room.limit - room.used + freed).max(0) as u64;
        let cap = left.min(MAX_PUT);
        if let Some(length) = upload.length {
            if length > MAX_PUT {
                return Err(Error::EntityTooLarge);
            }
            if length > left {
                return Err(Error::QuotaExceeded(room.message.clone()));
            }
        }
        match self.blobs.write(key, upload.body, cap).await {
            Ok(w) => Ok(w),
            Err(WriteFailure::TooLarge) if cap == MAX_PUT => Err(Error::EntityTooLarge),
            Err(WriteFailure::TooLarge) => Err(Error::QuotaExceeded(room.message.clone())),
            Err(WriteFailure::Interrupted) => Err(Error::IncompleteBody),
            Err(WriteFailure::Store(e)) => {
                self.blobs.delete_all([key.to_owned()]).await;
                Err(e)
            }
        }
    }

    /// The current version of a key: NoSuchKey, or DeletedKey when its
    /// newest version is a delete marker.
    async fn object_row(&self, bucket: &Bucket, key: &str) -> Result<rows::Object> {
        if let Some(row) = rows::get(&self.db, &bucket.id, key).await? {
            return Ok(row);
        }
        let newest = storage::versions::list(&self.db, &bucket.id, key, ("", i64::MIN), 1).await?;
        match newest.first() {
            Some(v) if v.key == key && v.latest != 0 && v.delete_marker != 0 => {
                Err(Error::DeletedKey)
            }
            _ => Err(Error::NoSuchKey),
        }
    }
}
