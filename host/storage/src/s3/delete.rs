//! DeleteObject and DeleteObjects.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::lock::bypass;
use super::{Front, actor, s3_error};

pub(super) async fn delete_object(
    front: &Front,
    req: S3Request<DeleteObjectInput>,
) -> S3Result<S3Response<DeleteObjectOutput>> {
    let (principal, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let input = &req.input;
    if input.if_match.is_some()
        || input.if_match_last_modified_time.is_some()
        || input.if_match_size.is_some()
    {
        // Refused rather than ignored: the delete would not be conditional.
        return Err(S3Error::with_message(
            S3ErrorCode::NotImplemented,
            "conditional DeleteObject (If-Match) is not supported",
        ));
    }
    let done = front
        .storage
        .provider()
        .delete_version(
            &bucket,
            &input.key,
            input.version_id.as_deref(),
            bypass(&principal, input.bypass_governance_retention),
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
    let (principal, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    if req.input.delete.objects.len() > 1000 {
        return Err(S3Error::with_message(
            S3ErrorCode::MalformedXML,
            "at most 1000 keys may be deleted at once",
        ));
    }
    let quiet = req.input.delete.quiet.unwrap_or(false);
    let bypass = bypass(&principal, req.input.bypass_governance_retention);
    let mut deleted = Vec::new();
    let mut errors = Vec::new();
    for object in &req.input.delete.objects {
        if object.e_tag.is_some() || object.last_modified_time.is_some() || object.size.is_some() {
            // Refused rather than ignored: the delete would not be conditional.
            errors.push(s3s::dto::Error {
                code: Some("NotImplemented".to_owned()),
                key: Some(object.key.clone()),
                message: Some(
                    "conditional deletes (ETag, LastModifiedTime, Size) are not supported"
                        .to_owned(),
                ),
                version_id: object.version_id.clone(),
            });
            continue;
        }
        let version = object.version_id.as_deref();
        match front
            .storage
            .provider()
            .delete_version(&bucket, &object.key, version, bypass, &actor(&principal))
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
