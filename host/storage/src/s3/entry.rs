//! The listener's side of the endpoint: [`Service`] (the `s3s` service
//! and what answers before it: [`super::date`], [`super::form`],
//! [`super::cors`]) and how a request's host names its bucket.

use std::future::Future;

use s3s::S3Result;
use s3s::host::{S3Host, VirtualHost};
use s3s::service::{S3Service, S3ServiceBuilder};

use super::auth::{Access, Auth};
use super::{Front, cors, date, form};
use crate::Storage;

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
            let attributes = super::attributes::asked(&req);
            let mut response = if let Some(refused) = date::check_v2(&req) {
                refused
            } else {
                let req = date::v2_bucket_path(date::with_amz_date(req), &service.domain);
                match form::prepare(req).await {
                    Ok(req) => tower::Service::call(&mut service.inner.clone(), req).await?,
                    Err(refused) => refused,
                }
            };
            if attributes && response.status().is_success() {
                super::attributes::bare_etag(&mut response);
            }
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
