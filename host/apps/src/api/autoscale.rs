//! `GET/PUT /apps/{id}/autoscale`: between `min` and `max` replicas on
//! CPU against `cpuTargetPct`, scaled by the agent (`crate::autoscale`).
//! `min` 0 lets an idle app go to zero replicas; the edge wakes it.

use axum::extract::Path;
use axum::{Extension, Json};
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::{Body, Validator};
use plateau_core::time;
use plateau_store::apps::autoscale::{self as db, Autoscale};
use plateau_store::apps::{self as apps_db, App};
use plateau_store::events;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{load, load_live_in};
use crate::Apps;
use crate::pipeline::event;

/// The CPU target of an app that never set one.
const DEFAULT_TARGET_PCT: i64 = 70;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoscaleView {
    pub enabled: bool,
    pub min: i64,
    pub max: i64,
    /// The replicas' average CPU the agent keeps them near, in percent
    /// of their `milliCpu` (a Wasm replica: of one core).
    pub cpu_target_pct: i64,
    /// Replicas now (0 while an app with `min` 0 sleeps).
    pub replicas: i64,
    /// The plan's maximum of `max`.
    pub max_replicas: i64,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AutoscaleInput {
    pub enabled: bool,
    /// At least 0 (0: the app sleeps when idle); default the current one, or 1.
    #[schema(minimum = 0)]
    pub min: Option<i64>,
    /// At least 1 and `min`, at most the plan's maximum (409
    /// `plan_limit_reached` beyond it); default the current one, or the
    /// app's replicas.
    #[schema(minimum = 1)]
    pub max: Option<i64>,
    /// 1 to 100; default the current one, or 70.
    #[schema(minimum = 1, maximum = 100)]
    pub cpu_target_pct: Option<i64>,
}

fn view(a: &Autoscale, app: &App, max_replicas: i64) -> AutoscaleView {
    AutoscaleView {
        enabled: a.enabled == 1,
        min: a.min_replicas,
        max: a.max_replicas,
        cpu_target_pct: a.cpu_target_pct,
        replicas: app.replicas,
        max_replicas,
    }
}

/// The setting of an app that has none: off, at its replicas.
fn default_for(app: &App) -> Autoscale {
    Autoscale {
        app_id: app.id.clone(),
        enabled: 0,
        min_replicas: 1,
        max_replicas: app.replicas.max(1),
        cpu_target_pct: DEFAULT_TARGET_PCT,
        updated_at: app.created_at,
    }
}

async fn plan_replicas(apps: &Apps, caller: &Caller) -> Result<i64, ApiError> {
    apps_db::plan_limits(apps.db(), &caller.plan)
        .await?
        .map(|l| l.replicas)
        .ok_or_else(|| ApiError::Internal(format!("no app limits for plan {}", caller.plan)))
}

/// The app's autoscale setting.
#[utoipa::path(get, path = "/apps/{id}/autoscale", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "autoscale", body = AutoscaleView)))]
pub async fn get(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<AutoscaleView>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let max_replicas = plan_replicas(&apps, &caller).await?;
    let setting = db::get(apps.db(), &app.id)
        .await?
        .unwrap_or_else(|| default_for(&app));
    Ok(Json(view(&setting, &app, max_replicas)))
}

/// Turn autoscale on or off and set its bounds and target. Turning it
/// off leaves the replicas where they are (an app asleep gets one).
#[utoipa::path(put, path = "/apps/{id}/autoscale", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = AutoscaleInput,
    responses((status = 200, description = "autoscale", body = AutoscaleView),
              (status = 409, description = "a max beyond the plan's replicas", body = plateau_api::error::Problem)))]
pub async fn put(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<AutoscaleInput>,
) -> Result<Json<AutoscaleView>, ApiError> {
    let max_replicas = plan_replicas(&apps, &caller).await?;
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let mut app = load_live_in(&mut tx, &caller, &id).await?;
    let current = db::get_in(&mut tx, &app.id)
        .await?
        .unwrap_or_else(|| default_for(&app));
    let min = input.min.unwrap_or(current.min_replicas);
    let max = input.max.unwrap_or(current.max_replicas);
    let target = input.cpu_target_pct.unwrap_or(current.cpu_target_pct);
    Validator::new()
        .check(min >= 0, "min", "must be at least 0")
        .check(max >= 1, "max", "must be at least 1")
        .check(max >= min, "max", format!("must be at least min ({min})"))
        .check(
            (1..=100).contains(&target),
            "cpuTargetPct",
            "must be from 1 to 100",
        )
        .finish()?;
    if max > max_replicas {
        return Err(ApiError::conflict(
            "plan_limit_reached",
            format!(
                "the {} plan allows at most {max_replicas} replicas; lower max or move to a larger plan",
                caller.plan
            ),
        ));
    }
    let setting = Autoscale {
        app_id: app.id.clone(),
        enabled: i64::from(input.enabled),
        min_replicas: min,
        max_replicas: max,
        cpu_target_pct: target,
        updated_at: now,
    };
    db::put(&mut tx, &setting).await?;
    let e = event(&app, "app.autoscale_changed", "update", &caller.actor()).data(json!({
        "enabled": input.enabled,
        "min": min,
        "max": max,
        "cpuTargetPct": target,
    }));
    events::record(&mut tx, &e, now).await?;
    if !input.enabled && app.replicas == 0 {
        // Off while asleep: the app runs one replica again.
        db::scale_from(&mut tx, &app.id, 0, 1, now).await?;
        let e = event(&app, "app.scaled", "update", &caller.actor())
            .data(json!({ "from": 0, "to": 1, "cause": "autoscale_off" }));
        events::record(&mut tx, &e, now).await?;
        app.replicas = 1;
    }
    tx.commit_last().await?;
    apps.nudge_agent(&app.id);
    Ok(Json(view(&setting, &app, max_replicas)))
}
