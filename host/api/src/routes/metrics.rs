//! `GET /metrics` (spec section 4.7): the organisation's daily usage
//! series from the series store, filtered by resource, project, metric
//! and a range of days, each point with its cost at the list price of
//! `plateau_core::prices`.

use axum::Json;
use axum::extract::State;
use plateau_core::{prices, time};
use plateau_store::usage::{self, Filter};
use serde::Serialize;
use utoipa::ToSchema;

use super::{Pairs, param};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::Validator;
use crate::state::AppState;

/// The longest range one request may ask for, in days.
pub const MAX_DAYS: i64 = 366;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageSeries {
    /// First and last day of the range (UTC, inclusive).
    pub from: String,
    pub to: String,
    pub items: Vec<MetricPoint>,
    pub total_cost_cents: f64,
    pub currency: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricPoint {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    /// app, database, cache, bucket, registry or plugin.
    pub resource_type: String,
    pub resource_id: String,
    pub project_id: Option<String>,
    pub metric: String,
    pub unit: String,
    pub quantity: f64,
    /// `quantity` at the metric's list price.
    pub cost_cents: f64,
}

/// Midnight (UTC) of the day named `name`, checked.
fn day_param(pairs: &[(String, String)], name: &str, v: &mut Validator) -> Option<i64> {
    let raw = param(pairs, name)?;
    let parsed = time::parse_date(raw).map(time::date_start_ms);
    v.check(parsed.is_some(), name, "must be a YYYY-MM-DD date");
    parsed
}

/// Reads the query: `from` defaults to the first day of this month, `to`
/// to today.
fn filter_of(pairs: &[(String, String)]) -> Result<Filter, ApiError> {
    let mut v = Validator::new();
    let now = time::now_ms();
    let (month_start, _) = time::month_bounds(now);
    let from = day_param(pairs, "from", &mut v);
    let to = day_param(pairs, "to", &mut v);
    let (from, to) = (from.unwrap_or(month_start), to.unwrap_or(now));
    v.check(from <= to, "from", "must not be after to");
    v.check(
        (to - from) / 86_400_000 < MAX_DAYS,
        "from",
        "the range may span at most 366 days",
    );
    let metric = param(pairs, "metric").map(str::to_owned);
    if let Some(m) = &metric {
        v.check(
            prices::of(m).is_some(),
            "metric",
            "must be one of the metrics of the price table (see GET /usage)",
        );
    }
    let nonempty = |name: &str, v: &mut Validator| {
        let value = param(pairs, name)?;
        v.check(!value.is_empty(), name, "must not be empty");
        Some(value.to_owned())
    };
    let filter = Filter {
        resource_id: nonempty("resource", &mut v),
        project_id: nonempty("project", &mut v),
        metric,
        from: time::to_date(from),
        to: time::to_date(to),
    };
    v.finish()?;
    Ok(filter)
}

/// Daily usage series with the cost of each point.
#[utoipa::path(get, path = "/metrics", tag = "observability",
    security(("bearer" = ["observability:read"])),
    params(("resource" = Option<String>, Query, min_length = 1, description = "one resource's id (app, database, cache, bucket; `registry`; a plugin's name)"),
           ("project" = Option<String>, Query, min_length = 1, description = "one project's id"),
           ("metric" = Option<String>, Query, pattern = "^(compute_hours|disk_gb_hours|storage_gb_hours|registry_gb_hours|plugin_requests|plugin_fuel)$", description = "one metric of the price table, e.g. compute_hours"),
           ("from" = Option<String>, Query, format = Date, description = "first day, YYYY-MM-DD (default: the first of this month)"),
           ("to" = Option<String>, Query, format = Date, description = "last day, YYYY-MM-DD, inclusive (default: today); at most 366 days after from")),
    responses((status = 200, description = "daily points, oldest first", body = UsageSeries)))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<UsageSeries>, ApiError> {
    let mut filter = filter_of(&pairs)?;
    if let Some(project) = &caller.project_id {
        // A project-scoped token sees its project only.
        if filter.project_id.as_ref().is_some_and(|p| p != project) {
            return Err(ApiError::NotFound("project".into()));
        }
        filter.project_id = Some(project.clone());
    }
    let points = usage::points(app.db(), &caller.org_id, &filter).await?;
    let mut total = 0.0;
    let items = points
        .into_iter()
        .map(|p| {
            let price = prices::of(&p.metric);
            let cost = price.map_or(0.0, |price| price.list_cents(p.quantity));
            total += cost;
            MetricPoint {
                unit: price.map_or("", |price| price.unit).to_owned(),
                cost_cents: prices::round_cents(cost),
                day: p.day,
                resource_type: p.resource_type,
                resource_id: p.resource_id,
                project_id: p.project_id,
                metric: p.metric,
                quantity: p.quantity,
            }
        })
        .collect();
    Ok(Json(UsageSeries {
        from: filter.from,
        to: filter.to,
        items,
        total_cost_cents: prices::round_cents(total),
        currency: "USD".to_owned(),
    }))
}
