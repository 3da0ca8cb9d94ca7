//! Scale (replicas) and resources (memory and CPU: at least the least an
//! app runs with, lowered to the plan's maxima).

use axum::extract::Path;
use axum::{Extension, Json};
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::{Body, Validator};
use plateau_core::time;
use plateau_store::apps::{self as db, AppPlanLimits};
use plateau_store::events;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{load, load_live_in};
use crate::Apps;
use crate::pipeline::event;

/// The least memory and CPU an app runs with.
const MIN_MEMORY_MB: i64 = 16;
const MIN_MILLI_CPU: i64 = 10;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScaleView {
    pub replicas: i64,
    /// The plan's maximum.
    pub max_replicas: i64,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Scale {
    /// At least 1; at most the plan's maximum (409 `plan_limit_reached` beyond it).
    #[schema(minimum = 1)]
    pub replicas: i64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourcesView {
    pub memory_mb: i64,
    pub milli_cpu: i64,
    pub max_memory_mb: i64,
    pub max_milli_cpu: i64,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Resources {
    /// At least 16; above the plan's maximum it is lowered to it.
    #[schema(minimum = 16)]
    pub memory_mb: Option<i64>,
    /// At least 10; above the plan's maximum it is lowered to it.
    #[schema(minimum = 10)]
    pub milli_cpu: Option<i64>,
}

async fn plan(apps: &Apps, caller: &Caller) -> Result<AppPlanLimits, ApiError> {
    db::plan_limits(apps.db(), &caller.plan)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("no app limits for plan {}", caller.plan)))
}

/// The app's replica count.
#[utoipa::path(get, path = "/apps/{id}/scale", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "replicas", body = ScaleView)))]
pub async fn get_scale(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ScaleView>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let limits = plan(&apps, &caller).await?;
    Ok(Json(ScaleView {
        replicas: app.replicas,
        max_replicas: limits.replicas,
    }))
}

/// Set the replica count (for a Wasm app: requests served at once).
#[utoipa::path(put, path = "/apps/{id}/scale", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = Scale,
    responses((status = 200, description = "replicas", body = ScaleView),
              (status = 409, description = "more replicas than the plan allows", body = plateau_api::error::Problem)))]
pub async fn put_scale(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<Scale>,
) -> Result<Json<ScaleView>, ApiError> {
    let limits = plan(&apps, &caller).await?;
    if input.replicas < 1 {
        return Err(ApiError::invalid("replicas", "must be at least 1"));
    }
    if input.replicas > limits.replicas {
        return Err(ApiError::conflict(
            "plan_limit_reached",
            format!(
                "the {} plan allows at most {} replicas; scale down or move to a larger plan",
                caller.plan, limits.replicas
            ),
        ));
    }
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    db::set_replicas(&mut tx, &app.id, input.replicas, now).await?;
    let e = event(&app, "app.scaled", "update", &caller.actor())
        .data(json!({ "from": app.replicas, "to": input.replicas }));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    apps.nudge_agent(&app.id);
    Ok(Json(ScaleView {
        replicas: input.replicas,
        max_replicas: limits.replicas,
    }))
}

/// The app's memory and CPU, and the plan's maxima.
#[utoipa::path(get, path = "/apps/{id}/resources", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "resources", body = ResourcesView)))]
pub async fn get_resources(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ResourcesView>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let limits = plan(&apps, &caller).await?;
    Ok(Json(ResourcesView {
        memory_mb: app.memory_mb,
        milli_cpu: app.milli_cpu,
        max_memory_mb: limits.memory_mb,
        max_milli_cpu: limits.milli_cpu,
    }))
}

/// Change memory and CPU: a value below the least an app runs with is a
/// 400 naming the field; one above the plan's maximum is lowered to it.
/// The replicas are relaunched under the new limits with zero downtime.
#[utoipa::path(put, path = "/apps/{id}/resources", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = Resources,
    responses((status = 200, description = "resources after clamping", body = ResourcesView)))]
pub async fn put_resources(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<Resources>,
) -> Result<Json<ResourcesView>, ApiError> {
    Validator::new()
        .check(
            input.memory_mb.is_none_or(|m| m >= MIN_MEMORY_MB),
            "memoryMb",
            format!("must be at least {MIN_MEMORY_MB}"),
        )
        .check(
            input.milli_cpu.is_none_or(|c| c >= MIN_MILLI_CPU),
            "milliCpu",
            format!("must be at least {MIN_MILLI_CPU}"),
        )
        .finish()?;
    let limits = plan(&apps, &caller).await?;
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    let memory = input
        .memory_mb
        .unwrap_or(app.memory_mb)
        .clamp(MIN_MEMORY_MB, limits.memory_mb.max(MIN_MEMORY_MB));
    let cpu = input
        .milli_cpu
        .unwrap_or(app.milli_cpu)
        .clamp(MIN_MILLI_CPU, limits.milli_cpu.max(MIN_MILLI_CPU));
    db::set_resources(&mut tx, &app.id, memory, cpu, now).await?;
    let e = event(&app, "app.resources_changed", "update", &caller.actor()).data(json!({
        "memoryMb": memory,
        "milliCpu": cpu,
    }));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    apps.nudge_agent(&app.id);
    Ok(Json(ResourcesView {
        memory_mb: memory,
        milli_cpu: cpu,
        max_memory_mb: limits.memory_mb,
        max_milli_cpu: limits.milli_cpu,
    }))
}
