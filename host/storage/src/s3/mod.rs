//! The S3-compatible endpoint, on its own listener. `s3s` speaks the
//! protocol (SigV4 in headers and query, aws-chunked bodies, XML errors);
//! this module authenticates keys ([`S3Auth`] over [`crate::keys`]),
//! resolves buckets with tenant isolation, and calls the [`Provider`].
//!
//! A bucket outside the key's organisation answers AccessDenied whether
//! or not it exists; NoSuchBucket is only said of names in the key's own
//! namespace (`plt-<org>-`).

mod acl;
mod attributes;
mod auth;
mod bucket_encryption;
mod buckets;
mod copy;
mod cors;
mod date;
mod delete;
mod encryption;
mod entry;
mod fields;
mod form;
mod headers;
mod lifecycle;
mod list;
mod lock;
mod multipart;
mod objects;
mod ops;
mod ownership;
mod part_copy;
mod public_block;
mod read;
mod retention;
mod tagging;
mod uploads;
mod verify;
mod versioning;

use plateau_store::events::Actor;
use s3s::{S3Error, S3ErrorCode, S3Result};

use crate::Storage;
use crate::error::Error;
use crate::keys::Principal;
use crate::provider::{Bucket, ObjectInfo};

pub use entry::{Service, serve, service};

/// The S3 operations.
pub struct Front {
    storage: Storage,
}

impl Front {
    /// Stores the bucket's setting `kind` (`None` removes it), in S3's
    /// error; true if it changed.
    pub(super) async fn put_setting(
        &self,
        bucket: &Bucket,
        kind: &str,
        value: Option<&str>,
    ) -> S3Result<bool> {
        self.storage
            .provider()
            .set_bucket_setting(bucket, kind, value)
            .await
            .map_err(s3_error)
    }

    /// The version `version_id` of `key` (the current one for None), as
    /// the operations on one version's extras (ACL, tags, retention,
    /// attributes) read it: NoSuchKey, NoSuchVersion or a delete
    /// marker's MethodNotAllowed as S3 says them.
    async fn version(
        &self,
        bucket: &Bucket,
        key: &str,
        version_id: Option<&str>,
    ) -> S3Result<ObjectInfo> {
        let opened = self.storage.provider().open(bucket, key, version_id).await;
        Ok(opened.map_err(s3_error)?.info)
    }
}

pub(crate) fn internal(e: Error) -> S3Error {
    tracing::error!(error = %e, "storage request failed");
    S3Error::with_message(S3ErrorCode::InternalError, "internal error; try again")
}

/// A storage error as S3 says it.
pub(crate) fn s3_error(e: Error) -> S3Error {
    let code = match &e {
        Error::NoSuchBucket => S3ErrorCode::NoSuchBucket,
        Error::NoSuchKey | Error::DeletedKey => {
            let mut err = S3Error::with_message(S3ErrorCode::NoSuchKey, e.to_string());
            let marker = matches!(e, Error::DeletedKey);
            let mut headers = http::HeaderMap::new();
            headers.insert(
                "x-amz-delete-marker",
                http::HeaderValue::from_static(if marker { "true" } else { "false" }),
            );
            err.set_headers(headers);
            return err;
        }
        Error::NoSuchUpload => S3ErrorCode::NoSuchUpload,
        Error::NoSuchVersion => S3ErrorCode::NoSuchVersion,
        Error::DeleteMarker(id) => {
            let mut err = S3Error::with_message(S3ErrorCode::MethodNotAllowed, e.to_string());
            err.set_status_code(http::StatusCode::METHOD_NOT_ALLOWED);
            let mut headers = http::HeaderMap::new();
            headers.insert(
                "x-amz-delete-marker",
                http::HeaderValue::from_static("true"),
            );
            if let Ok(v) = http::HeaderValue::from_str(id) {
                headers.insert("x-amz-version-id", v);
            }
            err.set_headers(headers);
            return err;
        }
        Error::BucketNotEmpty => S3ErrorCode::BucketNotEmpty,
        Error::NameTaken(_) => S3ErrorCode::BucketAlreadyOwnedByYou,
        Error::QuotaExceeded(_) => {
            let mut err =
                S3Error::with_message(S3ErrorCode::Custom("QuotaExceeded".into()), e.to_string());
            err.set_status_code(http::StatusCode::FORBIDDEN);
            return err;
        }
        Error::InvalidPart(_) => S3ErrorCode::InvalidPart,
        Error::InvalidPartOrder => S3ErrorCode::InvalidPartOrder,
        Error::EntityTooSmall => S3ErrorCode::EntityTooSmall,
        Error::EntityTooLarge => S3ErrorCode::EntityTooLarge,
        Error::IncompleteBody => S3ErrorCode::IncompleteBody,
        Error::InvalidRange => S3ErrorCode::InvalidRange,
        Error::InvalidArgument(_) => S3ErrorCode::InvalidArgument,
        Error::PreconditionFailed => S3ErrorCode::PreconditionFailed,
        Error::ObjectLocked => S3ErrorCode::AccessDenied,
        Error::Internal(_) => return internal(e),
    };
    S3Error::with_message(code, e.to_string())
}

pub(crate) fn denied() -> S3Error {
    S3Error::with_message(S3ErrorCode::AccessDenied, "access denied")
}

fn actor(p: &Principal) -> Actor {
    Actor {
        kind: "storage_key".to_owned(),
        id: Some(p.key_id.clone()),
        user_id: None,
        ip: None,
    }
}

/// Milliseconds as an S3 timestamp.
fn timestamp(ms: i64) -> s3s::dto::Timestamp {
    time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ms) * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
        .into()
}
