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
mod bucket_encryption;
mod buckets;
mod copy;
mod cors;
mod date;
mod delete;
mod encryption;
mod fields;
mod form;
mod headers;
mod lifecycle;
mod list;
mod lock;
mod multipart;
mod objects;
mod ops;
mod part_copy;
mod read;
mod retention;
mod tagging;
mod uploads;
mod verify;
mod versioning;

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

/// The endpoint: the s3s service over `storage`, and what answers before it.
#[derive(Clone)]
pub struct Service {
    inner: S3Service,
    storage: Storage,
    domain: String,
}

/// The endpoint over `storage`.
pub fn service(storage: Storage) -> Service {
    let domain = storage.config().domain.to_ascii_lowercase();
    let mut builder = S3ServiceBuilder::new(Front {
        storage: storage.clone(),
    });
    builder.set_auth(Auth {
        storage: storage.clone(),
    });
    builder.set_access(Access);
    builder.set_host(Host {
        domain: domain.clone(),
    });
    Service {
        inner: builder.build(),
        storage,
        domain,
    }
}

/// Serves `service` on `listener` (HTTP/1.1) with the host's `timeouts`
/// for slow clients until `shutdown` resolves.
pub async fn serve(
    listener: tokio::net::TcpListener,
    service: Service,
    timeouts: plateau_listen::Timeouts,
    shutdown: impl Future<Output = ()>,
) {
    let make = move |_| Entry {
        service: service.clone(),
    };
    plateau_listen::serve(listener, timeouts, make, shutdown).await;
}

/// What a request goes through before `s3s`: [`date`], [`form`], and
/// [`cors`] (a preflight is answered here; CORS headers are added after).
#[derive(Clone)]
struct Entry {
    service: Service,
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
        let service = self.service.clone();
        Box::pin(async move {
            let bucket = bucket_of(&service.domain, &req);
            if req.method() == http::Method::OPTIONS {
                return Ok(
                    cors::preflight(&service.storage, bucket.as_deref(), req.headers()).await,
                );
            }
            let cors = cors::Cors::of(
                &service.storage,
                bucket.as_deref(),
                req.headers(),
                req.method(),
            )
            .await;
            let has_body = sends_body(req.headers());
            let mut response = if let Some(refused) = date::check_v2(&req) {
                refused
            } else {
                match form::prepare(date::with_amz_date(req)).await {
                    Ok(req) => tower::Service::call(&mut service.inner.clone(), req).await?,
                    Err(refused) => refused,
                }
            };
            if let Some(cors) = cors {
                cors.apply(&mut response);
            }
            // A request refused before its body was read (a failed
            // condition, a bad signature) leaves that body on the
            // connection; closing it keeps the next request from being
            // read after those bytes.
            if has_body && response.status().is_client_error() {
                response.headers_mut().insert(
                    http::header::CONNECTION,
                    http::HeaderValue::from_static("close"),
                );
            }
            Ok(response)
        })
    }
}

/// Whether a request carries a body (a length above zero, or chunks).
fn sends_body(headers: &http::HeaderMap) -> bool {
    headers.contains_key(http::header::TRANSFER_ENCODING)
        || headers
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok())
            .is_some_and(|n| n > 0)
}

/// The bucket a request names: the host's first label under `domain`,
/// else the path's first segment.
fn bucket_of<B>(domain: &str, req: &http::Request<B>) -> Option<String> {
    let host = req.headers().get(http::header::HOST)?.to_str().ok()?;
    let host = host
        .rsplit_once(':')
        .map_or(host, |(h, _)| h)
        .to_ascii_lowercase();
    if let Some(b) = host.strip_suffix(domain).and_then(|b| b.strip_suffix('.')) {
        return (!b.is_empty()).then(|| b.to_owned());
    }
    let first = req.uri().path().trim_start_matches('/').split('/').next()?;
    (!first.is_empty()).then(|| first.to_owned())
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
        self.access(req, name, write, None).await
    }

    /// The bucket `name`, to read the object `key`: as [`Front::bucket`],
    /// and also when the object is public-read.
    async fn object_reader<T>(
        &self,
        req: &S3Request<T>,
        name: &str,
        key: &str,
    ) -> S3Result<(Principal, Bucket)> {
        self.access(req, name, false, Some(key)).await
    }

    /// A key reaches its organisation's buckets as far as its limits let
    /// it; anyone (no signature, or another organisation's key) reads a
    /// public-read bucket or object ([`acl`]) and writes nothing.
    async fn access<T>(
        &self,
        req: &S3Request<T>,
        name: &str,
        write: bool,
        key: Option<&str>,
    ) -> S3Result<(Principal, Bucket)> {
        let principal = match &req.credentials {
            Some(_) => Some(self.principal(req).await?),
            None => None,
        };
        let found = self
            .storage
            .provider()
            .bucket_by_name(name)
            .await
            .map_err(internal)?;
        match (found, principal) {
            (Some(b), Some(p)) if b.org_id == p.org_id => {
                if p.may(&b.id, write) {
                    Ok((p, b))
                } else {
                    Err(denied())
                }
            }
            (None, Some(p)) if name.starts_with(&names::org_prefix(&p.org_id)) => Err(
                S3Error::with_message(S3ErrorCode::NoSuchBucket, "the bucket does not exist"),
            ),
            (Some(b), p) if !write && self.public(&b, key).await? => {
                Ok((p.unwrap_or_else(|| Principal::anonymous(&b.org_id)), b))
            }
            _ => Err(denied()),
        }
    }

    /// Whether the bucket, or the object `key` in it, is public-read.
    async fn public(&self, bucket: &Bucket, key: Option<&str>) -> S3Result<bool> {
        if acl::of_bucket(self, bucket).await?.as_deref() == Some(acl::PUBLIC_READ) {
            return Ok(true);
        }
        let Some(key) = key else {
            return Ok(false);
        };
        match self.storage.provider().head_object(bucket, key).await {
            Ok(info) => Ok(info.headers.acl.as_deref() == Some(acl::PUBLIC_READ)),
            Err(Error::NoSuchKey) => Ok(false),
            Err(e) => Err(internal(e)),
        }
    }
}

/// Requests reach [`Front`] signed or not: it decides, per operation,
/// what an unsigned request may read (public-read buckets and objects).
struct Access;

#[async_trait::async_trait]
impl s3s::access::S3Access for Access {
    async fn check(&self, _cx: &mut s3s::access::S3AccessContext<'_>) -> S3Result<()> {
        Ok(())
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
