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

/// How to connect: a `rediss://` URI that always reaches the leader, with
/// a user and its password, and the sentinels for clients that speak the
/// sentinel protocol.
///
/// Durability: a cache with replicas fails over to a replica a few seconds
/// after its leader goes silent (3 s); the leader takes writes only while a
/// replica acknowledged its stream within the last 2 seconds (else it
/// answers NOREPLICAS), so a failover can lose at most the writes
/// acknowledged in the last 2 to 3 seconds before the leader was cut off.
/// A write followed by `WAIT <replicas> <ms>` that answers the number of
/// replicas is on every replica and survives any failover; `WAIT 1`
/// survives the leader's crash (not a leader deposed while alive that
/// keeps a replica for a moment). A cache without replicas keeps what its
/// `persistence` keeps across a restart: nothing (`none`), the last RDB
/// save (`rdb`: after 1 change in an hour, 100 in 5 minutes or 10,000 in a
/// minute), or all but the last second (`aof`, fsync every second).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConnectionView {
    /// `rediss://USER:PASSWORD@HOST:PORT` (`redis://` without TLS). For a
    /// cache with replicas, the address is its stable endpoint, which
    /// leads to whichever node leads now and stays valid across any number
    /// of failovers (connections open at a failover are closed; reconnect).
    pub uri: String,
    /// The host and port of `uri`.
    pub host: String,
    pub port: u16,
    /// `host:port` of the node that leads now, directly (it changes on a
    /// failover; prefer `uri`).
    pub leader: String,
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
    let address = placement
        .endpoint_address()
        .unwrap_or_else(|| leader.clone());
    let (host, port) = address
        .rsplit_once(':')
        .and_then(|(h, p)| Some((h.to_owned(), p.parse().ok()?)))
        .ok_or_else(|| ApiError::Internal(format!("cache address {address}")))?;
    let read_only = !caller.scopes.allows("cache:write");
    let (username, password) = if read_only {
        (READER, credentials.reader_password())
    } else {
        (USER, credentials.password.clone())
    };
    let scheme = if placement.tls { "rediss" } else { "redis" };
    Ok(Json(ConnectionView {
        uri: format!("{scheme}://{username}:{password}@{address}"),
        host,
        port,
        leader,
        username: username.to_owned(),
        password,
        read_only,
        tls: placement.tls,
        master_name: placement.master_name.clone(),
        sentinels: placement.sentinel_addresses(),
        ca_certificate: service.provider().ca_certificate(&placement)?,
    }))
}
