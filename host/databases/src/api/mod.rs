//! `/databases` (spec sections 4.5 and 4.6): managed PostgreSQL clusters
//! and their connection details. Handlers find the [`DatabaseService`] as
//! an axum `Extension`.

mod backups;
mod branches;
pub mod clusters;
mod dumps;
mod inside;
mod members;
mod replication;
mod rotation;

pub use clusters::owner_uri;

use std::sync::Arc;

use axum::Extension;
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_core::time;
use plateau_kernel::Status;
use plateau_store::databases::{self as db, Database};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::Error;
use crate::service::DatabaseService;
use crate::spec::Member;

/// The service, as handlers extract it.
pub type Service = Extension<Arc<DatabaseService>>;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(clusters::list, clusters::create))
        .routes(routes!(clusters::get, clusters::update, clusters::delete))
        .routes(routes!(clusters::connection))
        .routes(routes!(inside::list_roles, inside::create_role))
        .routes(routes!(inside::drop_role))
        .routes(routes!(inside::reset_password))
        .routes(routes!(inside::list_extensions, inside::create_extension))
        .routes(routes!(inside::tables, inside::run_query))
        .routes(routes!(inside::read_data, inside::insert_data))
        .routes(routes!(inside::metrics))
        .routes(routes!(inside::logs))
        .routes(routes!(inside::fix_ownership))
        .routes(routes!(members::list_replicas, members::scale_replicas))
        .routes(routes!(members::apply_config))
        .routes(routes!(backups::list, backups::take))
        .routes(routes!(backups::restore))
        .routes(routes!(branches::list, branches::create))
        .routes(routes!(branches::get, branches::update, branches::delete))
        .routes(routes!(branches::reset))
        .routes(routes!(dumps::upload_url))
        .routes(routes!(dumps::put))
        .routes(routes!(dumps::list, dumps::restore))
        .routes(routes!(dumps::get))
        .routes(routes!(rotation::get, rotation::set))
        .routes(routes!(rotation::rotate))
        .routes(routes!(rotation::migrate))
        .routes(routes!(
            replication::list_publications,
            replication::create_publication
        ))
        .routes(routes!(replication::drop_publication))
        .routes(routes!(
            replication::list_subscriptions,
            replication::create_subscription
        ))
        .routes(routes!(
            replication::get_subscription,
            replication::drop_subscription
        ))
        .routes(routes!(replication::sync_sequences))
}

impl From<Error> for ApiError {
    fn from(e: Error) -> Self {
        match e {
            Error::Store(e) => e.into(),
            Error::Unavailable(m) => ApiError::Unavailable(m),
            Error::NotPlaced(m) => ApiError::conflict("not_ready", m),
            e @ Error::VersionMissing(_) => {
                ApiError::bad_request("version_not_installed", e.to_string())
            }
            Error::Refused { code, detail } => ApiError::bad_request(code, detail),
            Error::Missing(m) => ApiError::not_found(m),
            Error::Query(m) => ApiError::bad_request("query_failed", m),
            other => ApiError::Internal(other.to_string()),
        }
    }
}

/// A database as the API shows it (never its passwords).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DatabaseView {
    pub id: String,
    pub name: String,
    /// `creating` until the host has brought the cluster up, `updating`
    /// while a change of its replicas is applied, `running`, `degraded`
    /// while a process is down, `deleting`, or `failed` (see
    /// `statusDetail`).
    pub status: Status,
    /// Why the last change failed, when the status is `failed`.
    pub status_detail: Option<String>,
    /// The PostgreSQL major version: 15, 16 or 17.
    pub version: String,
    pub replicas: i64,
    pub memory_mb: i64,
    pub cpus: i64,
    pub disk_gb: i64,
    pub project_id: Option<String>,
    pub backup_retention_days: i64,
    /// The servers of the cluster and their roles.
    pub members: Vec<Member>,
    pub created_at: String,
    pub updated_at: String,
}

impl DatabaseView {
    pub async fn of(service: &DatabaseService, d: Database) -> Result<Self, ApiError> {
        let members = match DatabaseService::placed(&d)? {
            Some(placement) => {
                let credentials = service.credentials(&d)?;
                service.provider().members(&placement, &credentials).await
            }
            None => Vec::new(),
        };
        Ok(DatabaseView {
            id: d.id,
            name: d.name,
            status: Status::read(&d.status),
            status_detail: d.status_detail,
            version: d.version,
            replicas: d.replicas,
            memory_mb: d.memory_mb,
            cpus: d.cpus,
            disk_gb: d.disk_gb,
            project_id: d.project_id,
            backup_retention_days: d.backup_retention_days,
            members,
            created_at: time::to_rfc3339(d.created_at),
            updated_at: time::to_rfc3339(d.updated_at),
        })
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("database {id} does not exist"))
}

/// The caller's database `id`; another organisation's answers 404.
pub async fn find(app: &AppState, caller: &Caller, id: &str) -> Result<Database, ApiError> {
    db::get(app.db(), &caller.org_id, id)
        .await?
        .ok_or_else(|| not_found(id))
}

/// The caller's cluster `id` with its lock, read again under the lock: for
/// a change of its processes, which the supervisor must not undo.
pub async fn find_locked(
    app: &AppState,
    service: &DatabaseService,
    caller: &Caller,
    id: &str,
) -> Result<(plateau_kernel::ResourceGuard, Database), ApiError> {
    let found = find(app, caller, id).await?;
    let guard = service.exclusive(&found.id).await?;
    Ok((guard, find(app, caller, id).await?))
}
