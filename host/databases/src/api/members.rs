//! The members of a database: hot scaling of its replicas within the
//! plan's maximum, and `apply-config`, which recreates the members one at
//! a time (the leader last, after a switchover) so they run the current
//! settings.

use axum::Json;
use axum::extract::{Path, State};
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::{Body, Validator};
use plateau_store::databases as db;
use plateau_store::events::NewEvent;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{DatabaseView, Service, find, find_locked};
use crate::service::DatabaseService;
use crate::spec::Member;

/// The replica count, its plan maximum and the members.
#[derive(Serialize, ToSchema)]
#[schema(as = DatabaseReplicas)]
#[serde(rename_all = "camelCase")]
pub struct ReplicasView {
    pub replicas: i64,
    /// The plan's maximum.
    pub max: i64,
    pub members: Vec<Member>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScaleReplicas {
    /// The number of replicas wanted, 0 to the plan's maximum.
    #[schema(minimum = 0)]
    pub replicas: i64,
}

async fn max_replicas(app: &AppState, caller: &Caller) -> Result<i64, ApiError> {
    Ok(db::plan_limits(app.db(), &caller.plan)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("no database limits for plan {}", caller.plan)))?
        .max_replicas)
}

/// The replica count, the plan's maximum and the members.
#[utoipa::path(get, path = "/databases/{id}/replicas", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "the replicas", body = ReplicasView)))]
pub async fn list_replicas(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ReplicasView>, ApiError> {
    let d = find(&app, &caller, &id).await?;
    let max = max_replicas(&app, &caller).await?;
    let view = DatabaseView::of(&service, d).await?;
    Ok(Json(ReplicasView {
        replicas: view.replicas,
        max,
        members: view.members,
    }))
}

/// Scale the replicas while the database serves: new ones are made from
/// the leader, removed ones stop after the leader stops waiting for them.
#[utoipa::path(post, path = "/databases/{id}/replicas", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    request_body = ScaleReplicas,
    responses((status = 200, description = "the replicas now", body = ReplicasView),
              (status = 409, description = "more replicas than the plan allows", body = plateau_api::error::Problem)))]
pub async fn scale_replicas(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<ScaleReplicas>,
) -> Result<Json<ReplicasView>, ApiError> {
    Validator::new()
        .check(input.replicas >= 0, "replicas", "must be at least 0")
        .finish()?;
    let max = max_replicas(&app, &caller).await?;
    if input.replicas > max {
        return Err(ApiError::conflict(
            "plan_limit_reached",
            format!(
                "the {} plan allows at most {max} replicas per database; ask for fewer or move to a larger plan",
                caller.plan
            ),
        ));
    }
    let (_changes, d) = find_locked(&app, &service, &caller, &id).await?;
    let placement = DatabaseService::placement(&d)?;
    let credentials = service.credentials(&d)?;
    let mut spec = DatabaseService::spec(&d);
    spec.replicas = input.replicas as u32;
    let new = service
        .provider()
        .scale(&spec, &placement, &credentials, spec.replicas)
        .await?;
    let event = NewEvent::audited(
        &caller.org_id,
        "database.scaled",
        "resources",
        "update",
        &caller.actor(),
    )
    .resource("database", &id)
    .data(json!({ "replicas": input.replicas }));
    service
        .record_placement(&d, &new, input.replicas, &event)
        .await?;
    let d = find(&app, &caller, &id).await?;
    let view = DatabaseView::of(&service, d).await?;
    Ok(Json(ReplicasView {
        replicas: view.replicas,
        max,
        members: view.members,
    }))
}

/// Recreate the members with the current settings, one at a time: the
/// replicas first, then the leader after a switchover to a replica (a
/// database without replicas restarts its leader).
#[utoipa::path(post, path = "/databases/{id}/apply-config", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "the database, its members recreated", body = DatabaseView)))]
pub async fn apply_config(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<DatabaseView>, ApiError> {
    let (_changes, d) = find_locked(&app, &service, &caller, &id).await?;
    let mut placement = DatabaseService::placement(&d)?;
    let credentials = service.credentials(&d)?;
    let spec = DatabaseService::spec(&d);
    let provider = service.provider();
    for node in placement.standbys() {
        provider
            .recreate_member(&spec, &placement, &credentials, &node.name)
            .await?;
    }
    let old_leader = placement.leader.clone();
    match placement.standbys().first() {
        Some(next) => {
            placement = provider
                .switchover(&spec, &placement, &credentials, &next.name)
                .await?;
        }
        None => {
            provider
                .recreate_member(&spec, &placement, &credentials, &old_leader)
                .await?;
        }
    }
    let event = NewEvent::audited(
        &caller.org_id,
        "database.config_applied",
        "resources",
        "update",
        &caller.actor(),
    )
    .resource("database", &id)
    .data(json!({ "from": old_leader, "leader": placement.leader }));
    service
        .record_placement(&d, &placement, d.replicas, &event)
        .await?;
    let d = find(&app, &caller, &id).await?;
    Ok(Json(DatabaseView::of(&service, d).await?))
}
