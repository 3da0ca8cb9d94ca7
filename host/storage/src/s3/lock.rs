//! Object lock over S3, the bucket's side: Put/GetObjectLockConfiguration,
//! the lock a write asks for (`x-amz-object-lock-*`) or the bucket's
//! default retention gives it, the lock fields of HEAD and GET, and who
//! may bypass a GOVERNANCE retention. The rules are [`crate::lock`]'s.

use plateau_core::time;
use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::{Front, s3_error, timestamp};
use crate::keys::Principal;
use crate::lock::{self, Config, DefaultRetention, Mode, Retention};
use crate::provider::{Bucket, ObjectHeaders};

/// Whether `x-amz-bypass-governance-retention` is honoured: it is asked,
/// and the key is one of the organisation's unlimited keys (writes every
/// bucket), the nearest Plateau has to S3's BypassGovernanceRetention
/// permission; a key limited to some buckets, or of another organisation
/// (writing by an ACL's grant), never bypasses.
pub(super) fn bypass(principal: &Principal, bucket: &Bucket, asked: Option<bool>) -> bool {
    asked == Some(true)
        && !principal.read_only
        && principal.buckets.is_none()
        && principal.org_id == bucket.org_id
}

fn malformed(message: &str) -> S3Error {
    S3Error::with_message(S3ErrorCode::MalformedXML, message.to_owned())
}

pub(super) fn invalid_request(message: &str) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidRequest, message.to_owned())
}

/// The bucket's object lock configuration; None when object lock is not
/// enabled on it.
pub(super) async fn config(front: &Front, bucket: &Bucket) -> S3Result<Option<Config>> {
    let body = front
        .storage
        .provider()
        .bucket_setting(bucket, lock::SETTING)
        .await
        .map_err(s3_error)?;
    Ok(body.as_deref().map(Config::parse))
}

/// As [`config`], refusing a bucket without object lock (InvalidRequest).
pub(super) async fn required(front: &Front, bucket: &Bucket) -> S3Result<Config> {
    config(front, bucket)
        .await?
        .ok_or_else(|| invalid_request("Bucket is missing Object Lock Configuration"))
}

pub(super) async fn put_config(
    front: &Front,
    req: S3Request<PutObjectLockConfigurationInput>,
) -> S3Result<S3Response<PutObjectLockConfigurationOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    if req.input.token.is_some() {
        return Err(S3Error::with_message(
            S3ErrorCode::NotImplemented,
            "x-amz-bucket-object-lock-token is not supported",
        ));
    }
    let conf = req
        .input
        .object_lock_configuration
        .as_ref()
        .ok_or_else(|| malformed("ObjectLockConfiguration is required"))?;
    if conf
        .object_lock_enabled
        .as_ref()
        .map(ObjectLockEnabled::as_str)
        != Some(ObjectLockEnabled::ENABLED)
    {
        return Err(malformed("ObjectLockEnabled must be Enabled"));
    }
    let default_retention = match &conf.rule {
        None => None,
        Some(rule) => Some(default_retention(rule.default_retention.as_ref())?),
    };
    if config(front, &bucket).await?.is_none() {
        // Object lock is enabled on an existing bucket only where
        // versioning is enabled, as S3 does.
        let state = front
            .storage
            .provider()
            .bucket_setting(&bucket, plateau_store::storage::versions::SETTING)
            .await
            .map_err(s3_error)?;
        use plateau_store::storage::versions::Versioning;
        if Versioning::parse(state.as_deref()) != Versioning::Enabled {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidBucketState,
                "versioning must be enabled on the bucket to enable object lock",
            ));
        }
    }
    enable(front, &bucket, &Config { default_retention }).await?;
    Ok(S3Response::new(PutObjectLockConfigurationOutput::default()))
}

/// Stores the bucket's configuration (object lock enabled).
pub(super) async fn enable(front: &Front, bucket: &Bucket, config: &Config) -> S3Result<()> {
    let body = serde_json::to_string(config)
        .map_err(|e| super::internal(crate::Error::Internal(format!("object lock config: {e}"))))?;
    front
        .put_setting(bucket, lock::SETTING, Some(&body))
        .await?;
    Ok(())
}

