//! `POST /apps/{id}/migrate`: moves an app to another runner with zero
//! failed requests (the target starts it, health-checks it and switches
//! the placement to itself; the old runner drains: `crate::placement`),
//! its volumes with it (`crate::volumes::moving`).
//! `GET /admin/runners` lists the runners with their heartbeat and the
//! apps placed on them, and `POST /admin/runners/{id}/evacuate` places the
//! apps of a runner that stopped heartbeating, volumes included, on live
//! runners (the operator's call: a volume's data stays on the dead host).

use axum::extract::Path;
use axum::http::StatusCode;
use axum::{Extension, Json};
use plateau_api::auth::{AdminSession, Caller};
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_core::time;
use plateau_store::apps as apps_db;
use plateau_store::events::{self, Actor};
use plateau_store::runners::{self, Placement};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::load_live_in;
use crate::pipeline::event;
use crate::placement::{pick, reschedule, volume_host};
use crate::{AppStatus, Apps};

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MigrateInput {
    /// The runner (`hst_...`, from `GET /admin/runners`) to move to;
    /// default the live runner with the fewest replicas.
    pub target_server_id: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementView {
    pub app_id: String,
    /// The runner that serves the app now.
    pub server_id: String,
    /// The runner a migration moves it to, until it serves there.
    pub target_server_id: Option<String>,
    pub migration_started_at: Option<String>,
    pub switched_at: Option<String>,
}

impl From<Placement> for PlacementView {
    fn from(p: Placement) -> Self {
        PlacementView {
            app_id: p.app_id,
            server_id: p.runner_id,
            target_server_id: p.target_runner_id,
            migration_started_at: p.migration_started_at.map(time::to_rfc3339),
            switched_at: p.switched_at.map(time::to_rfc3339),
        }
    }
}

/// Move the app to another runner: it starts there, is health-checked,
/// the edges switch to it, and its old replicas drain and stop. An app
/// with volumes stops for their copy (requests wait at the edge) and
/// starts on the target with them; its old volumes are removed after the
/// switch. Answers once the migration started; `GET /admin/runners` and
/// the app's events (`app.migrated`, `app.migration_failed`) say how it
/// ended.
#[utoipa::path(post, path = "/apps/{id}/migrate", tag = "apps",
    security(("bearer" = ["apps:deploy"])),
    params(("id" = String, Path, description = "app id")),
    request_body = MigrateInput,
    responses((status = 202, description = "the migration started", body = PlacementView),
              (status = 400, description = "an unknown, dead or current target runner", body = plateau_api::error::Problem),
              (status = 409, description = "a migration under way, an app or one of its volumes not running, or no other live runner", body = plateau_api::error::Problem)))]
pub async fn migrate(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<MigrateInput>,
) -> Result<(StatusCode, Json<PlacementView>), ApiError> {
    let db = apps.db();
    let lease = apps.config().runner_lease;
    let mut tx = db.begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    if app.live_deployment_id.is_none() || !AppStatus::Running.is(&app.status) {
        return Err(ApiError::conflict(
            "app_not_running",
            format!(
                "app {id} is {}; migrate a running app (its placement moves when it runs)",
                app.status
            ),
        ));
    }
    let Some(placed) = runners::placement_in(&mut tx, &app.id).await? else {
        return Err(ApiError::conflict(
            "app_not_placed",
            format!("app {id} is not placed on a runner yet; retry in a moment"),
        ));
    };
    if let Some(target) = &placed.target_runner_id {
        return Err(ApiError::conflict(
            "migration_in_progress",
            format!("app {id} is already moving to runner {target}"),
        ));
    }
    let volumes = plateau_store::apps::volumes::list_in(&mut tx, &app.id).await?;
    let volumes: Vec<_> = volumes
        .into_iter()
        .filter(|v| v.status != "deleting")
        .collect();
    if let Some(v) = volumes
        .iter()
        .find(|v| v.status != "running" || v.host_id != placed.runner_id)
    {
        return Err(ApiError::conflict(
            "volume_not_running",
            format!(
                "volume {} of app {id} is {}; migrate the app once its volumes run",
                v.id, v.status
            ),
        ));
    }
    let target = match input.target_server_id {
        Some(target) => {
            let now = time::now_ms();
            let field = "targetServerId";
            let runner = runners::get(db, &target)
                .await?
                .ok_or_else(|| ApiError::invalid(field, format!("no runner {target}")))?;
            if runner.id == placed.runner_id {
                return Err(ApiError::invalid(
                    field,
                    format!("app {id} runs on runner {target} already"),
                ));
            }
            if !runner.alive(now, lease.as_millis() as i64) {
                return Err(ApiError::invalid(
                    field,
                    format!(
                        "runner {target} has not sent a heartbeat for a lease; pick a live one"
                    ),
                ));
            }
            target
        }
        // Its volumes move with it: any live runner.
        None if !volumes.is_empty() => {
            any_live(&apps, &placed.runner_id).await?.ok_or_else(|| {
                ApiError::conflict("no_runner", "no other runner is live to move the app to")
            })?
        }
        None => pick(db, &app.id, lease, Some(&placed.runner_id))
            .await?
            .ok_or_else(|| {
                ApiError::conflict("no_runner", "no other runner is live to move the app to")
            })?,
    };
    let now = time::now_ms();
    if !runners::start_migration(&mut tx, &app.id, &placed.runner_id, &target, now).await? {
        return Err(ApiError::conflict(
            "migration_in_progress",
            format!("app {id} changed runner meanwhile; retry"),
        ));
    }
    let e = event(&app, "app.migration_started", "update", &caller.actor()).data(json!({
        "from": placed.runner_id,
        "to": target,
    }));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    let view = PlacementView {
        target_server_id: Some(target),
        migration_started_at: Some(time::to_rfc3339(now)),
        ..placed.into()
    };
    Ok((StatusCode::ACCEPTED, Json(view)))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunnerView {
    /// The host's id.
    pub id: String,
    /// Where other hosts' edges reach its edge.
    pub edge_address: String,
    pub started_at: String,
    pub last_heartbeat_at: String,
    /// Its heartbeat is at most a lease old.
    pub live: bool,
    /// The apps placed on it (a migration's target included).
    pub apps: Vec<PlacementView>,
    /// The replicas those apps ask for.
    pub replicas: i64,
}

#[derive(Serialize, ToSchema)]
pub struct RunnerList {
    pub items: Vec<RunnerView>,
}

/// The runners (one per host's agent), their heartbeat and what runs on
/// them.
#[utoipa::path(get, path = "/admin/runners", tag = "admin",
    security(("adminSession" = [])),
    responses((status = 200, description = "the runners", body = RunnerList)))]
