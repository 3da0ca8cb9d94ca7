//! `/anomalies` (spec sections 4.7 and 6): `GET /anomalies` lists what
//! the monitors found, newest first; `POST /anomalies` sets up a monitor
//! (a metric of the series store for the organisation, a project or a
//! resource, and a sensitivity), kept under `/anomalies/monitors`. The
//! method and its evaluation are [`crate::anomalies`] and
//! [`plateau_core::anomaly`].

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_core::anomaly::Sensitivity;
use plateau_core::id::new_id;
use plateau_core::{prices, time};
use plateau_store::anomalies::{self, Anomaly, Monitor};
use plateau_store::events::{self, NewEvent};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::watch;
use super::{Pairs, page_and_filters, param};
use crate::anomalies::MAX_MONITORS;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::{Body, Validator};
use crate::pagination::{Page, Pager};
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MonitorView {
    pub id: String,
    pub name: String,
    /// A metric of the price table.
    pub metric: String,
    /// `low` (scores past 5), `medium` (past 3.5) or `high` (past 2.5).
    #[schema(pattern = "^(low|medium|high)$")]
    pub sensitivity: String,
    pub project_id: Option<String>,
    pub resource_id: Option<String>,
    pub notify_emails: Vec<String>,
    pub enabled: bool,
    /// The last complete day judged (UTC), once judged.
    pub checked_day: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Monitor> for MonitorView {
    fn from(m: Monitor) -> Self {
        MonitorView {
            notify_emails: serde_json::from_str(&m.notify_emails).unwrap_or_default(),
            enabled: m.enabled != 0,
            checked_day: Some(m.checked_day).filter(|d| !d.is_empty()),
            created_at: time::to_rfc3339(m.created_at),
            updated_at: time::to_rfc3339(m.updated_at),
            id: m.id,
            name: m.name,
            metric: m.metric,
            sensitivity: m.sensitivity,
            project_id: m.project_id,
            resource_id: m.resource_id,
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AnomalyView {
    pub id: String,
    pub monitor_id: String,
    pub metric: String,
    pub project_id: Option<String>,
    pub resource_id: Option<String>,
    /// The unusual day (UTC).
    pub day: String,
    /// What the day measured.
    pub value: f64,
    /// What its history predicted (trend and weekly season).
    pub expected: f64,
    /// Robust standard deviations from the expected value.
    pub score: f64,
    #[schema(pattern = "^(spike|dip)$")]
    pub direction: String,
    pub detected_at: String,
}

impl From<Anomaly> for AnomalyView {
    fn from(a: Anomaly) -> Self {
        AnomalyView {
            detected_at: time::to_rfc3339(a.detected_at),
            id: a.id,
            monitor_id: a.monitor_id,
            metric: a.metric,
            project_id: a.project_id,
            resource_id: a.resource_id,
            day: a.day,
            value: a.value,
            expected: a.expected,
            score: a.score,
            direction: a.direction,
        }
    }
}

/// A new monitor: a name, a metric, and optionally a sensitivity, what it
/// narrows to and whom it emails.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewMonitor {
    #[schema(schema_with = crate::openapi::name_schema)]
    pub name: String,
    /// A metric of the price table, e.g. `app_requests`.
    #[schema(schema_with = required_metric_schema)]
    pub metric: String,
    /// `low`, `medium` (default) or `high`.
    #[schema(pattern = "^(low|medium|high)$")]
    pub sensitivity: Option<String>,
    /// Only this project's resources.
    pub project_id: Option<String>,
    /// Only this resource.
    #[schema(min_length = 1, max_length = 200)]
    pub resource_id: Option<String>,
    #[schema(schema_with = super::alarms::emails_schema)]
    pub notify_emails: Option<Vec<String>>,
    pub enabled: Option<bool>,
}

impl From<NewMonitor> for MonitorInput {
    fn from(n: NewMonitor) -> Self {
        MonitorInput {
            name: Some(n.name),
            metric: Some(n.metric),
            sensitivity: n.sensitivity,
            project_id: n.project_id.map(Some),
            resource_id: n.resource_id.map(Some),
            notify_emails: n.notify_emails,
            enabled: n.enabled,
        }
    }
}

/// A change of a monitor: any field; `null` clears `projectId` or
/// `resourceId`.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MonitorInput {
    #[schema(schema_with = crate::openapi::optional_name_schema)]
    pub name: Option<String>,
    /// A metric of the price table, e.g. `app_requests`.
    #[schema(schema_with = super::alarms::metric_schema)]
    pub metric: Option<String>,
    /// `low`, `medium` or `high`.
    #[schema(pattern = "^(low|medium|high)$")]
    pub sensitivity: Option<String>,
    #[serde(default, deserialize_with = "crate::json::present")]
    #[schema(value_type = Option<String>)]
    pub project_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::json::present")]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 200)]
    pub resource_id: Option<Option<String>>,
    #[schema(schema_with = super::alarms::emails_schema)]
    pub notify_emails: Option<Vec<String>>,
    pub enabled: Option<bool>,
}

/// The metrics of the price table, as an enum that is never `null`.
fn required_metric_schema() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .enum_values(Some(prices::PRICES.iter().map(|p| p.metric)))
        .build()
}

/// Applies `input` over `m`, checking every field at once.
async fn apply(
    app: &AppState,
    caller: &Caller,
    m: &mut Monitor,
    input: MonitorInput,
) -> Result<(), ApiError> {
    let mut v = Validator::new();
    if let Some(name) = input.name {
        v.name("name", &name);
        m.name = name.trim().to_owned();
    }
    if let Some(metric) = input.metric {
        v.check(
            prices::of(&metric).is_some(),
            "metric",
            "must be one of the metrics of the price table (see GET /usage)",
        );
        m.metric = metric;
    }
    if let Some(sensitivity) = input.sensitivity {
        v.check(
            Sensitivity::parse(&sensitivity).is_some(),
            "sensitivity",
            format!("must be one of {}", Sensitivity::ALL.join(", ")),
        );
        m.sensitivity = sensitivity;
    }
    watch::resource(&mut v, input.resource_id, &mut m.resource_id);
    if let Some(emails) = input.notify_emails {
        m.notify_emails = watch::notify_emails(&mut v, &emails);
    }
    if let Some(enabled) = input.enabled {
        m.enabled = i64::from(enabled);
    }
    watch::project(&mut v, caller, input.project_id, &mut m.project_id);
    v.finish()?;
    watch::project_exists(app, caller, m.project_id.as_deref()).await
}

async fn find(app: &AppState, caller: &Caller, id: &str) -> Result<Monitor, ApiError> {
    anomalies::get(app.db(), &caller.org_id, id)
        .await?
        .filter(|m| caller.project_id.is_none() || caller.project_id == m.project_id)
        .ok_or_else(|| ApiError::not_found(format!("anomaly monitor {id} does not exist")))
}

async fn audit(
    tx: &mut plateau_store::Tx,
    caller: &Caller,
    m: &Monitor,
    kind: &str,
    action: &str,
    now: i64,
) -> Result<(), ApiError> {
    let event = NewEvent::audited(&caller.org_id, kind, "settings", action, &caller.actor())
        .resource("anomaly_monitor", &m.id)
        .data(json!({
            "name": m.name,
            "metric": m.metric,
            "sensitivity": m.sensitivity,
            "enabled": m.enabled != 0,
        }));
    events::record(tx, &event, now).await?;
    Ok(())
}

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
