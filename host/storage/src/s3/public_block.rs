//! A bucket's public access block (Put/Get/DeletePublicAccessBlock):
//! `BlockPublicAcls` refuses (AccessDenied) an ACL granting anything to
//! everyone or to any signed request, on the bucket and its objects;
//! `IgnorePublicAcls` makes such grants reach nobody. `BlockPublicPolicy`
//! and `RestrictPublicBuckets` are about bucket policies, which Plateau
//! refuses (NotImplemented): kept and answered, with nothing to act on.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};
use serde::{Deserialize, Serialize};

use super::{Front, internal};
use crate::acl::Grants;
use crate::provider::Bucket;

const KIND: &str = "public_access_block";

/// The four settings; all off where none was put.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub(super) struct Block {
    pub block_public_acls: bool,
    pub ignore_public_acls: bool,
    pub block_public_policy: bool,
    pub restrict_public_buckets: bool,
}

async fn stored(front: &Front, bucket: &Bucket) -> S3Result<Option<Block>> {
    let found = front
        .storage
        .provider()
        .bucket_setting(bucket, KIND)
        .await
        .map_err(internal)?;
    Ok(found.and_then(|json| serde_json::from_str(&json).ok()))
}

/// The bucket's block.
pub(super) async fn of(front: &Front, bucket: &Bucket) -> S3Result<Block> {
    Ok(stored(front, bucket).await?.unwrap_or_default())
}

/// Refuses a public `acl` where the bucket blocks public ACLs.
pub(super) async fn check_acl(front: &Front, bucket: &Bucket, acl: &Grants) -> S3Result<()> {
    if acl.is_public() && of(front, bucket).await?.block_public_acls {
        return Err(S3Error::with_message(
            S3ErrorCode::AccessDenied,
            "the bucket's public access block refuses public ACLs",
        ));
    }
    Ok(())
}

pub(super) async fn put(
    front: &Front,
    req: S3Request<PutPublicAccessBlockInput>,
) -> S3Result<S3Response<PutPublicAccessBlockOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let c = &req.input.public_access_block_configuration;
    let block = Block {
        block_public_acls: c.block_public_acls.unwrap_or(false),
        ignore_public_acls: c.ignore_public_acls.unwrap_or(false),
        block_public_policy: c.block_public_policy.unwrap_or(false),
        restrict_public_buckets: c.restrict_public_buckets.unwrap_or(false),
    };
    let json = serde_json::to_string(&block)
        .map_err(|e| internal(crate::error::Error::Internal(e.to_string())))?;
    front.put_setting(&bucket, KIND, Some(&json)).await?;
    Ok(S3Response::new(PutPublicAccessBlockOutput::default()))
}

pub(super) async fn get(
    front: &Front,
    req: S3Request<GetPublicAccessBlockInput>,
) -> S3Result<S3Response<GetPublicAccessBlockOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let Some(b) = stored(front, &bucket).await? else {
        let mut e = S3Error::with_message(
            S3ErrorCode::Custom("NoSuchPublicAccessBlockConfiguration".into()),
            "the bucket has no public access block",
        );
        e.set_status_code(http::StatusCode::NOT_FOUND);
        return Err(e);
    };
    Ok(S3Response::new(GetPublicAccessBlockOutput {
        public_access_block_configuration: Some(PublicAccessBlockConfiguration {
            block_public_acls: Some(b.block_public_acls),
            ignore_public_acls: Some(b.ignore_public_acls),
            block_public_policy: Some(b.block_public_policy),
            restrict_public_buckets: Some(b.restrict_public_buckets),
        }),
    }))
}

pub(super) async fn delete(
    front: &Front,
    req: S3Request<DeletePublicAccessBlockInput>,
) -> S3Result<S3Response<DeletePublicAccessBlockOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    front.put_setting(&bucket, KIND, None).await?;
    Ok(S3Response::new(DeletePublicAccessBlockOutput::default()))
}
