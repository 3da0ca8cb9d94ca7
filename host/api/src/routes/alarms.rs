//! `/alarms` (spec sections 4.7 and 6): threshold alarms on the metrics of
//! the series store. The rules and their evaluation are
//! [`crate::alarms`]; this module checks what users send and shows what
//! is stored.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_core::id::new_id;
use plateau_core::{prices, time};
use plateau_store::alarms::{self, Alarm};
use plateau_store::events::{self, NewEvent};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::watch::{self, MAX_EMAILS};
use super::{Pairs, page_and_filters};
use crate::alarms::{Comparison, MAX_ALARMS, MAX_WINDOW_DAYS, Measure, State as AlarmState};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::{Body, Validator};
use crate::pagination::{Page, Pager};
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AlarmView {
    pub id: String,
    pub name: String,
    /// A metric of the price table (see `GET /usage`).
    pub metric: String,
    /// `quantity`, or `cost`: cents at list price.
    #[schema(pattern = "^(quantity|cost)$")]
    pub measure: String,
    #[schema(pattern = "^(above|below)$")]
    pub comparison: String,
    pub threshold: f64,
    /// Days summed, today (UTC) included.
    pub window_days: i64,
    /// Only this project's resources, when set.
    pub project_id: Option<String>,
    /// Only this resource, when set.
    pub resource_id: Option<String>,
    /// Emailed on each change of state while the `alarms` email
    /// preference is on.
    pub notify_emails: Vec<String>,
    pub enabled: bool,
    /// `pending` until first evaluated, then `ok` or `triggered`.
    #[schema(pattern = "^(pending|ok|triggered)$")]
    pub state: String,
    /// What the last evaluation measured.
    pub value: Option<f64>,
    pub evaluated_at: Option<String>,
    pub state_changed_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Alarm> for AlarmView {
    fn from(a: Alarm) -> Self {
        AlarmView {
            notify_emails: serde_json::from_str(&a.notify_emails).unwrap_or_default(),
            enabled: a.enabled != 0,
            evaluated_at: a.evaluated_at.map(time::to_rfc3339),
            state_changed_at: a.state_changed_at.map(time::to_rfc3339),
            created_at: time::to_rfc3339(a.created_at),
            updated_at: time::to_rfc3339(a.updated_at),
            id: a.id,
            name: a.name,
            metric: a.metric,
            measure: a.measure,
            comparison: a.comparison,
            threshold: a.threshold,
            window_days: a.window_days,
            project_id: a.project_id,
            resource_id: a.resource_id,
            state: a.state,
            value: a.value,
        }
    }
}

/// An alarm as created (`name`, `metric`, `comparison` and `threshold`
/// required) or changed (any field; `null` clears `projectId` or
/// `resourceId`).
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AlarmInput {
    #[schema(schema_with = crate::openapi::optional_name_schema)]
    pub name: Option<String>,
    /// A metric of the price table, e.g. `compute_hours`.
    #[schema(schema_with = metric_schema)]
    pub metric: Option<String>,
    /// `quantity` (default) or `cost`.
    #[schema(pattern = "^(quantity|cost)$")]
    pub measure: Option<String>,
    #[schema(pattern = "^(above|below)$")]
    pub comparison: Option<String>,
    #[schema(minimum = 0)]
    pub threshold: Option<f64>,
    /// 1 (default: today) to 31.
    #[schema(minimum = 1, maximum = 31)]
    pub window_days: Option<i64>,
    #[serde(default, deserialize_with = "crate::json::present")]
    #[schema(value_type = Option<String>)]
    pub project_id: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::json::present")]
    #[schema(value_type = Option<String>, min_length = 1, max_length = 200)]
    pub resource_id: Option<Option<String>>,
    #[schema(schema_with = emails_schema)]
    pub notify_emails: Option<Vec<String>>,
    pub enabled: Option<bool>,
}

/// The metrics of the price table, as an enum.
pub(crate) fn metric_schema() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::Array(vec![
            utoipa::openapi::Type::String,
            utoipa::openapi::Type::Null,
        ]))
        .enum_values(Some(prices::PRICES.iter().map(|p| p.metric)))
        .build()
}

/// Up to 10 email addresses, or `null` (none).
pub(crate) fn emails_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{KnownFormat, SchemaFormat, SchemaType, Type};
    utoipa::openapi::schema::ArrayBuilder::new()
        .schema_type(SchemaType::Array(vec![Type::Array, Type::Null]))
        .items(
            utoipa::openapi::ObjectBuilder::new()
                .schema_type(utoipa::openapi::Type::String)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Email))),
        )
        .max_items(Some(MAX_EMAILS))
        .build()
}

