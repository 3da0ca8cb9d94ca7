//! The S3 operations on buckets themselves: ListBuckets, HeadBucket,
//! GetBucketLocation, CreateBucket (answered, never done) and DeleteBucket.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::{Front, actor, s3_error, timestamp};

pub(super) async fn list_buckets(
    front: &Front,
    req: S3Request<ListBucketsInput>,
) -> S3Result<S3Response<ListBucketsOutput>> {
    let principal = front.principal(&req).await?;
    let buckets = front
        .storage
        .provider()
        .buckets(&principal.org_id)
        .await
        .map_err(s3_error)?
        .into_iter()
        .filter(|b| principal.may(&b.id, false))
        .map(|b| Bucket {
            creation_date: Some(timestamp(b.created_at)),
            name: Some(b.bucket),
            bucket_region: None,
        })
        .collect();
    Ok(S3Response::new(ListBucketsOutput {
        buckets: Some(buckets),
        owner: Some(Owner {
            display_name: None,
            id: Some(principal.org_id.clone()),
        }),
        ..Default::default()
    }))
}

pub(super) async fn head_bucket(
    front: &Front,
    req: S3Request<HeadBucketInput>,
) -> S3Result<S3Response<HeadBucketOutput>> {
    front.bucket(&req, &req.input.bucket, false).await?;
    Ok(S3Response::new(HeadBucketOutput::default()))
}

pub(super) async fn get_bucket_location(
    front: &Front,
    req: S3Request<GetBucketLocationInput>,
) -> S3Result<S3Response<GetBucketLocationOutput>> {
    front.bucket(&req, &req.input.bucket, false).await?;
    Ok(S3Response::new(GetBucketLocationOutput::default()))
}

/// A bucket is made over the API (it belongs to a project, counts
/// against the plan and is audited); over S3, a bucket the caller's
/// organisation already owns answers BucketAlreadyOwnedByYou, which
/// tools that create before they write (rclone, Terraform) accept.
pub(super) async fn create_bucket(
    front: &Front,
    req: S3Request<CreateBucketInput>,
) -> S3Result<S3Response<CreateBucketOutput>> {
    let principal = front.principal(&req).await?;
    let found = front
        .storage
        .provider()
        .bucket_by_name(&req.input.bucket)
        .await
        .map_err(s3_error)?;
    match found {
        Some(b) if b.org_id == principal.org_id && principal.may(&b.id, false) => {
            Err(S3Error::with_message(
                S3ErrorCode::BucketAlreadyOwnedByYou,
                "your previous request to create the named bucket succeeded and you already own it",
            ))
        }
        // Another organisation's name is not said to exist.
        _ => Err(S3Error::with_message(
            S3ErrorCode::AccessDenied,
            "buckets are created over the API: POST /api/v1/storage/buckets",
        )),
    }
}

/// An empty bucket may be deleted by a key that may write it, as the
/// API's DELETE would (its event names the key).
pub(super) async fn delete_bucket(
    front: &Front,
    req: S3Request<DeleteBucketInput>,
) -> S3Result<S3Response<DeleteBucketOutput>> {
    let (principal, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    front
        .storage
        .provider()
        .delete_bucket(&bucket, &actor(&principal))
        .await
        .map_err(s3_error)?;
    let mut out = S3Response::new(DeleteBucketOutput::default());
    out.status = Some(http::StatusCode::NO_CONTENT);
    Ok(out)
}
