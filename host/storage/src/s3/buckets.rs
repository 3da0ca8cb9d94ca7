//! The S3 operations on buckets themselves: ListBuckets, HeadBucket,
//! GetBucketLocation, CreateBucket (under the organisation's own names)
//! and DeleteBucket.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::{Front, acl, actor, ownership, s3_error, timestamp};
use crate::names::{self, S3NameError};

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

/// CreateBucket. A bucket the caller's organisation owns answers
/// BucketAlreadyOwnedByYou, which tools that create before they write
/// (rclone, Terraform) accept. A new bucket may be made over S3 under the
/// organisation's own names, `plt-<org>-<rest>` (the spec's naming, the
/// rest the client's): the API's bucket of that name, in no project,
/// audited as the key's, with the canned ACL, grants, ownership rule and
/// object lock the request asks for. Any other valid name answers
/// BucketAlreadyExists (not available), whether a bucket has it or not,
/// so another organisation's names are not told apart.
pub(super) async fn create_bucket(
    front: &Front,
    req: S3Request<CreateBucketInput>,
) -> S3Result<S3Response<CreateBucketOutput>> {
    let principal = front.principal(&req).await?;
    let input = &req.input;
    let provider = front.storage.provider();
    let found = provider
        .bucket_by_name(&input.bucket)
        .await
        .map_err(s3_error)?;
    if let Some(b) = &found
        && b.org_id == principal.org_id
        && principal.may(&b.id, false)
    {
        return Err(S3Error::with_message(
            S3ErrorCode::BucketAlreadyOwnedByYou,
            "your previous request to create the named bucket succeeded and you already own it",
        ));
    }
    match names::check_s3_name(&principal.org_id, &input.bucket) {
        Ok(()) => {}
        Err(S3NameError::Invalid) => {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidBucketName,
                "the specified bucket is not valid",
            ));
        }
        Err(S3NameError::NotOurs) => {
            let mut err = S3Error::with_message(
                S3ErrorCode::BucketAlreadyExists,
                format!(
                    "the requested bucket name is not available: this organisation's buckets are \
                     named {}<name>",
                    names::org_prefix(&principal.org_id)
                ),
            );
            err.set_status_code(http::StatusCode::CONFLICT);
            return Err(err);
        }
    }
    if found.is_some() || principal.read_only || principal.buckets.is_some() {
        return Err(S3Error::with_message(
            S3ErrorCode::AccessDenied,
            "this key may not create buckets (read-only or limited to some buckets)",
        ));
    }
    let rule = input
        .object_ownership
        .as_ref()
        .map(|r| ownership::checked(r.as_str()))
        .transpose()?;
    let sent = [
        &input.grant_read,
        &input.grant_write,
        &input.grant_read_acp,
        &input.grant_write_acp,
        &input.grant_full_control,
    ];
    let canned = input.acl.as_ref().map(BucketCannedACL::as_str);
    let org = principal.org_id.clone();
    let acl_json = acl_of_new(front, &org, canned, sent, rule).await?;
    let bucket = provider
        .create_bucket(
            &org,
            None,
            &input.bucket,
            Some(&input.bucket),
            &actor(&principal),
        )
        .await
        .map_err(s3_error)?;
    if let Some(rule) = rule {
        let json = serde_json::Value::from(rule).to_string();
        front
            .put_setting(&bucket, ownership::KIND, Some(&json))
            .await?;
    }
    if acl_json.is_some() {
        front
            .put_setting(&bucket, acl::KIND, acl_json.as_deref())
            .await?;
    }
    if input.object_lock_enabled_for_bucket == Some(true) {
        crate::lock::enable_on_new(provider, &bucket)
            .await
            .map_err(s3_error)?;
    }
    Ok(S3Response::new(CreateBucketOutput {
        location: Some(format!("/{}", input.bucket)),
    }))
}

/// The stored ACL (None: private) a CreateBucket of a new bucket of
/// organisation `org` asks for with its canned ACL and grant headers (in
/// read, write, read-acp, write-acp, full-control order), under ownership rule `rule`; checked before the
/// bucket is made.
async fn acl_of_new(
    front: &Front,
    org: &str,
    canned: Option<&str>,
    sent: [&Option<String>; 5],
    rule: Option<&str>,
) -> S3Result<Option<String>> {
    let grants = sent.iter().any(|h| h.is_some());
    ownership::check_acl(rule, canned, grants)?;
    let acl = acl::requested(front, canned, sent, None, org, org).await?;
    Ok(acl
        .stored(org)
        .map(|a| serde_json::to_string(&a).unwrap_or_default()))
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
