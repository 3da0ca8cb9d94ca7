//! What changes beside an object's bytes: its headers in place (tags,
//! ACL), and a bucket's S3 configurations (`plateau_store::storage::settings`).

use plateau_core::time;
use plateau_store::storage::{objects, settings};

use super::{LocalProvider, info};
use crate::error::{Error, Result};
use crate::provider::{Bucket, HeaderChange, ObjectInfo};

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
        let mut found = info(row);
        change(&mut found.headers);
        let json = serde_json::to_string(&found.headers)
            .map_err(|e| Error::Internal(format!("object headers: {e}")))?;
        let seen = (found.etag.as_str(), found.modified_at);
        if objects::set_headers(&provider.db, &bucket.id, key, seen, &json).await? {
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
