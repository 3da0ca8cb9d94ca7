//! A bucket's default encryption (Put/Get/DeleteBucketEncryption): SSE-S3
//! (`AES256`) for every write that asks for no encryption; SSE-KMS is
//! refused (NotImplemented) as on writes. Also what a write reads of its
//! bucket's settings in one go ([`defaults`]): the default encryption and
//! the object lock configuration.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::{Front, s3_error};
use crate::lock::{self, Config};
use crate::provider::Bucket;

/// The bucket setting: present (body `"AES256"`) when writes are encrypted
/// by default.
const SETTING: &str = "encryption";

/// What a write takes from its bucket's settings.
pub(super) struct Defaults {
    /// SSE-S3 for writes that ask for no encryption.
    pub encrypt: bool,
    /// The object lock configuration; None without object lock.
    pub lock: Option<Config>,
}

/// The [`Defaults`] of `bucket`, read in one query.
pub(super) async fn defaults(front: &Front, bucket: &Bucket) -> S3Result<Defaults> {
    let settings = front
        .storage
        .provider()
        .bucket_settings(bucket)
        .await
        .map_err(s3_error)?;
    Ok(Defaults {
        encrypt: settings.contains_key(SETTING),
        lock: settings.get(lock::SETTING).map(|b| Config::parse(b)),
    })
}

pub(super) async fn put(
    front: &Front,
    req: S3Request<PutBucketEncryptionInput>,
) -> S3Result<S3Response<PutBucketEncryptionOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let rules = &req.input.server_side_encryption_configuration.rules;
    let [rule] = rules.as_slice() else {
        return Err(S3Error::with_message(
            S3ErrorCode::MalformedXML,
            "ServerSideEncryptionConfiguration needs exactly one Rule",
        ));
    };
    let by_default = rule
        .apply_server_side_encryption_by_default
        .as_ref()
        .ok_or_else(|| {
            S3Error::with_message(
                S3ErrorCode::MalformedXML,
                "Rule needs ApplyServerSideEncryptionByDefault",
            )
        })?;
    match by_default.sse_algorithm.as_str() {
        ServerSideEncryption::AES256 if by_default.kms_master_key_id.is_none() => {}
        ServerSideEncryption::AES256 => {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "KMSMasterKeyID is only allowed with aws:kms",
            ));
        }
        "aws:kms" | "aws:kms:dsse" => {
            return Err(S3Error::with_message(
                S3ErrorCode::NotImplemented,
                "SSE-KMS is not offered; use SSE-S3 (AES256)",
            ));
        }
        _ => {
            return Err(S3Error::with_message(
                S3ErrorCode::MalformedXML,
                "SSEAlgorithm must be AES256",
            ));
        }
    }
    let body = serde_json::Value::from(ServerSideEncryption::AES256).to_string();
    front.put_setting(&bucket, SETTING, Some(&body)).await?;
    Ok(S3Response::new(PutBucketEncryptionOutput::default()))
}

pub(super) async fn get(
    front: &Front,
    req: S3Request<GetBucketEncryptionInput>,
) -> S3Result<S3Response<GetBucketEncryptionOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let found = front
        .storage
        .provider()
        .bucket_setting(&bucket, SETTING)
        .await
        .map_err(s3_error)?;
    if found.is_none() {
        let mut err = S3Error::with_message(
            S3ErrorCode::ServerSideEncryptionConfigurationNotFoundError,
            "the server side encryption configuration was not found",
        );
        err.set_status_code(http::StatusCode::NOT_FOUND);
        return Err(err);
    }
    Ok(S3Response::new(GetBucketEncryptionOutput {
        server_side_encryption_configuration: Some(ServerSideEncryptionConfiguration {
            rules: vec![ServerSideEncryptionRule {
                apply_server_side_encryption_by_default: Some(ServerSideEncryptionByDefault {
                    kms_master_key_id: None,
                    sse_algorithm: ServerSideEncryption::from_static(ServerSideEncryption::AES256),
                }),
                bucket_key_enabled: Some(false),
            }],
        }),
    }))
}

pub(super) async fn delete(
    front: &Front,
    req: S3Request<DeleteBucketEncryptionInput>,
) -> S3Result<S3Response<DeleteBucketEncryptionOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    front.put_setting(&bucket, SETTING, None).await?;
    let mut out = S3Response::new(DeleteBucketEncryptionOutput::default());
    out.status = Some(http::StatusCode::NO_CONTENT);
    Ok(out)
}
