//! `GET /caches/{id}/connection`: how to connect, with the credentials
//! the caller's token deserves (owners and admins only): the cache's user
//! for `cache:write`, its read-only user for `cache:read` alone.

use axum::Json;
use axum::extract::{Path, State};
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use serde::Serialize;
use utoipa::ToSchema;

use super::{Service, find};
use crate::service::CacheService;
use crate::spec::{READER, USER};

/// How to connect: the leader's `rediss://` URI with a user and its
/// password, and the sentinels for clients that follow failovers.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionView {
    /// `rediss://USER:PASSWORD@HOST:PORT` (`redis://` without TLS), to the
    /// current leader.
    pub uri: String,
    pub host: String,
    pub port: u16,
    /// `app` (reads and writes) for `cache:write` tokens, `app-readonly`
    /// (reads only) for the others.
    pub username: String,
    pub password: String,
    /// Whether these credentials only read: true for tokens without
    /// `cache:write`.
    pub read_only: bool,
    pub tls: bool,
    /// The name the sentinels know the leader by.
    pub master_name: String,
    /// `host:port` of each sentinel; they take the same user and password.
    pub sentinels: Vec<String>,
    /// PEM certificate of the cache's own CA, to verify its servers.
    pub ca_certificate: Option<String>,
}

/// The connection details with a password, for owners and admins. A token
/// with `cache:write` gets the cache's user, which reads and writes; a
/// token with only `cache:read` gets the read-only user (`app-readonly`,
/// `readOnly: true`), which reads keys and subscribes but cannot write.
/// Both passwords change when the password is rotated.
#[utoipa::path(get, path = "/caches/{id}/connection", tag = "caches",
    security(("bearer" = ["cache:read"])),
    params(("id" = String, Path, description = "cache id")),
    responses((status = 200, description = "how to connect", body = ConnectionView),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn connection(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ConnectionView>, ApiError> {
    let cache = find(&app, &caller, &id).await?;
    caller.require_manager("reading a cache's password")?;
    let placement = CacheService::placement(&cache)?;
    let credentials = service.credentials(&cache)?;
    let leader = service.provider().leader(&placement, &credentials).await?;
    let (host, port) = leader
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.to_owned(), p.parse().ok()?)))
        .ok_or_else(|| ApiError::Internal(format!("leader address {leader}")))?;
    let read_only = !caller.scopes.allows("cache:write");
    let (username, password) = if read_only {
        (READER, credentials.reader_password())
    } else {
        (USER, credentials.password.clone())
    };
    let scheme = if placement.tls { "rediss" } else { "redis" };
    Ok(Json(ConnectionView {
        uri: format!("{scheme}://{username}:{password}@{leader}"),
        host,
        port,
        username: username.to_owned(),
        password,
        read_only,
        tls: placement.tls,
        master_name: placement.master_name.clone(),
        sentinels: placement.sentinel_addresses(),
        ca_certificate: service.provider().ca_certificate(&placement)?,
    }))
}
