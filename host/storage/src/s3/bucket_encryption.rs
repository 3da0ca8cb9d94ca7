//! A bucket's default encryption (Put/Get/DeleteBucketEncryption): SSE-S3
//! (`AES256`) or SSE-KMS (`aws:kms` with a key of the bucket's
//! organisation, [`crate::kms`]) for every write that asks for no
//! encryption. Also what a write reads of its bucket's settings in one go
//! ([`defaults`]): the default encryption and the object lock
//! configuration.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::{Front, s3_error};
use crate::kms::KmsKey;
use crate::lock::{self, Config};
use crate::provider::Bucket;

/// The bucket setting: present when writes are encrypted by default; its
/// body `"AES256"` for SSE-S3, a [`KmsKey`] object for SSE-KMS.
const SETTING: &str = "encryption";

/// How a bucket encrypts the writes that ask for no encryption.
#[derive(Debug, PartialEq)]
pub(super) enum ByDefault {
    S3,
    Kms(KmsKey),
}

impl ByDefault {
    fn parse(body: &str) -> ByDefault {
        serde_json::from_str(body).map_or(ByDefault::S3, ByDefault::Kms)
    }

    fn body(&self) -> String {
        match self {
            ByDefault::S3 => serde_json::Value::from(ServerSideEncryption::AES256).to_string(),
            ByDefault::Kms(key) => serde_json::to_string(key).expect("a key serializes"),
        }
    }
}

/// What a write takes from its bucket's settings.
pub(super) struct Defaults {
    /// The encryption of writes that ask for none.
    pub encryption: Option<ByDefault>,
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
        encryption: settings.get(SETTING).map(|b| ByDefault::parse(b)),
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
    let key_id = by_default.kms_master_key_id.as_deref();
    let setting = match by_default.sse_algorithm.as_str() {
        ServerSideEncryption::AES256 if key_id.is_none() => ByDefault::S3,
        ServerSideEncryption::AES256 => {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "KMSMasterKeyID is only allowed with aws:kms",
            ));
        }
        // The key is the bucket's organisation's, whoever writes.
        ServerSideEncryption::AWS_KMS => ByDefault::Kms(super::encryption::kms_key(
            &bucket.org_id,
            key_id,
            rule.bucket_key_enabled.unwrap_or(false),
        )?),
        ServerSideEncryption::AWS_KMS_DSSE => {
            return Err(S3Error::with_message(
                S3ErrorCode::NotImplemented,
                "dual-layer SSE-KMS is not offered; use aws:kms",
            ));
        }
        _ => {
            return Err(S3Error::with_message(
                S3ErrorCode::MalformedXML,
                "SSEAlgorithm must be AES256 or aws:kms",
            ));
        }
    };
    front
        .put_setting(&bucket, SETTING, Some(&setting.body()))
        .await?;
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
    let by_default = found.as_deref().map(ByDefault::parse);
    let (algorithm, key) = match &by_default {
        Some(ByDefault::Kms(key)) => (ServerSideEncryption::AWS_KMS, Some(key)),
        _ => (ServerSideEncryption::AES256, None),
    };
    Ok(S3Response::new(GetBucketEncryptionOutput {
        server_side_encryption_configuration: Some(ServerSideEncryptionConfiguration {
            rules: vec![ServerSideEncryptionRule {
                apply_server_side_encryption_by_default: Some(ServerSideEncryptionByDefault {
                    kms_master_key_id: key.map(|k| k.id.clone()),
                    sse_algorithm: ServerSideEncryption::from_static(algorithm),
                }),
                bucket_key_enabled: Some(key.is_some_and(|k| k.bucket_key)),
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