/// Applies `input` over `alarm` (a new one when creating), checking every
/// field at once.
async fn apply(
    app: &AppState,
    caller: &Caller,
    alarm: &mut Alarm,
    input: AlarmInput,
    creating: bool,
) -> Result<(), ApiError> {
    let mut v = Validator::new();
    if creating {
        for (present, field) in [
            (input.name.is_some(), "name"),
            (input.metric.is_some(), "metric"),
            (input.comparison.is_some(), "comparison"),
            (input.threshold.is_some(), "threshold"),
        ] {
            v.check(present, field, "is required");
        }
    }
    if let Some(name) = input.name {
        v.name("name", &name);
        alarm.name = name.trim().to_owned();
    }
    if let Some(metric) = input.metric {
        v.check(
            prices::of(&metric).is_some(),
            "metric",
            "must be one of the metrics of the price table (see GET /usage)",
        );
        alarm.metric = metric;
    }
    if let Some(measure) = input.measure {
        v.check(
            Measure::parse(&measure).is_some(),
            "measure",
            format!("must be one of {}", Measure::ALL.join(", ")),
        );
        alarm.measure = measure;
    }
    if let Some(comparison) = input.comparison {
        v.check(
            Comparison::parse(&comparison).is_some(),
            "comparison",
            format!("must be one of {}", Comparison::ALL.join(", ")),
        );
        alarm.comparison = comparison;
    }
    if let Some(threshold) = input.threshold {
        v.check(
            threshold.is_finite() && threshold >= 0.0,
            "threshold",
            "must be a number of at least 0",
        );
        alarm.threshold = threshold;
    }
    if let Some(days) = input.window_days {
        v.check(
            (1..=MAX_WINDOW_DAYS).contains(&days),
            "windowDays",
            "must be from 1 to 31",
        );
        alarm.window_days = days;
    }
    watch::resource(&mut v, input.resource_id, &mut alarm.resource_id);
    if let Some(emails) = input.notify_emails {
        alarm.notify_emails = watch::notify_emails(&mut v, &emails);
    }
    if let Some(enabled) = input.enabled {
        alarm.enabled = i64::from(enabled);
    }
    watch::project(&mut v, caller, input.project_id, &mut alarm.project_id);
    v.finish()?;
    watch::project_exists(app, caller, alarm.project_id.as_deref()).await
}

/// A project-limited token sees its project's alarms only.
fn visible(caller: &Caller, alarm: &Alarm) -> bool {
    caller.project_id.is_none() || caller.project_id == alarm.project_id
}

async fn find(app: &AppState, caller: &Caller, id: &str) -> Result<Alarm, ApiError> {
    alarms::get(app.db(), &caller.org_id, id)
        .await?
        .filter(|a| visible(caller, a))
        .ok_or_else(|| ApiError::not_found(format!("alarm {id} does not exist")))
}

/// Records `kind` for `alarm` in `tx`.
async fn audit(
    tx: &mut plateau_store::Tx,
    caller: &Caller,
    alarm: &Alarm,
    kind: &str,
    action: &str,
    now: i64,
) -> Result<(), ApiError> {
    let event = NewEvent::audited(&caller.org_id, kind, "settings", action, &caller.actor())
        .resource("alarm", &alarm.id)
        .data(json!({
            "name": alarm.name,
            "metric": alarm.metric,
            "comparison": alarm.comparison,
            "threshold": alarm.threshold,
            "enabled": alarm.enabled != 0,
        }));
    events::record(tx, &event, now).await?;
    Ok(())
}

/// List alarms, oldest first.
#[utoipa::path(get, path = "/alarms", tag = "observability",
    security(("bearer" = ["observability:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "alarms", body = Page<AlarmView>)))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<AlarmView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(app.cursors(), &page, "alarms", &caller.org_id, filters)?;
    let listed = alarms::list(
        app.db(),
        &caller.org_id,
        caller.project_id.as_deref(),
        pager.keyset(),
    )
    .await?;
    Ok(Json(pager.finish(
        listed,
        |a| a.id.clone(),
        AlarmView::from,
    )))
}

/// One alarm, with what its last evaluation measured.
#[utoipa::path(get, path = "/alarms/{id}", tag = "observability",
    security(("bearer" = ["observability:read"])),
    params(("id" = String, Path, description = "alarm id")),
    responses((status = 200, description = "the alarm", body = AlarmView)))]
