//! `GET /metrics` (spec section 4.7): the organisation's daily usage
//! series from the series store, filtered by resource, project, metric
//! and a range of days, each point with its cost at the list price of
//! `plateau_core::prices`; and the apps' daily CDN hit ratio, derived from
//! the day's hits and misses (`prices::CDN_HIT_RATIO`, computed by the
//! store so that it sorts and pages with the stored points).
//!
//! Pagination is opt-in as on every list (spec section 1.2): without
//! `limit` the answer holds the whole range, as it always did; with it, a
//! page of points and the `nextCursor` that continues after its last one.
//! `total` and `totalCostCents` are always those of the whole range: on a
//! page they are counted when the first page is asked and carried in the
//! signed cursor, so that later pages read only their own points.

use axum::Json;
use axum::extract::State;
use plateau_core::{prices, time};
use plateau_store::query::Listed;
use plateau_store::series::{self, Key, Page};
use plateau_store::usage::{Filter, Point};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::{Pairs, page_and_filters, param};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::Validator;
use crate::pagination::Pager;
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
    /// Pass as `cursor` to get the next page; null on the last page and
    /// when pagination is off.
    pub next_cursor: Option<String>,
    /// Points in the whole range, over all pages.
    pub total: i64,
    /// The cost of the whole range, over all pages.
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
            prices::of(m).is_some() || m == prices::CDN_HIT_RATIO,
            "metric",
            "must be one of the metrics of the price table (see GET /usage) or app_cdn_hit_ratio",
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
           ("metric" = Option<String>, Query, pattern = "^(compute_hours|disk_gb_hours|storage_gb_hours|registry_gb_hours|app_cpu_seconds|app_memory_gb_hours|app_requests|app_bandwidth_in_gb|app_bandwidth_out_gb|app_cdn_hits|app_cdn_misses|app_cdn_bytes_served_gb|app_cdn_hit_ratio|plugin_requests|plugin_fuel)$", description = "one metric of the price table, e.g. compute_hours, or app_cdn_hit_ratio (an app's daily CDN hits over hits and misses, derived)"),
           ("from" = Option<String>, Query, format = Date, description = "first day, YYYY-MM-DD (default: the first of this month)"),
           ("to" = Option<String>, Query, format = Date, description = "last day, YYYY-MM-DD, inclusive (default: today); at most 366 days after from"),
           ("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "daily points, by day, resource and metric", body = UsageSeries)))]
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
    let (page, _) = page_and_filters(&pairs);
    // The resolved filter, defaults included, is what a cursor continues.
    let bound = format!("{filter:?}");
    let pager = Pager::new(app.cursors(), &page, "metrics", &caller.org_id, bound)?;
    let (items, next_cursor, total, cost) = match pager.keyset().limit {
        None => {
            let points =
                series::points(app.db(), &caller.org_id, &filter, &Page::default()).await?;
            let total = points.len() as i64;
            let cost: f64 = points.iter().map(|p| cost_of(&p.metric, p.quantity)).sum();
            let items = points.into_iter().map(MetricPoint::from).collect();
            (items, None, total, cost)
        }
        Some(limit) => {
            let after = match &pager.keyset().after {
                Some(raw) => Some(serde_json::from_str::<Position>(raw).map_err(|_| {
                    ApiError::bad_request("invalid_cursor", "cursor is not one this list issued")
                })?),
                None => None,
            };
            let (total, cost) = match &after {
                Some(p) => (p.total, p.cost),
                None => {
                    let summary = series::summary(app.db(), &caller.org_id, &filter).await?;
                    let cost = summary.quantities.iter().map(|(m, q)| cost_of(m, *q)).sum();
                    (summary.points, cost)
                }
            };
            let page = Page {
                after: after.map(Position::key),
                limit: Some(limit + 1),
            };
            let rows = series::points(app.db(), &caller.org_id, &filter, &page).await?;
            let page = pager.finish(
                Listed { rows, total },
                |last| Position::after(last, total, cost).encode(),
                MetricPoint::from,
            );
            (page.items, page.next_cursor, total, cost)
        }
    };
    Ok(Json(UsageSeries {
        from: filter.from,
        to: filter.to,
        items,
        next_cursor,
        total,
        total_cost_cents: prices::round_cents(cost),
        currency: "USD".to_owned(),
    }))
}

/// `quantity` of `metric` at its list price, in unrounded cents.
fn cost_of(metric: &str, quantity: f64) -> f64 {
    prices::of(metric).map_or(0.0, |price| price.list_cents(quantity))
}

impl From<Point> for MetricPoint {
    fn from(p: Point) -> MetricPoint {
        let unit = match prices::of(&p.metric) {
            Some(price) => price.unit,
            None if p.metric == prices::CDN_HIT_RATIO => "ratio",
            None => "",
        };
        MetricPoint {
            unit: unit.to_owned(),
            cost_cents: prices::round_cents(cost_of(&p.metric, p.quantity)),
            day: p.day,
            resource_type: p.resource_type,
            resource_id: p.resource_id,
            project_id: p.project_id,
            metric: p.metric,
            quantity: p.quantity,
        }
    }
}

/// What a cursor of `/metrics` carries: the key of the last point given,
/// and the range's totals as the first page counted them.
#[derive(Serialize, Deserialize)]
struct Position {
    d: String,
    r: String,
    m: String,
    total: i64,
    cost: f64,
}

impl Position {
    fn after(last: &Point, total: i64, cost: f64) -> Position {
        Position {
            d: last.day.clone(),
            r: last.resource_id.clone(),
            m: last.metric.clone(),
            total,
            cost,
        }
    }

    fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    fn key(self) -> Key {
        Key {
            day: self.d,
            resource_id: self.r,
            metric: self.m,
        }
    }
}
