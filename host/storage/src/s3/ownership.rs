//! Bucket ownership controls (Put/Get/DeleteBucketOwnershipControls): who
//! owns an object another organisation writes (with a WRITE grant).
//! `ObjectWriter` (the default): the writer; `BucketOwnerPreferred`: the
//! bucket's organisation when the write asks for
//! `bucket-owner-full-control`; `BucketOwnerEnforced`: always the
//! bucket's organisation, and ACLs are off (any ACL but `private` or
//! `bucket-owner-full-control` is refused, AccessControlListNotSupported,
//! and no grant reaches anyone outside the organisation). As in S3, it is
//! only set on a bucket whose ACL grants nothing beyond its owner's full
//! control (InvalidBucketAclWithObjectOwnership).

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::{Front, acl, internal};
use crate::provider::Bucket;

pub(super) const KIND: &str = "ownership";
pub(super) const ENFORCED: &str = "BucketOwnerEnforced";
const PREFERRED: &str = "BucketOwnerPreferred";
const WRITER: &str = "ObjectWriter";

/// The bucket's rule (None: ObjectWriter, never set).
pub(super) async fn of(front: &Front, bucket: &Bucket) -> S3Result<Option<String>> {
    let found = front
        .storage
        .provider()
        .bucket_setting(bucket, KIND)
        .await
        .map_err(internal)?;
    Ok(found.and_then(|json| serde_json::from_str(&json).ok()))
}

/// Refuses an ACL where the bucket's rule turns ACLs off.
pub(super) fn check_acl(rule: Option<&str>, canned: Option<&str>, grants: bool) -> S3Result<()> {
    let allowed = matches!(canned, None | Some("private" | "bucket-owner-full-control"));
    if rule == Some(ENFORCED) && (grants || !allowed) {
        return Err(S3Error::with_message(
            S3ErrorCode::AccessControlListNotSupported,
            "the bucket does not allow ACLs",
        ));
    }
    Ok(())
}

/// The owner of an object `writer` writes with `canned` into a bucket of
/// `bucket_owner` under `rule`.
pub(super) fn owner<'a>(
    rule: Option<&str>,
    canned: Option<&str>,
    writer: &'a str,
    bucket_owner: &'a str,
) -> &'a str {
    match rule {
        Some(ENFORCED) => bucket_owner,
        Some(PREFERRED) if canned == Some("bucket-owner-full-control") => bucket_owner,
        _ => writer,
    }
}

/// `rule` if it is one of the three rules.
pub(super) fn checked(rule: &str) -> S3Result<&str> {
    if ![ENFORCED, PREFERRED, WRITER].contains(&rule) {
        return Err(invalid(&format!("ObjectOwnership: {rule} is not a rule")));
    }
    Ok(rule)
}

fn invalid(message: &str) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidRequest, message.to_owned())
}

pub(super) async fn put(
    front: &Front,
    req: S3Request<PutBucketOwnershipControlsInput>,
) -> S3Result<S3Response<PutBucketOwnershipControlsOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let [rule] = req.input.ownership_controls.rules.as_slice() else {
        return Err(S3Error::with_message(
            S3ErrorCode::MalformedXML,
            "OwnershipControls needs exactly one Rule",
        ));
    };
    let rule = checked(rule.object_ownership.as_str())?;
    if rule == ENFORCED && acl::of_bucket(front, &bucket).await?.grants.len() > 1 {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidBucketAclWithObjectOwnership,
            "BucketOwnerEnforced needs a private bucket ACL",
        ));
    }
    let json = serde_json::Value::from(rule).to_string();
    front.put_setting(&bucket, KIND, Some(&json)).await?;
    Ok(S3Response::new(PutBucketOwnershipControlsOutput::default()))
}

pub(super) async fn get(
    front: &Front,
    req: S3Request<GetBucketOwnershipControlsInput>,
) -> S3Result<S3Response<GetBucketOwnershipControlsOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let Some(rule) = of(front, &bucket).await? else {
        return Err(S3Error::with_message(
            S3ErrorCode::OwnershipControlsNotFoundError,
            "the bucket has no ownership controls",
        ));
    };
    Ok(S3Response::new(GetBucketOwnershipControlsOutput {
        ownership_controls: Some(OwnershipControls {
            rules: vec![OwnershipControlsRule {
                object_ownership: ObjectOwnership::from(rule),
            }],
        }),
    }))
}

pub(super) async fn delete(
    front: &Front,
    req: S3Request<DeleteBucketOwnershipControlsInput>,
) -> S3Result<S3Response<DeleteBucketOwnershipControlsOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    front.put_setting(&bucket, KIND, None).await?;
    Ok(S3Response::new(
        DeleteBucketOwnershipControlsOutput::default(),
    ))
}