pub async fn get(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<AlarmView>, ApiError> {
    Ok(Json(find(&app, &caller, &id).await?.into()))
}

/// Create a threshold alarm; it is evaluated within
/// `PLATEAU_ALARMS_EVALUATE_MS` and emits `alarm.triggered` when its rule
/// starts to hold and `alarm.resolved` when it stops.
#[utoipa::path(post, path = "/alarms", tag = "observability",
    security(("bearer" = ["observability:write"])),
    request_body = AlarmInput,
    responses((status = 201, description = "the new alarm", body = AlarmView),
              (status = 404, description = "projectId names no project of the organisation", body = crate::error::Problem),
              (status = 409, description = "the organisation has 100 alarms", body = crate::error::Problem)))]
pub async fn create(
    State(app): State<AppState>,
    caller: Caller,
    Body(input): Body<AlarmInput>,
) -> Result<(StatusCode, Json<AlarmView>), ApiError> {
    let now = time::now_ms();
    let mut alarm = Alarm {
        id: new_id("alm"),
        org_id: caller.org_id.clone(),
        project_id: None,
        resource_id: None,
        name: String::new(),
        metric: String::new(),
        measure: "quantity".to_owned(),
        comparison: String::new(),
        threshold: 0.0,
        window_days: 1,
        notify_emails: "[]".to_owned(),
        enabled: 1,
        state: AlarmState::Pending.as_str().to_owned(),
        value: None,
        evaluated_at: None,
        state_changed_at: None,
        created_at: now,
        updated_at: now,
    };
    apply(&app, &caller, &mut alarm, input, true).await?;
    if alarms::count(app.db(), &caller.org_id).await? >= MAX_ALARMS {
        return Err(ApiError::conflict(
            "too_many_alarms",
            format!("an organisation may have {MAX_ALARMS} alarms; delete one first"),
        ));
    }
    let mut tx = app.db().begin().await?;
    alarms::insert(&mut tx, &alarm).await?;
    audit(&mut tx, &caller, &alarm, "alarm.created", "create", now).await?;
    tx.commit_last().await?;
    Ok((StatusCode::CREATED, Json(alarm.into())))
}

/// Change an alarm; its state starts over (`pending`) and the next
/// evaluation decides it under the new rule.
#[utoipa::path(patch, path = "/alarms/{id}", tag = "observability",
    security(("bearer" = ["observability:write"])),
    params(("id" = String, Path, description = "alarm id")),
    request_body = Option<AlarmInput>,
    responses((status = 200, description = "the changed alarm", body = AlarmView)))]
pub async fn update(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<AlarmInput>,
) -> Result<Json<AlarmView>, ApiError> {
    let mut alarm = find(&app, &caller, &id).await?;
    apply(&app, &caller, &mut alarm, input, false).await?;
    let now = time::now_ms();
    alarm.updated_at = now.max(alarm.updated_at + 1);
    alarm.state = AlarmState::Pending.as_str().to_owned();
    alarm.value = None;
    alarm.evaluated_at = None;
    alarm.state_changed_at = Some(now);
    let mut tx = app.db().begin().await?;
    if alarms::get_in(&mut tx, &caller.org_id, &id)
        .await?
        .is_none()
    {
        return Err(ApiError::not_found(format!("alarm {id} does not exist")));
    }
    alarms::update(&mut tx, &alarm).await?;
    audit(&mut tx, &caller, &alarm, "alarm.updated", "update", now).await?;
    tx.commit_last().await?;
    Ok(Json(alarm.into()))
}

/// Delete an alarm.
#[utoipa::path(delete, path = "/alarms/{id}", tag = "observability",
    security(("bearer" = ["observability:write"])),
    params(("id" = String, Path, description = "alarm id")),
    responses((status = 200, description = "the deleted alarm", body = AlarmView)))]
pub async fn delete(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<AlarmView>, ApiError> {
    let alarm = find(&app, &caller, &id).await?;
    let now = time::now_ms();
    let mut tx = app.db().begin().await?;
    if !alarms::delete(&mut tx, &caller.org_id, &id).await? {
        return Err(ApiError::not_found(format!("alarm {id} does not exist")));
    }
    audit(&mut tx, &caller, &alarm, "alarm.deleted", "delete", now).await?;
    tx.commit_last().await?;
    Ok(Json(alarm.into()))
}
