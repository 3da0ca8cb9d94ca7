//! Versions on the local provider (`plateau_store::storage::versions`):
//! reading one version, deleting the current one (a delete marker where
//! versioning is set) or one version for good, and listing versions with
//! prefixes rolled up at a delimiter (ListObjectVersions).

use plateau_core::{id::new_id, time};
use plateau_store::events::Actor;
use plateau_store::storage::objects::Object;
use plateau_store::storage::versions::{self, Listed};
use serde_json::json;

use super::LocalProvider;
use super::objects::object_event;
use crate::error::{Error, Result};
use crate::provider::*;

/// Rows read per query.
const BATCH: i64 = 1000;

/// Above every key that starts with `p`: no key continues past U+10FFFF.
fn past(p: &str) -> String {
    format!("{p}{}", char::MAX)
}

/// The row of one version of a key: NoSuchVersion when there is none,
/// DeleteMarker when it is a delete marker.
pub(super) async fn row(
    provider: &LocalProvider,
    bucket: &Bucket,
    key: &str,
    version: &str,
) -> Result<Object> {
    let v = versions::get(&provider.db, &bucket.id, key, version)
        .await?
        .ok_or(Error::NoSuchVersion)?;
    if v.delete_marker != 0 {
        return Err(Error::DeleteMarker(v.version_id));
    }
    Ok(Object {
        bucket_id: v.bucket_id,
        key: v.key,
        size: v.size,
        etag: v.etag,
        blobs: v.blobs,
        headers: v.headers,
        modified_at: v.modified_at,
        version_id: v.version_id,
    })
}

pub(super) async fn delete(
    provider: &LocalProvider,
    bucket: &Bucket,
    key: &str,
    version: Option<&str>,
    bypass: bool,
    actor: &Actor,
) -> Result<Option<Deleted>> {
    let event = object_event(bucket, key, "storage.object.deleted", actor)
        .data(json!({ "bucket": bucket.bucket, "key": key, "versionId": version }));
    let now = time::now_ms();
    let (org, id) = (bucket.org_id.as_str(), bucket.id.as_str());
    let mut tx = provider.db.begin().await?;
    let done = match version {
        None => {
            let marker = new_id("v");
            versions::delete_current(&mut tx, org, id, key, &marker, &event, now).await
        }
        Some(v) => {
            let locked = |headers: &str| crate::lock::protects_json(headers, now, bypass);
            versions::delete_version(&mut tx, org, id, key, v, &locked, &event, now).await
        }
    }
    .map_err(|e| Error::from_write(e, String::new))?;
    tx.commit().await?;
    let Some(settled) = done else {
        return Ok(None);
    };
    provider.delete_removed(&settled.removed).await;
    Ok(Some(Deleted {
        version_id: settled.versioned.then_some(settled.version_id),
        delete_marker: settled.delete_marker,
    }))
}

fn version_info(row: Listed) -> VersionInfo {
    VersionInfo {
        latest: row.latest != 0,
        delete_marker: row.delete_marker != 0,
        info: ObjectInfo {
            key: row.key,
            size: row.size.max(0) as u64,
            etag: row.etag,
            modified_at: row.modified_at,
            headers: serde_json::from_str(&row.headers).unwrap_or_default(),
            segments: Vec::new(),
            version_id: Some(row.version_id),
        },
    }
}

pub(super) async fn list(
    provider: &LocalProvider,
    bucket: &Bucket,
    q: &ListQuery,
    version_after: Option<&str>,
) -> Result<VersionListing> {
    let mut listing = VersionListing::default();
    if q.max_keys == 0 {
        return Ok(listing);
    }
    let db = &provider.db;
    // After a key marker alone, every version of that key is skipped.
    let mut after = (q.after.clone(), i64::MIN);
    if let Some(v) = version_after.filter(|v| !v.is_empty() && !q.after.is_empty()) {
        match versions::get(db, &bucket.id, &q.after, v).await? {
            Some(found) => after.1 = found.seq,
            None => return Err(Error::InvalidArgument("version id marker not found".into())),
        }
    }
    let delimiter = q.delimiter.as_deref().filter(|d| !d.is_empty());
    let rolled_up = |key: &str| {
        let d = delimiter?;
        let rest = key.strip_prefix(q.prefix.as_str())?;
        rest.find(d)
            .map(|i| key[..q.prefix.len() + i + d.len()].to_owned())
    };
    // A position inside a rolled-up prefix continues after the prefix.
    if let Some(prefix) = rolled_up(&after.0) {
        after = (past(&prefix), i64::MIN);
    }
    let mut count = 0usize;
    loop {
        let rows = versions::list(db, &bucket.id, &q.prefix, (&after.0, after.1), BATCH).await?;
        let full = rows.len() as i64 == BATCH;
        let mut jumped = false;
        for row in rows {
            if !row.key.starts_with(q.prefix.as_str()) {
                return Ok(listing);
            }
            if count == q.max_keys {
                listing.truncated = true;
                return Ok(listing);
            }
            count += 1;
            match rolled_up(&row.key) {
                Some(prefix) => {
                    after = (past(&prefix), i64::MIN);
                    listing.next = Some((prefix.clone(), None));
                    listing.prefixes.push(prefix);
                    jumped = true;
                    break;
                }
                None => {
                    after = (row.key.clone(), row.seq);
                    listing.next = Some((row.key.clone(), Some(row.version_id.clone())));
                    listing.versions.push(version_info(row));
                }
            }
        }
        if !full && !jumped {
            return Ok(listing);
        }
    }
}