fn default_retention(d: Option<&s3s::dto::DefaultRetention>) -> S3Result<DefaultRetention> {
    let d = d.ok_or_else(|| malformed("Rule needs a DefaultRetention"))?;
    let mode = d
        .mode
        .as_ref()
        .and_then(|m| Mode::parse(m.as_str()))
        .ok_or_else(|| malformed("DefaultRetention.Mode must be GOVERNANCE or COMPLIANCE"))?;
    let period = match (d.days, d.years) {
        (Some(_), Some(_)) | (None, None) => {
            return Err(malformed(
                "DefaultRetention needs exactly one of Days and Years",
            ));
        }
        (Some(n), None) | (None, Some(n)) => n,
    };
    if period <= 0 {
        let mut err = S3Error::with_message(
            S3ErrorCode::Custom("InvalidRetentionPeriod".into()),
            "the retention period must be a positive number of days or years",
        );
        err.set_status_code(http::StatusCode::BAD_REQUEST);
        return Err(err);
    }
    Ok(DefaultRetention {
        mode,
        days: d.days,
        years: d.years,
    })
}

pub(super) async fn get_config(
    front: &Front,
    req: S3Request<GetObjectLockConfigurationInput>,
) -> S3Result<S3Response<GetObjectLockConfigurationOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let Some(config) = config(front, &bucket).await? else {
        return Err(S3Error::with_message(
            S3ErrorCode::ObjectLockConfigurationNotFoundError,
            "Object Lock configuration does not exist for this bucket",
        ));
    };
    let rule = config.default_retention.map(|d| ObjectLockRule {
        default_retention: Some(s3s::dto::DefaultRetention {
            days: d.days,
            mode: Some(ObjectLockRetentionMode::from(d.mode.as_str().to_owned())),
            years: d.years,
        }),
    });
    Ok(S3Response::new(GetObjectLockConfigurationOutput {
        object_lock_configuration: Some(ObjectLockConfiguration {
            object_lock_enabled: Some(ObjectLockEnabled::from_static(ObjectLockEnabled::ENABLED)),
            rule,
        }),
    }))
}

/// The lock of a new version in a bucket of object lock `config`: the
/// one the write asks for (`mode` and `until` together, a legal hold),
/// else the bucket's default retention. A bucket without object lock
/// refuses a write that asks for one.
pub(super) fn for_write(
    config: Option<&Config>,
    mode: Option<&ObjectLockMode>,
    until: Option<&Timestamp>,
    hold: Option<&ObjectLockLegalHoldStatus>,
    headers: &mut ObjectHeaders,
) -> S3Result<()> {
    let asked = mode.is_some() || until.is_some() || hold.is_some();
    let Some(config) = config else {
        if asked {
            return Err(invalid_request(
                "Bucket is missing Object Lock Configuration",
            ));
        }
        return Ok(());
    };
    let now = time::now_ms();
    headers.retention = match (mode, until) {
        (Some(m), Some(t)) => Some(Retention {
            mode: Mode::parse(m.as_str()).ok_or_else(|| {
                S3Error::with_message(
                    S3ErrorCode::InvalidArgument,
                    "x-amz-object-lock-mode must be GOVERNANCE or COMPLIANCE",
                )
            })?,
            until: future(t, now)?,
        }),
        (None, None) => config.default_retention.map(|d| d.at(now)),
        _ => {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "x-amz-object-lock-mode and x-amz-object-lock-retain-until-date must be given together",
            ));
        }
    };
    headers.legal_hold = match hold.map(ObjectLockLegalHoldStatus::as_str) {
        None | Some(ObjectLockLegalHoldStatus::OFF) => false,
        Some(ObjectLockLegalHoldStatus::ON) => true,
        Some(_) => {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "x-amz-object-lock-legal-hold must be ON or OFF",
            ));
        }
    };
    Ok(())
}

/// A retain-until date, in milliseconds; it must be in the future.
pub(super) fn future(t: &Timestamp, now: i64) -> S3Result<i64> {
    let t: ::time::OffsetDateTime = t.clone().into();
    let ms = (t.unix_timestamp_nanos() / 1_000_000) as i64;
    if ms <= now {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "the retain until date must be in the future",
        ));
    }
    Ok(ms)
}

/// The lock fields of HEAD and GET: mode, retain-until date, legal hold.
pub(super) type Fields = (
    Option<ObjectLockMode>,
    Option<Timestamp>,
    Option<ObjectLockLegalHoldStatus>,
);

/// What [`Fields`] a version's headers show.
pub(super) fn fields(h: &ObjectHeaders) -> Fields {
    (
        h.retention
            .map(|r| ObjectLockMode::from(r.mode.as_str().to_owned())),
        h.retention.map(|r| timestamp(r.until)),
        h.legal_hold
            .then(|| ObjectLockLegalHoldStatus::from_static(ObjectLockLegalHoldStatus::ON)),
    )
}