pub async fn runners_list(
    Extension(apps): Extension<Apps>,
    _session: AdminSession,
) -> Result<Json<RunnerList>, ApiError> {
    let db = apps.db();
    let now = time::now_ms();
    let lease = apps.config().runner_lease.as_millis() as i64;
    let placements = runners::placements(db).await?;
    let loads = runners::loads(db).await?;
    let items = runners::list(db)
        .await?
        .into_iter()
        .map(|r| RunnerView {
            live: r.alive(now, lease),
            apps: placements
                .iter()
                .filter(|p| p.runner_id == r.id || p.target_runner_id.as_ref() == Some(&r.id))
                .cloned()
                .map(Into::into)
                .collect(),
            replicas: loads.iter().find(|(id, _)| *id == r.id).map_or(0, |l| l.1),
            edge_address: r.edge_address,
            started_at: time::to_rfc3339(r.started_at),
            last_heartbeat_at: time::to_rfc3339(r.heartbeat_at),
            id: r.id,
        })
        .collect();
    Ok(Json(RunnerList { items }))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Evacuated {
    /// The apps placed on another runner.
    pub moved: Vec<PlacementView>,
}

/// Place every app of a runner that stopped heartbeating on live runners,
/// apps with volumes included: their volumes start empty on the new
/// runner (restore a backup there to bring the data back).
#[utoipa::path(post, path = "/admin/runners/{id}/evacuate", tag = "admin",
    security(("adminSession" = [])),
    params(("id" = String, Path, description = "runner id")),
    responses((status = 200, description = "the apps moved", body = Evacuated),
              (status = 404, description = "no such runner", body = plateau_api::error::Problem),
              (status = 409, description = "the runner is live, or no other runner is", body = plateau_api::error::Problem)))]
pub async fn evacuate(
    Extension(apps): Extension<Apps>,
    session: AdminSession,
    Path(id): Path<String>,
) -> Result<Json<Evacuated>, ApiError> {
    let db = apps.db();
    let lease = apps.config().runner_lease;
    let runner = runners::get(db, &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("runner {id} does not exist")))?;
    if runner.alive(time::now_ms(), lease.as_millis() as i64) {
        return Err(ApiError::conflict(
            "runner_live",
            format!("runner {id} is live; migrate its apps one by one instead"),
        ));
    }
    let actor = Actor::admin(session.ip.clone());
    let mut moved = Vec::new();
    for placed in runners::placements(db).await? {
        if placed.runner_id != id {
            continue;
        }
        let Some(app) = apps_db::get_any(db, &placed.app_id).await? else {
            continue;
        };
        let to = pick(db, &app.id, lease, Some(&id)).await?;
        let to = match (to, volume_host(db, &app.id).await?) {
            (Some(to), _) => to,
            // The volumes' host is the dead one: any live runner.
            (None, Some(_)) => match any_live(&apps, &id).await? {
                Some(to) => to,
                None => continue,
            },
            (None, None) => continue,
        };
        if reschedule(db, &app, &placed, &to, "evacuated", &actor).await?
            && let Some(now) = runners::placement(db, &app.id).await?
        {
            moved.push(now.into());
        }
    }
    if moved.is_empty()
        && runners::placements(db)
            .await?
            .iter()
            .any(|p| p.runner_id == id)
    {
        return Err(ApiError::conflict(
            "no_runner",
            format!("no other runner is live to take the apps of {id}"),
        ));
    }
    Ok(Json(Evacuated { moved }))
}

/// The live runner with the fewest replicas, other than `except`.
async fn any_live(apps: &Apps, except: &str) -> Result<Option<String>, ApiError> {
    let db = apps.db();
    let now = time::now_ms();
    let lease = apps.config().runner_lease.as_millis() as i64;
    let loads = runners::loads(db).await?;
    Ok(runners::list(db)
        .await?
        .into_iter()
        .filter(|r| r.id != except && r.alive(now, lease))
        .min_by_key(|r| loads.iter().find(|(id, _)| *id == r.id).map_or(0, |l| l.1))
        .map(|r| r.id))
}
