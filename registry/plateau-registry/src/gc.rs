//! Garbage collection: stale uploads, blobs no manifest references, and
//! objects the database does not know (left by a crash mid-upload).
//!
//! A blob is collected only once untouched for the grace period: every
//! upload, mount and manifest push touches the blobs it uses, and a
//! manifest push touches them inside its own transaction (locking their
//! rows), while GC deletes a row only if it is still old and unreferenced
//! at that moment. So a push racing GC either sees the blob gone (and
//! answers MANIFEST_BLOB_UNKNOWN, so the client uploads it again) or keeps
//! it; GC never deletes a blob a manifest references. Content is keyed by
//! generation ([`crate::storage`]), so a blob re-uploaded while GC deletes
//! its old copy keeps its new one.

use plateau_core::time;
use plateau_store::Db;
use plateau_store::registry::{blobs, uploads};

use crate::blobs::BlobStore;
use crate::error::Result;

#[derive(Clone, Debug)]
pub struct GcOptions {
    /// How long an unreferenced blob (or an unknown object) is kept.
    pub grace_secs: i64,
    /// How long an upload may stay untouched.
    pub upload_ttl_secs: i64,
}

impl Default for GcOptions {
    fn default() -> Self {
        GcOptions {
            grace_secs: 60 * 60,
            upload_ttl_secs: 24 * 60 * 60,
        }
    }
}

/// What a run removed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GcReport {
    pub uploads: usize,
    pub blobs: usize,
    pub bytes: i64,
    pub orphans: usize,
}

/// One collection over every organisation.
pub async fn collect(db: &Db, store: &BlobStore, options: &GcOptions) -> Result<GcReport> {
    let now = time::now_ms();
    let mut report = GcReport::default();
    for upload in uploads::stale(db, now - options.upload_ttl_secs * 1000).await? {
        let mut tx = db.begin().await?;
        let deleted = uploads::delete(&mut tx, &upload.id).await?;
        tx.commit().await?;
        if deleted {
            store
                .delete_prefix(&BlobStore::upload_prefix(&upload.id))
                .await?;
            report.uploads += 1;
        }
    }
    let cutoff = now - options.grace_secs * 1000;
    for blob in blobs::unreferenced(db, cutoff).await? {
        let mut tx = db.begin().await?;
        let deleted =
            blobs::delete_unreferenced(&mut tx, &blob.org_id, &blob.digest, cutoff).await?;
        tx.commit().await?;
        if deleted {
            store.delete(&blob.object_key).await?;
            report.blobs += 1;
            report.bytes += blob.size;
        }
    }
    report.orphans = sweep_orphans(db, store, cutoff).await?;
    Ok(report)
}

/// Deletes objects older than `cutoff` that no blob row or upload names.
async fn sweep_orphans(db: &Db, store: &BlobStore, cutoff: i64) -> Result<usize> {
    let mut removed = 0;
    for (key, modified) in store.list("blobs").await? {
        if modified >= cutoff {
            continue;
        }
        if !blobs::key_in_use(db, &key).await? {
            store.delete(&key).await?;
            removed += 1;
        }
    }
    for (key, modified) in store.list("uploads").await? {
        let id = key.split('/').nth(1).unwrap_or_default();
        if modified < cutoff && !uploads::exists(db, id).await? {
            store.delete(&key).await?;
            removed += 1;
        }
    }
    Ok(removed)
}
