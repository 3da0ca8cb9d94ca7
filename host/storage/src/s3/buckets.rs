//! The S3 operations on buckets themselves: ListBuckets, HeadBucket,
//! GetBucketLocation, CreateBucket (answered, never done) and DeleteBucket.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::{Front, actor, s3_error, timestamp};

/// The organisation's buckets the key reaches, oldest first; with
/// `MaxBuckets`, a page of them (1 to 10000), the next page after the
/// bucket its `ContinuationToken` names; `Prefix` keeps the names that
/// start with it.
pub(super) async fn list_buckets(
    front: &Front,
    req: S3Request<ListBucketsInput>,
) -> S3Result<S3Response<ListBucketsOutput>> {
    let principal = front.principal(&req).await?;
    let input = &req.input;
    if input
        .max_buckets
        .is_some_and(|m| !(1..=10_000).contains(&m))
    {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "max-buckets must be between 1 and 10000",
        ));
    }
    let prefix = input.prefix.as_deref().unwrap_or_default();
    let all: Vec<_> = front
        .storage
        .provider()
        .buckets(&principal.org_id)
        .await
        .map_err(s3_error)?
        .into_iter()
        .filter(|b| principal.may(&b.id, false) && b.bucket.starts_with(prefix))
        .collect();
    let start = match input
        .continuation_token
        .as_deref()
        .filter(|t| !t.is_empty())
    {
        None => 0,
        Some(token) => all
            .iter()
            .position(|b| b.bucket == token)
            .map(|i| i + 1)
            .ok_or_else(|| {
                S3Error::with_message(
                    S3ErrorCode::InvalidArgument,
                    "the continuation token names no bucket of this listing",
                )
            })?,
    };
    let max = input.max_buckets.map_or(usize::MAX, |m| m as usize);
    let page: Vec<_> = all.iter().skip(start).take(max).collect();
    let more = start + page.len() < all.len();
    let continuation_token = more
        .then(|| page.last().map(|b| b.bucket.clone()))
        .flatten();
    let buckets = page
        .into_iter()
        .map(|b| Bucket {
            creation_date: Some(timestamp(b.created_at)),
            name: Some(b.bucket.clone()),
            bucket_region: None,
        })
        .collect();
    Ok(S3Response::new(ListBucketsOutput {
        buckets: Some(buckets),
        owner: Some(Owner {
            display_name: None,
            id: Some(principal.org_id.clone()),
        }),
        continuation_token,
        prefix: input.prefix.clone(),
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
