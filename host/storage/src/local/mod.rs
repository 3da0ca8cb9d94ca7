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

use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use plateau_core::{id::new_id, time};
use plateau_store::events::{self, Actor, NewEvent};
use plateau_store::storage::{self, buckets, objects};
use plateau_store::{Backend, Db};
use serde_json::json;

use self::cache::BucketCache;
use self::group::Commits;
use crate::blobs::{Blobs, WriteFailure, Written};
use crate::error::{Error, Result};
use crate::names;
use crate::provider::*;

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

    async fn object_row(&self, bucket: &Bucket, key: &str) -> Result<objects::Object> {
        objects::get(&self.db, &bucket.id, key)
            .await?
            .ok_or(Error::NoSuchKey)
    }

    /// Commits an object row; on refusal deletes `written` blobs.
    async fn commit_object(
        &self,
        bucket: &Bucket,
        row: objects::Object,
        room: Room,
        actor: &Actor,
        written: Vec<String>,
        condition: &Condition,
    ) -> Result<ObjectInfo> {
        let held =
            match conditions::check(&self.locks, &self.db, &bucket.id, &row.key, condition).await {
                Ok(held) => held,
                Err(e) => {
                    self.blobs.delete_all(written).await;
                    return Err(e);
                }
            };
        let event = object_event(bucket, &row.key, "storage.object.written", actor)
            .data(json!({ "bucket": bucket.bucket, "key": row.key, "size": row.size }));
        let outcome = match &self.commits {
            Some(commits) => {
                let put = objects::Put {
                    org_id: bucket.org_id.clone(),
                    object: row.clone(),
                    limit: room.limit,
                    event,
                };
                commits.put(put).await
            }
            None => self.commit_alone(bucket, &row, room.limit, &event).await,
        };
        drop(held);
        match outcome {
            Ok(old) => {
                if let Some(old) = old {
                    self.blobs.delete_all(segment_keys(&old.blobs)).await;
                }
                Ok(info(row))
            }
            Err(e) => {
                self.blobs.delete_all(written).await;
                Err(Error::from_write(e, || room.message))
            }
        }
    }

    /// Commits an object row in a transaction of its own (PostgreSQL).
    async fn commit_alone(
        &self,
        bucket: &Bucket,
        row: &objects::Object,
        limit: i64,
        event: &NewEvent,
    ) -> std::result::Result<Option<objects::Object>, storage::WriteError> {
        let mut tx = self.db.begin().await?;
        let old = objects::put(&mut tx, &bucket.org_id, row, limit, event).await?;
        tx.commit().await?;
        Ok(old)
    }
}

fn object_event(bucket: &Bucket, key: &str, kind: &str, actor: &Actor) -> NewEvent {
    let mut event = NewEvent::audited(&bucket.org_id, kind, "storage", "update", actor)
        .resource("storage_object", &format!("{}/{key}", bucket.id));
    // Object writes are data, not configuration: in the timeline, not the audit log.
    event.audit = false;
    event
}

/// The blob keys of an object's `blobs` column.
pub(crate) fn segments(blobs: &str) -> Vec<(String, u64)> {
    serde_json::from_str(blobs).unwrap_or_default()
}

/// The bytes `want` of an object made of `parts`, each segment that
/// overlaps the range read with its own sub-range, lazily.
fn read_segments(blobs: Blobs, parts: Vec<(String, u64)>, want: Range<u64>) -> ByteStream {
    let mut pieces = Vec::new();
    let mut offset = 0u64;
    for (blob, size) in parts {
        let (start, end) = (offset, offset + size);
        offset = end;
        if end <= want.start || start >= want.end {
            continue;
        }
        let from = want.start.max(start) - start;
        let to = want.end.min(end) - start;
        pieces.push((blob, from..to));
    }
    futures::stream::iter(pieces)
        .then(move |(blob, range)| {
            let blobs = blobs.clone();
            async move {
                match blobs.read(&blob, Some(range)).await {
                    Ok(s) => s,
                    Err(e) => {
                        let e = std::io::Error::other(format!("reading {blob}: {e}"));
                        futures::stream::once(async { Err(e) }).boxed()
                    }
                }
            }
        })
        .flatten()
        .boxed()
}

fn segment_keys(blobs: &str) -> Vec<String> {
    segments(blobs).into_iter().map(|(k, _)| k).collect()
}

