//! Committing object rows (grouped on SQLite, alone on PostgreSQL), the
//! events of object writes, and reading an object's segments.

use std::ops::Range;

use futures::StreamExt;
use plateau_store::events::{Actor, NewEvent};
use plateau_store::storage::versions::{self, Settled};
use plateau_store::storage::{WriteError, objects};
use serde_json::json;

use super::{LocalProvider, Room, conditions};
use crate::blobs::Blobs;
use crate::error::{Error, Result};
use crate::provider::*;

impl LocalProvider {
    /// Commits an object row; on refusal deletes `written` blobs.
    pub(super) async fn commit_object(
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
                    event: event.clone(),
                };
                commits.put(put).await
            }
            None => Err(WriteError::Versioned),
        };
        // Writes to a bucket with versioning set go alone.
        let outcome = match outcome {
            Err(WriteError::Versioned) => self.commit_alone(bucket, &row, room.limit, &event).await,
            other => other,
        };
        drop(held);
        match outcome {
            Ok(settled) => {
                self.delete_removed(&settled.removed).await;
                let mut row = row;
                row.version_id = settled.version_id.clone();
                let mut done = info(row);
                done.version_id = settled.versioned.then_some(settled.version_id);
                Ok(done)
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
    ) -> std::result::Result<Settled, WriteError> {
        let mut tx = self.db.begin().await?;
        let old = objects::put(&mut tx, &bucket.org_id, row, limit, event).await?;
        tx.commit().await?;
        Ok(old)
    }

    /// Deletes the blobs of versions a commit removed.
    pub(super) async fn delete_removed(&self, removed: &[String]) {
        let keys: Vec<String> = removed.iter().flat_map(|b| segment_keys(b)).collect();
        if !keys.is_empty() {
            self.blobs.delete_all(keys).await;
        }
    }
}

pub(super) fn object_event(bucket: &Bucket, key: &str, kind: &str, actor: &Actor) -> NewEvent {
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
pub(super) fn read_segments(
    blobs: Blobs,
    parts: Vec<(String, u64)>,
    want: Range<u64>,
) -> ByteStream {
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

pub(super) fn segment_keys(blobs: &str) -> Vec<String> {
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
        version_id: (row.version_id != versions::NULL).then_some(row.version_id),
    }
}
