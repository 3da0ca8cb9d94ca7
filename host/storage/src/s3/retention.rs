//! Object lock over S3, a version's side: Put/GetObjectRetention and
//! Put/GetObjectLegalHold, on the current version or the one named. A
//! change is refused (AccessDenied) where [`crate::lock::may_replace`]
//! says, checked on the version as it is when the change is written.

use std::sync::Arc;

use plateau_core::time;
use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::lock::{bypass, future, required};
use super::{Front, s3_error, timestamp};
use crate::error::Error;
use crate::lock::{Mode, Retention, may_replace};

fn malformed(message: &str) -> S3Error {
    S3Error::with_message(S3ErrorCode::MalformedXML, message.to_owned())
}

fn no_config(what: &str) -> S3Error {
    S3Error::with_message(
        S3ErrorCode::NoSuchObjectLockConfiguration,
        format!("the object has no {what}"),
    )
}

pub(super) async fn put_retention(
    front: &Front,
    req: S3Request<PutObjectRetentionInput>,
) -> S3Result<S3Response<PutObjectRetentionOutput>> {
    let (principal, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let input = &req.input;
    required(front, &bucket).await?;
    let now = time::now_ms();
    let new = match &input.retention {
        None => None,
        Some(r) if r.mode.is_none() && r.retain_until_date.is_none() => None,
        Some(r) => {
            let mode = r
                .mode
                .as_ref()
                .and_then(|m| Mode::parse(m.as_str()))
                .ok_or_else(|| malformed("Retention.Mode must be GOVERNANCE or COMPLIANCE"))?;
            let until = r
                .retain_until_date
                .as_ref()
                .ok_or_else(|| malformed("Retention needs a RetainUntilDate"))?;
            Some(Retention {
                mode,
                until: future(until, now)?,
            })
        }
    };
    let bypass = bypass(&principal, &bucket, input.bypass_governance_retention);
    let change = Arc::new(move |h: &mut crate::provider::ObjectHeaders| {
        if !may_replace(h.retention, new, time::now_ms(), bypass) {
            return Err(Error::ObjectLocked);
        }
        h.retention = new;
        Ok(())
    });
    front
        .storage
        .provider()
        .change_version(&bucket, &input.key, input.version_id.as_deref(), change)
        .await
        .map_err(s3_error)?;
    Ok(S3Response::new(PutObjectRetentionOutput::default()))
}

pub(super) async fn get_retention(
    front: &Front,
    req: S3Request<GetObjectRetentionInput>,
) -> S3Result<S3Response<GetObjectRetentionOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    required(front, &bucket).await?;
    let info = front
        .version(&bucket, &req.input.key, req.input.version_id.as_deref())
        .await?;
    let r = info
        .headers
        .retention
        .ok_or_else(|| no_config("retention"))?;
    Ok(S3Response::new(GetObjectRetentionOutput {
        retention: Some(ObjectLockRetention {
            mode: Some(ObjectLockRetentionMode::from(r.mode.as_str().to_owned())),
            retain_until_date: Some(timestamp(r.until)),
        }),
    }))
}

pub(super) async fn put_legal_hold(
    front: &Front,
    req: S3Request<PutObjectLegalHoldInput>,
) -> S3Result<S3Response<PutObjectLegalHoldOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let input = &req.input;
    required(front, &bucket).await?;
    let status = input
        .legal_hold
        .as_ref()
        .and_then(|h| h.status.as_ref())
        .map(ObjectLockLegalHoldStatus::as_str);
    let on = match status {
        Some(ObjectLockLegalHoldStatus::ON) => true,
        Some(ObjectLockLegalHoldStatus::OFF) => false,
        _ => return Err(malformed("LegalHold.Status must be ON or OFF")),
    };
    let change = Arc::new(move |h: &mut crate::provider::ObjectHeaders| {
        h.legal_hold = on;
        Ok(())
    });
    front
        .storage
        .provider()
        .change_version(&bucket, &input.key, input.version_id.as_deref(), change)
        .await
        .map_err(s3_error)?;
    Ok(S3Response::new(PutObjectLegalHoldOutput::default()))
}

pub(super) async fn get_legal_hold(
    front: &Front,
    req: S3Request<GetObjectLegalHoldInput>,
) -> S3Result<S3Response<GetObjectLegalHoldOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    required(front, &bucket).await?;
    let info = front
        .version(&bucket, &req.input.key, req.input.version_id.as_deref())
        .await?;
    let status = if info.headers.legal_hold {
        ObjectLockLegalHoldStatus::ON
    } else {
        ObjectLockLegalHoldStatus::OFF
    };
    Ok(S3Response::new(GetObjectLegalHoldOutput {
        legal_hold: Some(ObjectLockLegalHold {
            status: Some(ObjectLockLegalHoldStatus::from_static(status)),
        }),
    }))
}
