//! Password rotation (spec 4.6): `GET/PUT /databases/{id}/rotation`
//! (`intervalDays`), `POST .../rotation/rotate` (now) and `POST
//! .../rotation/migrate` (makes the second login role rotation alternates
//! with; rotations do it too). How a rotation stays zero-downtime:
//! [`crate::rotation`].

use axum::Json;
use axum::extract::{Path, State};
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::{Body, Validator};
use plateau_core::time;
use plateau_store::databases::Database;
use plateau_store::databases::rotations::Rotation;
use plateau_store::events::NewEvent;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Service, find_locked};
use crate::service::DatabaseService;

/// A database's rotation schedule and state.
#[derive(Serialize, ToSchema)]
#[schema(as = DatabaseRotation)]
#[serde(rename_all = "camelCase")]
pub struct RotationView {
    /// Days between scheduled rotations; 0: only when asked.
    pub interval_days: i64,
    /// The role the connection details name now.
    pub login_role: String,
    pub rotated_at: Option<String>,
    /// When the next scheduled rotation is due.
    pub next_rotation_at: Option<String>,
    /// The role of the previous password, which keeps working until
    /// `previousRetiresAt`.
    pub previous_role: Option<String>,
    pub previous_retires_at: Option<String>,
}

fn view(d: &Database, r: &Rotation) -> Result<RotationView, ApiError> {
    let placement = DatabaseService::placement(d)?;
    let since = r.rotated_at.unwrap_or(r.updated_at);
    Ok(RotationView {
        interval_days: r.interval_days,
        login_role: match r.login_role.as_str() {
            "" => placement.owner,
            role => role.to_owned(),
        },
        rotated_at: r.rotated_at.map(time::to_rfc3339),
        next_rotation_at: (r.interval_days > 0)
            .then(|| time::to_rfc3339(since + r.interval_days * 86_400_000)),
        previous_role: (!r.retiring_role.is_empty()).then(|| r.retiring_role.clone()),
        previous_retires_at: r.retire_at.map(time::to_rfc3339),
    })
}

fn changed(caller: &Caller, id: &str, kind: &str) -> NewEvent {
    NewEvent::audited(&caller.org_id, kind, "resources", "update", &caller.actor())
        .resource("database", id)
}

/// The rotation schedule and state.
#[utoipa::path(get, path = "/databases/{id}/rotation", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "the rotation", body = RotationView),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn get(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<RotationView>, ApiError> {
    let d = super::find(&app, &caller, &id).await?;
    let r = service.rotation(&d).await?;
    Ok(Json(view(&d, &r)?))
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SetRotation {
    /// Days between scheduled rotations (1 to 365), or 0 for none.
    #[schema(minimum = 0, maximum = 365)]
    pub interval_days: i64,
}

/// Schedules a rotation every `intervalDays` days, counted from the last
/// one (0: rotate only when asked).
#[utoipa::path(put, path = "/databases/{id}/rotation", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    request_body = SetRotation,
    responses((status = 200, description = "the rotation", body = RotationView),
              (status = 400, description = "a bad field, named", body = plateau_api::error::Problem),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn set(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<SetRotation>,
) -> Result<Json<RotationView>, ApiError> {
    caller.require_manager("scheduling password rotation")?;
    Validator::new()
        .check(
            (0..=365).contains(&input.interval_days),
            "intervalDays",
            "must be between 0 and 365",
        )
        .finish()?;
    let (_guard, d) = find_locked(&app, &service, &caller, &id).await?;
    let r = service
        .set_rotation_interval(&d, input.interval_days)
        .await?;
    let event = changed(&caller, &d.id, "database.rotation_scheduled")
        .data(serde_json::json!({ "intervalDays": r.interval_days }));
    service.record_event(&event).await?;
    Ok(Json(view(&d, &r)?))
}

/// Rotates the connection password now: `GET /connection` then names the
/// other login role with a new password; the previous URI keeps working
/// for the overlap (`previousRetiresAt`), open sessions are not ended.
#[utoipa::path(post, path = "/databases/{id}/rotation/rotate", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "the rotation", body = RotationView),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn rotate(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<RotationView>, ApiError> {
    caller.require_manager("rotating a database's password")?;
    let (_guard, d) = find_locked(&app, &service, &caller, &id).await?;
    let event = changed(&caller, &d.id, "database.password_rotated");
    let r = service.rotate(&d, event).await?;
    Ok(Json(view(&d, &r)?))
}

/// Makes the second login role that rotations alternate with (once;
/// idempotent). No session is interrupted.
#[utoipa::path(post, path = "/databases/{id}/rotation/migrate", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "the rotation", body = RotationView),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn migrate(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<RotationView>, ApiError> {
    caller.require_manager("preparing password rotation")?;
    let (_guard, d) = find_locked(&app, &service, &caller, &id).await?;
    let r = service.migrate_rotation(&d).await?;
    service
        .record_event(&changed(&caller, &d.id, "database.rotation_migrated"))
        .await?;
    Ok(Json(view(&d, &r)?))
}
