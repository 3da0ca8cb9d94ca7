//! What changes beside an object's bytes: its headers in place (tags,
//! ACL), and a bucket's S3 configurations (`plateau_store::storage::settings`).

use plateau_core::time;
use plateau_store::storage::{objects, settings, versions};

use super::{LocalProvider, info};
use crate::error::{Error, Result};
use crate::provider::{Bucket, HeaderChange, ObjectInfo, VersionChange};

/// How many times a change is tried again when the object was replaced
/// between reading and writing its headers.
const TRIES: usize = 5;

pub(super) async fn change_headers(
    provider: &LocalProvider,
    bucket: &Bucket,
    key: &str,
    change: HeaderChange,
) -> Result<ObjectInfo> {
    for _ in 0..TRIES {
        let row = provider.object_row(bucket, key).await?;
        let seen_headers = row.headers.clone();
        let mut found = info(row);
        change(&mut found.headers);
        let json = serde_json::to_string(&found.headers)
            .map_err(|e| Error::Internal(format!("object headers: {e}")))?;
        let seen = (
            found.etag.as_str(),
            found.modified_at,
            seen_headers.as_str(),
        );
        if objects::set_headers(&provider.db, &bucket.id, key, seen, &json).await? {
            return Ok(found);
        }
    }
    Err(Error::Internal(format!(
        "the object {key} kept changing while its headers were set"
    )))
}

pub(super) async fn change_version(
    provider: &LocalProvider,
    bucket: &Bucket,
    key: &str,
    version: Option<&str>,
    change: VersionChange,
) -> Result<ObjectInfo> {
    for _ in 0..TRIES {
        let row = match version {
            None => provider.object_row(bucket, key).await?,
            Some(v) => super::versions::row(provider, bucket, key, v).await?,
        };
        let (seen, id) = (row.headers.clone(), row.version_id.clone());
        let mut found = info(row);
        change(&mut found.headers)?;
        let json = serde_json::to_string(&found.headers)
            .map_err(|e| Error::Internal(format!("object headers: {e}")))?;
        let (org, b) = (bucket.org_id.as_str(), bucket.id.as_str());
        if versions::set_headers(&provider.db, org, b, key, &id, &seen, &json).await? {
            return Ok(found);
        }
    }
    Err(Error::Internal(format!(
        "the object {key} kept changing while its headers were set"
    )))
}

pub(super) async fn set(
    provider: &LocalProvider,
    bucket: &Bucket,
    kind: &str,
    body: Option<&str>,
) -> Result<bool> {
    match body {
        Some(body) => {
            settings::put(&provider.db, &bucket.id, kind, body, time::now_ms()).await?;
            Ok(true)
        }
        None => Ok(settings::delete(&provider.db, &bucket.id, kind).await?),
    }
}
