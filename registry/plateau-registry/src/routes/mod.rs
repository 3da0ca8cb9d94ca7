//! The `/v2` endpoints. Names contain slashes, so one handler takes every
//! path, splits it from the right ([`crate::reference::split_path`]),
//! authenticates, checks the namespace and the scope, then dispatches.
//!
//! | endpoint | needs |
//! |---|---|
//! | `GET /v2/` | any valid credentials |
//! | `GET /v2/token` | Basic credentials with a registry scope |
//! | `GET /v2/_catalog` | pull |
//! | `GET`/`HEAD` blobs, manifests, tags, referrers, upload status | pull |
//! | uploads, manifest `PUT`, every `DELETE` | push |

mod blobs;
mod lists;
mod manifests;
mod uploads;

use std::net::SocketAddr;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::Registry;
use crate::auth::{self, Access};
use crate::error::{Error, Result};
use crate::reference::{Endpoint, is_valid_name, split_path};

/// A request's context once authenticated and inside its namespace.
pub struct Ctx {
    pub reg: Registry,
    pub access: Access,
    /// The repository name, `<org id>/<path>`.
    pub name: String,
}

/// The `Range` header value for an upload holding `size` bytes.
pub fn range_header(size: u64) -> String {
    format!("0-{}", size.saturating_sub(1))
}

/// `GET /v2/`: the API version check.
pub async fn root(State(reg): State<Registry>, req: Request) -> Response {
    let (parts, _) = req.into_parts();
    finish(
        async {
            if !matches!(parts.method, Method::GET | Method::HEAD) {
                return Err(Error::MethodNotAllowed("use GET /v2/".to_owned()));
            }
            authenticate(&reg, &parts, None).await?;
            Ok((
                [(header::CONTENT_TYPE, "application/json")],
                "{}".to_owned(),
            )
                .into_response())
        }
        .await,
    )
}

/// Every other `/v2/...` path.
pub async fn dispatch(State(reg): State<Registry>, req: Request) -> Response {
    finish(handle(reg, req).await)
}

fn finish(result: Result<Response>) -> Response {
    let mut response = result.unwrap_or_else(IntoResponse::into_response);
    response.headers_mut().insert(
        "docker-distribution-api-version",
        HeaderValue::from_static("registry/2.0"),
    );
    response
}

async fn handle(reg: Registry, req: Request) -> Result<Response> {
    let (parts, body) = req.into_parts();
    let path = parts
        .uri
        .path()
        .strip_prefix("/v2/")
        .unwrap_or("")
        .to_owned();
    match path.as_str() {
        "token" => return token(&reg, &parts).await,
        "_catalog" => {
            let access = authenticate(&reg, &parts, Some("registry:catalog:*")).await?;
            access.require_pull()?;
            return lists::catalog(&reg, &access, &parts).await;
        }
        _ => {}
    }
    let (name, endpoint) = split_path(&path)
        .ok_or_else(|| Error::UnknownEndpoint(format!("no such endpoint: /v2/{path}")))?;
    let method = parts.method.clone();
    let reads = matches!(method, Method::GET | Method::HEAD);
    let actions = if reads { "pull" } else { "pull,push" };
    let access = authenticate(&reg, &parts, Some(&format!("repository:{name}:{actions}"))).await?;
    if !is_valid_name(name) {
        return Err(Error::NameInvalid(format!(
            "{name:?} is not a valid repository name: lowercase letters, digits and separators"
        )));
    }
    let (namespace, rest) = name.split_once('/').unwrap_or((name, ""));
    if namespace != access.org_id {
        return Err(Error::name_unknown(name));
    }
    if rest.is_empty() {
        return Err(Error::NameInvalid(format!(
            "repository names are <organisation id>/<path>: use {namespace}/<path>"
        )));
    }
    if reads {
        access.require_pull()?;
    } else {
        access.require_push()?;
    }
    let ctx = Ctx {
        reg,
        access,
        name: name.to_owned(),
    };
    match (method, endpoint) {
        (Method::GET | Method::HEAD, Endpoint::Blob(d)) => blobs::get(&ctx, &d, &parts).await,
        (Method::DELETE, Endpoint::Blob(d)) => blobs::delete(&ctx, &d).await,
        (Method::POST, Endpoint::UploadStart) => uploads::start(&ctx, &parts, body).await,
        (Method::GET | Method::HEAD, Endpoint::Upload(id)) => uploads::status(&ctx, &id).await,
        (Method::PATCH, Endpoint::Upload(id)) => uploads::patch(&ctx, &id, &parts, body).await,
        (Method::PUT, Endpoint::Upload(id)) => uploads::put(&ctx, &id, &parts, body).await,
        (Method::DELETE, Endpoint::Upload(id)) => uploads::cancel(&ctx, &id).await,
        (Method::GET | Method::HEAD, Endpoint::Manifest(r)) => {
            manifests::get(&ctx, &r, &parts).await
        }
        (Method::PUT, Endpoint::Manifest(r)) => manifests::put(&ctx, &r, &parts, body).await,
        (Method::DELETE, Endpoint::Manifest(r)) => manifests::delete(&ctx, &r).await,
        (Method::GET, Endpoint::Tags) => lists::tags(&ctx, &parts).await,
        (Method::GET, Endpoint::Referrers(d)) => lists::referrers(&ctx, &d, &parts).await,
        (method, _) => Err(Error::MethodNotAllowed(format!(
            "{method} is not allowed on /v2/{path}"
        ))),
    }
}

/// The address clients reach the registry at, for the bearer realm.
pub fn base_url(reg: &Registry, headers: &HeaderMap) -> String {
    if let Some(url) = &reg.config().public_url {
        return url.trim_end_matches('/').to_owned();
    }
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let scheme = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("http");
    format!("{scheme}://{host}")
}

fn client_ip(parts: &Parts) -> Option<String> {
    parts
        .extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip().to_string())
}

async fn authenticate(reg: &Registry, parts: &Parts, scope: Option<&str>) -> Result<Access> {
    let authorization = parts
        .headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok());
    let base = base_url(reg, &parts.headers);
    auth::authenticate(reg, authorization, client_ip(parts), &base, scope).await
}

/// `GET /v2/token`: trades Basic credentials for a short-lived registry
/// bearer (see [`crate::auth`]).
async fn token(reg: &Registry, parts: &Parts) -> Result<Response> {
    if parts.method != Method::GET {
        return Err(Error::MethodNotAllowed(
            "the token endpoint takes GET with Basic credentials".to_owned(),
        ));
    }
    let access = match authenticate(reg, parts, None).await {
        Err(Error::Unauthorized { message, .. }) => {
            return Err(Error::Unauthorized {
                message,
                challenge: format!("Basic realm=\"{}\"", auth::SERVICE),
            });
        }
        other => other?,
    };
    if !access.pull {
        return Err(Error::Denied(
            "the token carries neither registry:read nor registry:write".to_owned(),
        ));
    }
    let (bearer, expires_in) = auth::issue_bearer(reg, &access);
    let body = json!({
        "token": bearer,
        "access_token": bearer,
        "expires_in": expires_in,
        "issued_at": plateau_core::time::to_rfc3339(plateau_core::time::now_ms()),
    });
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response())
}

/// The query pairs of a request.
pub fn query(parts: &Parts) -> Vec<(String, String)> {
    form_urlencoded::parse(parts.uri.query().unwrap_or("").as_bytes())
        .into_owned()
        .collect()
}

pub fn query_value<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}
