//! The S3-compatible endpoint, on its own listener. `s3s` speaks the
//! protocol (SigV4 in headers and query, aws-chunked bodies, XML errors);
//! this module authenticates keys ([`S3Auth`] over [`crate::keys`]),
//! resolves buckets with tenant isolation, and calls the [`Provider`].
//!
//! A bucket outside the key's organisation answers AccessDenied whether
//! or not it exists; NoSuchBucket is only said of names in the key's own
//! namespace (`plt-<org>-`).

mod copy;
mod date;
mod encryption;
mod form;
mod list;
mod multipart;
mod objects;
mod read;
mod verify;

use std::future::Future;

use plateau_store::events::Actor;
use s3s::auth::{S3Auth, SecretKey};
use s3s::host::{S3Host, VirtualHost};
use s3s::service::{S3Service, S3ServiceBuilder};
use s3s::{S3Error, S3ErrorCode, S3Request, S3Result};

use crate::error::Error;
use crate::keys::Principal;
use crate::provider::Bucket;
use crate::{Storage, names};

/// The s3s service over `storage`.
pub fn service(storage: Storage) -> S3Service {
    let domain = storage.config().domain.to_ascii_lowercase();
    let mut builder = S3ServiceBuilder::new(Front {
        storage: storage.clone(),
    });
    builder.set_auth(Auth { storage });
    builder.set_host(Host { domain });
    builder.build()
}

/// Serves `service` on `listener` (HTTP/1.1) with the host's `timeouts`
/// for slow clients until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    service: S3Service,
    timeouts: plateau_listen::Timeouts,
    shutdown: impl Future<Output = ()>,
) {
    let make = move |_| Entry {
        inner: service.clone(),
    };
    plateau_listen::serve(listener, timeouts, make, shutdown).await;
}

/// What a request goes through before `s3s`: [`date`] and [`form`].
#[derive(Clone)]
struct Entry {
    inner: S3Service,
}

impl tower::Service<http::Request<plateau_listen::Body>> for Entry {
    type Response = s3s::HttpResponse;
    type Error = s3s::HttpError;
    type Future = futures::future::BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<plateau_listen::Body>) -> Self::Future {
        let mut inner = self.inner.clone();
        Box::pin(async move {
            if let Some(refused) = date::check_v2(&req) {
                return Ok(refused);
            }
            match form::prepare(date::with_amz_date(req)).await {
                Ok(req) => tower::Service::call(&mut inner, req).await,
                Err(refused) => Ok(refused),
            }
        })
    }
}

/// Virtual-host style under the storage domain; any other host (an
/// address, `localhost`) is path style.
struct Host {
    domain: String,
}

impl S3Host for Host {
    fn parse_host_header<'a>(&'a self, host: &'a str) -> S3Result<VirtualHost<'a>> {
        let name = match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host,
        };
        if let Some(bucket) = name
            .strip_suffix(self.domain.as_str())
            .and_then(|b| b.strip_suffix('.'))
            .filter(|b| !b.is_empty())
        {
            return Ok(VirtualHost::new(self.domain.as_str()).with_bucket(bucket));
        }
        Ok(VirtualHost::new(name))
    }
}

struct Auth {
    storage: Storage,
}

#[async_trait::async_trait]
impl S3Auth for Auth {
    async fn get_secret_key(&self, access_key: &str) -> S3Result<SecretKey> {
        match self.storage.keys().principal(access_key).await {
            Ok(Some(p)) => Ok(SecretKey::from(p.secret)),
            Ok(None) => Err(S3Error::with_message(
                S3ErrorCode::InvalidAccessKeyId,
                "the access key id you provided does not exist",
            )),
            Err(e) => Err(internal(e)),
        }
    }
}

/// The S3 operations.
pub struct Front {
    storage: Storage,
}

pub(crate) fn internal(e: Error) -> S3Error {
    tracing::error!(error = %e, "storage request failed");
    S3Error::with_message(S3ErrorCode::InternalError, "internal error; try again")
}

/// A storage error as S3 says it.
pub(crate) fn s3_error(e: Error) -> S3Error {
    let code = match &e {
        Error::NoSuchBucket => S3ErrorCode::NoSuchBucket,
        Error::NoSuchKey => S3ErrorCode::NoSuchKey,
        Error::NoSuchUpload => S3ErrorCode::NoSuchUpload,
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
        Error::Internal(_) => return internal(e),
    };
    S3Error::with_message(code, e.to_string())
}

fn denied() -> S3Error {
    S3Error::with_message(S3ErrorCode::AccessDenied, "access denied")
}

impl Front {
    /// The caller's key.
    async fn principal<T>(&self, req: &S3Request<T>) -> S3Result<Principal> {
        let Some(creds) = &req.credentials else {
            return Err(denied());
        };
        self.storage
            .keys()
            .principal(&creds.access_key)
            .await
            .map_err(internal)?
            .ok_or_else(denied)
    }

    /// The bucket `name`, if the caller's key may read (or write) it.
    async fn bucket<T>(
        &self,
        req: &S3Request<T>,
        name: &str,
        write: bool,
    ) -> S3Result<(Principal, Bucket)> {
        let principal = self.principal(req).await?;
        let found = self
            .storage
            .provider()
            .bucket_by_name(name)
            .await
            .map_err(internal)?;
        match found {
            Some(b) if b.org_id == principal.org_id => {
                if principal.may(&b.id, write) {
                    Ok((principal, b))
                } else {
                    Err(denied())
                }
            }
            None if name.starts_with(&names::org_prefix(&principal.org_id)) => Err(
                S3Error::with_message(S3ErrorCode::NoSuchBucket, "the bucket does not exist"),
            ),
            _ => Err(denied()),
        }
    }
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
