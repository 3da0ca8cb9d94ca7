//! DeleteObject and DeleteObjects, conditional on the version they delete
//! (`If-Match`, `x-amz-if-match-last-modified-time`, `x-amz-if-match-size`,
//! or an entry's `ETag`, `LastModifiedTime` and `Size`): PreconditionFailed
//! when it differs, nothing done when there is no such version.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::lock::bypass;
use super::{Front, actor, s3_error};
use crate::provider::DeleteCondition;

fn millis(t: Timestamp) -> i64 {
    let t = time::OffsetDateTime::from(t);
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000).unwrap_or(i64::MIN)
}

/// A negative size matches no version.
fn size(s: i64) -> u64 {
    u64::try_from(s).unwrap_or(u64::MAX)
}

pub(super) async fn delete_object(
    front: &Front,
    req: S3Request<DeleteObjectInput>,
) -> S3Result<S3Response<DeleteObjectOutput>> {
    let (principal, bucket) = front.writer(&req, &req.input.bucket).await?;
    let input = &req.input;
    let condition = DeleteCondition {
        etag: input.if_match.as_ref().map(|c| match c {
            ETagCondition::Any => "*".to_owned(),
            ETagCondition::ETag(e) => e.value().to_owned(),
        }),
        modified_at: input.if_match_last_modified_time.clone().map(millis),
        size: input.if_match_size.map(size),
    };
    let done = front
        .storage
        .provider()
        .delete_version(
            &bucket,
            &input.key,
            input.version_id.as_deref(),
            bypass(&principal, &bucket, input.bypass_governance_retention),
            &condition,
            &actor(&principal),
        )
        .await
        .map_err(s3_error)?
        .unwrap_or_default();
    let mut out = S3Response::new(DeleteObjectOutput {
        delete_marker: done.delete_marker.then_some(true),
        version_id: done.version_id,
        ..Default::default()
    });
    out.status = Some(http::StatusCode::NO_CONTENT);
    Ok(out)
}

pub(super) async fn delete_objects(
    front: &Front,
    req: S3Request<DeleteObjectsInput>,
) -> S3Result<S3Response<DeleteObjectsOutput>> {
    let (principal, bucket) = front.writer(&req, &req.input.bucket).await?;
    if req.input.delete.objects.len() > 1000 {
        return Err(S3Error::with_message(
            S3ErrorCode::MalformedXML,
            "at most 1000 keys may be deleted at once",
        ));
    }
    let quiet = req.input.delete.quiet.unwrap_or(false);
    let bypass = bypass(&principal, &bucket, req.input.bypass_governance_retention);
    let mut deleted = Vec::new();
    let mut errors = Vec::new();
    for object in &req.input.delete.objects {
        let condition = DeleteCondition {
            etag: object.e_tag.as_ref().map(|e| e.value().to_owned()),
            modified_at: object.last_modified_time.clone().map(millis),
            size: object.size.map(size),
        };
        let version = object.version_id.as_deref();
        let who = actor(&principal);
        match front
            .storage
            .provider()
            .delete_version(&bucket, &object.key, version, bypass, &condition, &who)
            .await
        {
            Ok(done) => {
                let done = done.unwrap_or_default();
                if !quiet {
                    let marker = done.delete_marker.then_some(true);
                    deleted.push(DeletedObject {
                        key: Some(object.key.clone()),
                        delete_marker: marker,
                        delete_marker_version_id: if version.is_none() && done.delete_marker {
                            done.version_id.clone()
                        } else {
                            None
                        },
                        version_id: version.map(str::to_owned),
                    });
                }
            }
            Err(e) => {
                let err = s3_error(e);
                errors.push(s3s::dto::Error {
                    code: Some(err.code().as_str().to_owned()),
                    key: Some(object.key.clone()),
                    message: err.message().map(str::to_owned),
                    version_id: object.version_id.clone(),
                });
            }
        }
    }
    Ok(S3Response::new(DeleteObjectsOutput {
        deleted: Some(deleted),
        errors: (!errors.is_empty()).then_some(errors),
        ..Default::default()
    }))
}