/// What the body's stream found: its checksums (stored with the object),
/// and the entity tag an encrypting stream computed of the plaintext.
pub(crate) fn take_digests(
    digests: &Digests,
) -> (std::collections::BTreeMap<String, String>, Option<String>) {
    let mut found = std::mem::take(&mut *digests.lock().unwrap_or_else(|p| p.into_inner()));
    let etag = found.remove(ETAG_DIGEST);
    (found, etag)
}

pub(crate) fn info(row: objects::Object) -> ObjectInfo {
    ObjectInfo {
        segments: segments(&row.blobs).into_iter().map(|(_, s)| s).collect(),
        key: row.key,
        size: row.size.max(0) as u64,
        etag: row.etag,
        modified_at: row.modified_at,
        headers: serde_json::from_str(&row.headers).unwrap_or_default(),
    }
}

#[async_trait]
impl Provider for LocalProvider {
    async fn create_bucket(
        &self,
        org_id: &str,
        project_id: Option<String>,
        name: &str,
        actor: &Actor,
    ) -> Result<Bucket> {
        if let Some(problem) = names::check_name(name) {
            return Err(Error::InvalidArgument(problem));
        }
        let now = time::now_ms();
        let bucket = Bucket {
            id: new_id("bkt"),
            org_id: org_id.to_owned(),
            project_id,
            name: name.to_owned(),
            bucket: names::bucket_name(org_id, name),
            bytes: 0,
            objects: 0,
            created_at: now,
        };
        let mut tx = self.db.begin().await?;
        if let Err(e) = buckets::insert(&mut tx, &bucket).await {
            return Err(if e.is_unique_violation() {
                Error::NameTaken(name.to_owned())
            } else {
                e.into()
            });
        }
        let event = NewEvent::audited(
            org_id,
            "storage.bucket.created",
            "resources",
            "create",
            actor,
        )
        .resource("storage_bucket", &bucket.id)
        .data(json!({ "name": bucket.name, "bucket": bucket.bucket }));
        events::record(&mut tx, &event, now).await?;
        tx.commit_last().await?;
        Ok(bucket)
    }

    async fn delete_bucket(&self, bucket: &Bucket, actor: &Actor) -> Result<()> {
        let mut tx = self.db.begin().await?;
        if !buckets::delete(&mut tx, &bucket.org_id, &bucket.id).await? {
            return Err(Error::BucketNotEmpty);
        }
        let event = NewEvent::audited(
            &bucket.org_id,
            "storage.bucket.deleted",
            "resources",
            "delete",
            actor,
        )
        .resource("storage_bucket", &bucket.id)
        .data(json!({ "name": bucket.name, "bucket": bucket.bucket }));
        events::record(&mut tx, &event, time::now_ms()).await?;
        tx.commit_last().await?;
        self.buckets.forget(&bucket.bucket);
        Ok(())
    }

    async fn bucket_by_name(&self, name: &str) -> Result<Option<Bucket>> {
        if let Some(bucket) = self.buckets.get(name) {
            return Ok(Some(bucket));
        }
        let found = buckets::by_name(&self.db, name).await?;
        if let Some(bucket) = &found {
            self.buckets.insert(bucket);
        }
        Ok(found)
    }

    async fn buckets(&self, org_id: &str) -> Result<Vec<Bucket>> {
        Ok(buckets::all(&self.db, org_id).await?)
    }

    async fn usage(&self, org_id: &str) -> Result<Usage> {
        Ok(storage::usage(&self.db, org_id).await?)
    }

    async fn put_object(
        &self,
        bucket: &Bucket,
        key: &str,
        upload: Upload,
        headers: ObjectHeaders,
        actor: &Actor,
    ) -> Result<ObjectInfo> {
        let room = self
            .room(&bucket.org_id, Some((bucket.id.as_str(), key)))
            .await?;
        conditions::holds(&self.db, &bucket.id, key, &upload.condition).await?;
        let condition = upload.condition.clone();
        let digests = upload.digests.clone();
        let blob = Blobs::object_key(&bucket.id);
        let written = self.write(&blob, upload, &room, room.replaced).await?;
        let (checksums, etag) = take_digests(&digests);
        let mut headers = headers;
        headers.checksums.extend(checksums);
        let row = objects::Object {
            bucket_id: bucket.id.clone(),
            key: key.to_owned(),
            size: written.size as i64,
            etag: etag.unwrap_or_else(|| hex::encode(written.md5)),
            blobs: serde_json::to_string(&[(&blob, written.size)]).unwrap_or_default(),
            headers: serde_json::to_string(&headers).unwrap_or_default(),
            modified_at: time::now_ms(),
        };
        self.commit_object(bucket, row, room, actor, vec![blob], &condition)
            .await
    }

