//! Versioning over S3: PutBucketVersioning (enable or suspend; a bucket
//! never goes back to unversioned), GetBucketVersioning and
//! ListObjectVersions. Reading, copying and deleting by `versionId` are
//! in the modules of those operations.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::headers::{etag, last_modified};
use super::list::{Encoding, max_keys, prefixes};
use super::{Front, s3_error};
use crate::provider::{ListQuery, VersionInfo};

/// The bucket setting that holds the state (a JSON string).
const SETTING: &str = plateau_store::storage::versions::SETTING;

pub(super) async fn get(
    front: &Front,
    req: S3Request<GetBucketVersioningInput>,
) -> S3Result<S3Response<GetBucketVersioningOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let body = front
        .storage
        .provider()
        .bucket_setting(&bucket, SETTING)
        .await
        .map_err(s3_error)?;
    let status = body
        .and_then(|b| serde_json::from_str::<String>(&b).ok())
        .map(BucketVersioningStatus::from);
    Ok(S3Response::new(GetBucketVersioningOutput {
        status,
        ..Default::default()
    }))
}

pub(super) async fn put(
    front: &Front,
    req: S3Request<PutBucketVersioningInput>,
) -> S3Result<S3Response<PutBucketVersioningOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let config = &req.input.versioning_configuration;
    if config
        .mfa_delete
        .as_ref()
        .is_some_and(|m| m.as_str() == MFADelete::ENABLED)
        || req.input.mfa.is_some()
    {
        return Err(S3Error::with_message(
            S3ErrorCode::NotImplemented,
            "MFA delete is not supported",
        ));
    }
    let status = match config.status.as_ref().map(BucketVersioningStatus::as_str) {
        Some(s @ (BucketVersioningStatus::ENABLED | BucketVersioningStatus::SUSPENDED)) => s,
        _ => {
            return Err(S3Error::with_message(
                S3ErrorCode::MalformedXML,
                "Status: must be Enabled or Suspended",
            ));
        }
    };
    if status == BucketVersioningStatus::SUSPENDED
        && super::lock::config(front, &bucket).await?.is_some()
    {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidBucketState,
            "versioning cannot be suspended on a bucket with object lock",
        ));
    }
    // Suspended is kept even on a bucket never versioned, as S3 does: its
    // writes are null versions, and a delete leaves a null delete marker.
    let body = serde_json::Value::from(status).to_string();
    front.put_setting(&bucket, SETTING, Some(&body)).await?;
    Ok(S3Response::new(PutBucketVersioningOutput::default()))
}

pub(super) async fn list(
    front: &Front,
    req: S3Request<ListObjectVersionsInput>,
) -> S3Result<S3Response<ListObjectVersionsOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let input = &req.input;
    let enc = Encoding::of(input.encoding_type.as_ref())?;
    let max = max_keys(input.max_keys)?;
    let query = ListQuery {
        prefix: input.prefix.clone().unwrap_or_default(),
        delimiter: input.delimiter.clone(),
        after: input.key_marker.clone().unwrap_or_default(),
        max_keys: max,
    };
    let listing = front
        .storage
        .provider()
        .list_versions(&bucket, &query, input.version_id_marker.as_deref())
        .await
        .map_err(s3_error)?;
    let (mut versions, mut markers) = (Vec::new(), Vec::new());
    for v in listing.versions {
        let VersionInfo {
            info,
            latest,
            delete_marker,
        } = v;
        if delete_marker {
            markers.push(DeleteMarkerEntry {
                is_latest: Some(latest),
                key: Some(enc.name(&info.key)),
                last_modified: Some(last_modified(&info)),
                owner: Some(super::acl::to_owner(&bucket.org_id)),
                version_id: info.version_id,
            });
        } else {
            versions.push(ObjectVersion {
                e_tag: Some(etag(&info)),
                is_latest: Some(latest),
                key: Some(enc.name(&info.key)),
                last_modified: Some(last_modified(&info)),
                owner: Some(super::acl::owner_of(&info.headers, &bucket)),
                size: Some(info.size as i64),
                storage_class: Some(ObjectVersionStorageClass::from_static(
                    ObjectVersionStorageClass::STANDARD,
                )),
                version_id: info.version_id,
                ..Default::default()
            });
        }
    }
    let next = listing.next.filter(|_| listing.truncated);
    Ok(S3Response::new(ListObjectVersionsOutput {
        name: Some(input.bucket.clone()),
        prefix: enc.opt(&input.prefix),
        delimiter: enc.opt(&input.delimiter),
        key_marker: enc.opt(&input.key_marker),
        version_id_marker: input.version_id_marker.clone(),
        max_keys: Some(max as i32),
        encoding_type: input.encoding_type.clone(),
        is_truncated: Some(listing.truncated),
        next_key_marker: next.as_ref().map(|(k, _)| enc.name(k)),
        next_version_id_marker: next.and_then(|(_, v)| v),
        common_prefixes: prefixes(listing.prefixes, &enc),
        versions: (!versions.is_empty()).then_some(versions),
        delete_markers: (!markers.is_empty()).then_some(markers),
        ..Default::default()
    }))
}

/// Tags are changed on the current version only: naming another version
/// is refused (NotImplemented), never applied to the current one.
pub(super) async fn current_only(
    front: &Front,
    bucket: &crate::provider::Bucket,
    key: &str,
    version: Option<&str>,
) -> S3Result<()> {
    let Some(version) = version else {
        return Ok(());
    };
    let current = front
        .storage
        .provider()
        .head_object(bucket, key)
        .await
        .map_err(s3_error)?;
    if current.version_id.as_deref().unwrap_or("null") != version {
        return Err(S3Error::with_message(
            S3ErrorCode::NotImplemented,
            "versionId: only the current version's tags can be changed",
        ));
    }
    Ok(())
}
