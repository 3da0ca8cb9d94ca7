//! `/caches` (spec sections 1 and 8): managed Redis 7 clusters, their
//! connection details, snapshots and restores, metrics and logs. Handlers
//! find the [`CacheService`] as an axum `Extension`.

pub mod caches;
pub mod connection;
mod ops;
mod snapshots;

use std::sync::Arc;

use axum::Extension;
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_core::time;
use plateau_kernel::Status;
use plateau_store::caches::{self as db, Cache};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::Error;
use crate::service::CacheService;
use crate::spec::{EvictionPolicy, Persistence};

/// The service, as handlers extract it.
pub type Service = Extension<Arc<CacheService>>;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(caches::list, caches::create))
        .routes(routes!(caches::get, caches::update, caches::delete))
        .routes(routes!(connection::connection))
        .routes(routes!(ops::list_snapshots, ops::create_snapshot))
        .routes(routes!(snapshots::restore))
        .routes(routes!(snapshots::list))
        .routes(routes!(snapshots::delete))
        .routes(routes!(snapshots::restore_any))
        .routes(routes!(snapshots::restore_into))
        .routes(routes!(ops::metrics))
        .routes(routes!(ops::logs))
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        match e {
            Error::Store(e) => e.into(),
            Error::Unavailable(m) => ApiError::Unavailable(m),
            Error::NotPlaced(m) => ApiError::conflict("not_ready", m),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

/// A cluster as the API shows it (never its passwords).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CacheView {
    pub id: String,
    pub name: String,
    /// `creating` until the host has brought the cluster up, `updating`
    /// while a change is applied, `running`, `degraded` while a process is
    /// down, `deleting`, or `failed` (see `statusDetail`).
    pub status: Status,
    /// Why the last change failed, when the status is `failed`.
    pub status_detail: Option<String>,
    /// The engine's major version.
    pub version: String,
    pub memory_mb: i64,
    #[schema(value_type = String)]
    pub eviction_policy: EvictionPolicy,
    pub replicas: i64,
    #[schema(value_type = String)]
    pub persistence: Persistence,
    pub tls: bool,
    /// The snapshot this cluster was restored from.
    pub restored_from: Option<String>,
    pub password_rotated_at: String,
    pub created_at: String,
    pub updated_at: String,
}

impl TryFrom<Cache> for CacheView {
    type Error = ApiError;

    fn try_from(c: Cache) -> Result<Self, ApiError> {
        Ok(CacheView {
            eviction_policy: c.eviction_policy.parse().map_err(ApiError::Internal)?,
            persistence: c.persistence.parse().map_err(ApiError::Internal)?,
            id: c.id,
            name: c.name,
            status: Status::read(&c.status),
            status_detail: c.status_detail,
            version: "7".to_owned(),
            memory_mb: c.memory_mb,
            replicas: c.replicas,
            tls: c.tls != 0,
            restored_from: c.source_snapshot_id,
            password_rotated_at: time::to_rfc3339(c.password_rotated_at),
            created_at: time::to_rfc3339(c.created_at),
            updated_at: time::to_rfc3339(c.updated_at),
        })
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("cache {id} does not exist"))
}

/// Refuses a change of a cluster that is being deleted.
fn refuse_deleting(cache: &Cache) -> Result<(), ApiError> {
    if Status::read(&cache.status) == Status::Deleting {
        return Err(ApiError::conflict(
            "deleting",
            format!("cache {} is being deleted", cache.id),
        ));
    }
    Ok(())
}

/// The caller's cluster `id`; another organisation's answers 404.
async fn find(app: &AppState, caller: &Caller, id: &str) -> Result<Cache, ApiError> {
    db::get(app.db(), &caller.org_id, id)
        .await?
        .ok_or_else(|| not_found(id))
}