    async fn head_object(&self, bucket: &Bucket, key: &str) -> Result<ObjectInfo> {
        Ok(info(self.object_row(bucket, key).await?))
    }

    async fn get_object(&self, bucket: &Bucket, key: &str) -> Result<Opened> {
        let row = self.object_row(bucket, key).await?;
        let parts = segments(&row.blobs);
        let blobs = self.blobs.clone();
        Ok(Opened::new(info(row), move |want| {
            read_segments(blobs, parts, want)
        }))
    }

    async fn delete_object(&self, bucket: &Bucket, key: &str, actor: &Actor) -> Result<bool> {
        let event = object_event(bucket, key, "storage.object.deleted", actor)
            .data(json!({ "bucket": bucket.bucket, "key": key }));
        let mut tx = self.db.begin().await?;
        let old = objects::delete(
            &mut tx,
            &bucket.org_id,
            &bucket.id,
            key,
            &event,
            time::now_ms(),
        )
        .await
        .map_err(|e| Error::from_write(e, String::new))?;
        tx.commit().await?;
        match old {
            Some(old) => {
                self.blobs.delete_all(segment_keys(&old.blobs)).await;
                Ok(true)
            }
            None => Ok(false),
        }
    }

    async fn copy_object(
        &self,
        from: (&Bucket, &str),
        to: (&Bucket, &str),
        headers: Option<ObjectHeaders>,
        actor: &Actor,
    ) -> Result<ObjectInfo> {
        let source = self.object_row(from.0, from.1).await?;
        let room = self
            .room(&to.0.org_id, Some((to.0.id.as_str(), to.1)))
            .await?;
        if room.used - room.replaced + source.size > room.limit {
            return Err(Error::QuotaExceeded(room.message));
        }
        let mut copied = Vec::new();
        for (blob, size) in segments(&source.blobs) {
            let key = Blobs::object_key(&to.0.id);
            if let Err(e) = self.blobs.copy(&blob, &key).await {
                self.blobs
                    .delete_all(copied.into_iter().map(|(k, _)| k))
                    .await;
                return Err(e);
            }
            copied.push((key, size));
        }
        let keys: Vec<String> = copied.iter().map(|(k, _)| k.clone()).collect();
        let row = objects::Object {
            bucket_id: to.0.id.clone(),
            key: to.1.to_owned(),
            size: source.size,
            etag: source.etag,
            blobs: serde_json::to_string(&copied).unwrap_or_default(),
            headers: match headers {
                Some(h) => serde_json::to_string(&h).unwrap_or_default(),
                None => source.headers,
            },
            modified_at: time::now_ms(),
        };
        self.commit_object(to.0, row, room, actor, keys, &Condition::default())
            .await
    }

    async fn list_objects(&self, bucket: &Bucket, query: &ListQuery) -> Result<Listing> {
        list::list(&self.db, bucket, query).await
    }

    async fn create_upload(
        &self,
        bucket: &Bucket,
        key: &str,
        headers: ObjectHeaders,
    ) -> Result<UploadInfo> {
        multipart::create(self, bucket, key, headers).await
    }

    async fn upload_part(
        &self,
        bucket: &Bucket,
        upload_id: &str,
        number: i64,
        upload: Upload,
    ) -> Result<PartInfo> {
        multipart::upload_part(self, bucket, upload_id, number, upload).await
    }

    async fn complete_upload(
        &self,
        bucket: &Bucket,
        upload_id: &str,
        parts: &[(i64, String)],
        condition: &Condition,
        actor: &Actor,
    ) -> Result<ObjectInfo> {
        multipart::complete(self, bucket, upload_id, parts, condition, actor).await
    }

    async fn abort_upload(&self, bucket: &Bucket, upload_id: &str) -> Result<()> {
        multipart::abort(self, bucket, upload_id).await
    }

    async fn upload(&self, bucket: &Bucket, upload_id: &str) -> Result<UploadInfo> {
        multipart::get(self, bucket, upload_id)
            .await
            .map(multipart::upload_info)
    }

    async fn list_parts(
        &self,
        bucket: &Bucket,
        upload_id: &str,
        after: i64,
        max: usize,
    ) -> Result<(Vec<PartInfo>, bool)> {
        multipart::list_parts(self, bucket, upload_id, after, max).await
    }

    async fn list_uploads(
        &self,
        bucket: &Bucket,
        prefix: &str,
        after: (&str, &str),
        max: usize,
    ) -> Result<(Vec<UploadInfo>, bool)> {
        multipart::list_uploads(self, bucket, prefix, after, max).await
    }
}
