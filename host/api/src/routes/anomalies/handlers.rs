//! The `/anomalies` handlers: the anomalies found, and the monitors'
//! creation, list, reading, change and deletion.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_core::anomaly::Sensitivity;
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_store::anomalies::{self, Monitor};

use super::{AnomalyView, MonitorInput, MonitorView, NewMonitor, apply, audit, find};
use crate::anomalies::MAX_MONITORS;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::Body;
use crate::pagination::{Page, Pager};
use crate::routes::{Pairs, page_and_filters, param};
use crate::state::AppState;

/// The anomalies the monitors found, newest first.
#[utoipa::path(get, path = "/anomalies", tag = "observability",
    security(("bearer" = ["observability:read"])),
    params(("monitorId" = Option<String>, Query, description = "only this monitor's"),
           ("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "anomalies found", body = Page<AnomalyView>)))]
pub async fn found(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<AnomalyView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(app.cursors(), &page, "anomalies", &caller.org_id, filters)?;
    let listed = anomalies::found(
        app.db(),
        &caller.org_id,
        param(&pairs, "monitorId"),
        caller.project_id.as_deref(),
        pager.keyset(),
    )
    .await?;
    Ok(Json(pager.finish(
        listed,
        |a| a.id.clone(),
        AnomalyView::from,
    )))
}

/// Set up an anomaly monitor on one metric's daily series; it judges the
/// last seven complete days within `PLATEAU_ALARMS_EVALUATE_MS`, then
/// each new day once, and records `anomaly.detected` for each unusual day.
#[utoipa::path(post, path = "/anomalies", tag = "observability",
    security(("bearer" = ["observability:write"])),
    request_body = NewMonitor,
    responses((status = 201, description = "the new monitor", body = MonitorView),
              (status = 404, description = "projectId names no project of the organisation", body = crate::error::Problem),
              (status = 409, description = "the organisation has 50 monitors", body = crate::error::Problem)))]
pub async fn create(
    State(app): State<AppState>,
    caller: Caller,
    Body(input): Body<NewMonitor>,
) -> Result<(StatusCode, Json<MonitorView>), ApiError> {
    let now = time::now_ms();
    let mut m = Monitor {
        id: new_id("anmon"),
        org_id: caller.org_id.clone(),
        project_id: None,
        resource_id: None,
        name: String::new(),
        metric: String::new(),
        sensitivity: Sensitivity::Medium.as_str().to_owned(),
        notify_emails: "[]".to_owned(),
        enabled: 1,
        checked_day: String::new(),
        created_at: now,
        updated_at: now,
    };
    apply(&app, &caller, &mut m, input.into()).await?;
    if anomalies::count(app.db(), &caller.org_id).await? >= MAX_MONITORS {
        return Err(ApiError::conflict(
            "too_many_monitors",
            format!("an organisation may have {MAX_MONITORS} anomaly monitors; delete one first"),
        ));
    }
    let mut tx = app.db().begin().await?;
    anomalies::save(&mut tx, &m, true).await?;
    audit(
        &mut tx,
        &caller,
        &m,
        "anomaly_monitor.created",
        "create",
        now,
    )
    .await?;
    tx.commit_last().await?;
    Ok((StatusCode::CREATED, Json(m.into())))
}

/// List anomaly monitors, oldest first.
#[utoipa::path(get, path = "/anomalies/monitors", tag = "observability",
    security(("bearer" = ["observability:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "monitors", body = Page<MonitorView>)))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<MonitorView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(
        app.cursors(),
        &page,
        "anomaly_monitors",
        &caller.org_id,
        filters,
    )?;
    let listed = anomalies::list(
        app.db(),
        &caller.org_id,
        caller.project_id.as_deref(),
        pager.keyset(),
    )
    .await?;
    Ok(Json(pager.finish(
        listed,
        |m| m.id.clone(),
        MonitorView::from,
    )))
}

/// One anomaly monitor.
#[utoipa::path(get, path = "/anomalies/monitors/{id}", tag = "observability",
    security(("bearer" = ["observability:read"])),
    params(("id" = String, Path, description = "monitor id")),
    responses((status = 200, description = "the monitor", body = MonitorView)))]
pub async fn get(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<MonitorView>, ApiError> {
    Ok(Json(find(&app, &caller, &id).await?.into()))
}

/// Change a monitor; it goes on from the last day it judged.
#[utoipa::path(patch, path = "/anomalies/monitors/{id}", tag = "observability",
    security(("bearer" = ["observability:write"])),
    params(("id" = String, Path, description = "monitor id")),
    request_body = Option<MonitorInput>,
    responses((status = 200, description = "the changed monitor", body = MonitorView)))]
pub async fn update(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<MonitorInput>,
) -> Result<Json<MonitorView>, ApiError> {
    let mut m = find(&app, &caller, &id).await?;
    apply(&app, &caller, &mut m, input).await?;
    let now = time::now_ms();
    // A new `updatedAt` makes an evaluation under the old settings lose
    // its compare-and-set.
    m.updated_at = now.max(m.updated_at + 1);
    let mut tx = app.db().begin().await?;
    anomalies::save(&mut tx, &m, false).await?;
    audit(
        &mut tx,
        &caller,
        &m,
        "anomaly_monitor.updated",
        "update",
        now,
    )
    .await?;
    tx.commit_last().await?;
    Ok(Json(m.into()))
}

/// Delete a monitor; the anomalies it found stay listed.
#[utoipa::path(delete, path = "/anomalies/monitors/{id}", tag = "observability",
    security(("bearer" = ["observability:write"])),
    params(("id" = String, Path, description = "monitor id")),
    responses((status = 200, description = "the deleted monitor", body = MonitorView)))]
pub async fn delete(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<MonitorView>, ApiError> {
    let m = find(&app, &caller, &id).await?;
    let now = time::now_ms();
    let mut tx = app.db().begin().await?;
    if !anomalies::delete(&mut tx, &caller.org_id, &id).await? {
        return Err(ApiError::not_found(format!(
            "anomaly monitor {id} does not exist"
        )));
    }
    audit(
        &mut tx,
        &caller,
        &m,
        "anomaly_monitor.deleted",
        "delete",
        now,
    )
    .await?;
    tx.commit_last().await?;
    Ok(Json(m.into()))
}
