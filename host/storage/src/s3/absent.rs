//! Configurations Plateau does not offer yet, read as S3 reads them on a
//! bucket that never had them (tools such as Terraform and rclone ask):
//! versioning never enabled (an empty status), no lifecycle rules
//! (NoSuchLifecycleConfiguration). Setting either is refused with
//! NotImplemented by `s3s`'s defaults, never accepted and ignored.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::Front;

pub(super) async fn versioning(
    front: &Front,
    req: S3Request<GetBucketVersioningInput>,
) -> S3Result<S3Response<GetBucketVersioningOutput>> {
    front.bucket(&req, &req.input.bucket, false).await?;
    Ok(S3Response::new(GetBucketVersioningOutput::default()))
}

pub(super) async fn lifecycle(
    front: &Front,
    req: S3Request<GetBucketLifecycleConfigurationInput>,
) -> S3Result<S3Response<GetBucketLifecycleConfigurationOutput>> {
    front.bucket(&req, &req.input.bucket, false).await?;
    Err(S3Error::with_message(
        S3ErrorCode::NoSuchLifecycleConfiguration,
        "the lifecycle configuration does not exist",
    ))
}
