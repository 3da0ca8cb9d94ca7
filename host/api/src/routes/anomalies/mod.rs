//! `/anomalies` (spec sections 4.7 and 6): `GET /anomalies` lists what
//! the monitors found, newest first; `POST /anomalies` sets up a monitor
//! (a metric of the series store for the organisation, a project or a
//! resource, and a sensitivity), kept under `/anomalies/monitors`. The
//! method and its evaluation are [`crate::anomalies`] and
//! [`plateau_core::anomaly`].

use plateau_core::anomaly::Sensitivity;
use plateau_core::{prices, time};
use plateau_store::anomalies::{self, Anomaly, Monitor};
use plateau_store::events::{self, NewEvent};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::Validator;
use crate::routes::watch;
use crate::state::AppState;

mod handlers;

pub use handlers::*;

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
    #[schema(schema_with = crate::routes::alarms::emails_schema)]
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
    #[schema(schema_with = crate::routes::alarms::metric_schema)]
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
    #[schema(schema_with = crate::routes::alarms::emails_schema)]
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
