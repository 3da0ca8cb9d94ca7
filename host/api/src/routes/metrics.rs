//! `GET /metrics` (spec section 4.7): the organisation's daily usage
//! series from the series store, filtered by resource, project, metric
//! and a range of days, each point with its cost at the list price of
//! `plateau_core::prices`; and the apps' daily CDN hit ratio, derived from
//! the day's hits and misses (`prices::CDN_HIT_RATIO`).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::State;
use plateau_core::{prices, time};
use plateau_store::usage::{self, Filter, Point};
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
    let ratio_only = filter.metric.as_deref() == Some(prices::CDN_HIT_RATIO);
    let points = if ratio_only {
        let mut both = Vec::new();
        for metric in ["app_cdn_hits", "app_cdn_misses"] {
            let f = Filter {
                metric: Some(metric.to_owned()),
                ..filter.clone()
            };
            both.extend(usage::points(app.db(), &caller.org_id, &f).await?);
        }
        hit_ratios(&both)
    } else {
        let mut points = usage::points(app.db(), &caller.org_id, &filter).await?;
        if filter.metric.is_none() {
            let ratios = hit_ratios(&points);
            points.extend(ratios);
            points.sort_by(|a, b| a.day.cmp(&b.day));
        }
        points
    };
    let mut total = 0.0;
    let items = points
        .into_iter()
        .map(|p| {
            let price = prices::of(&p.metric);
            let cost = price.map_or(0.0, |price| price.list_cents(p.quantity));
            total += cost;
            let unit = match price {
                Some(price) => price.unit,
                None if p.metric == prices::CDN_HIT_RATIO => "ratio",
                None => "",
            };
            MetricPoint {
                unit: unit.to_owned(),
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

/// One `app_cdn_hit_ratio` point per day and app with CDN hits or misses
/// among `points`: hits over hits and misses.
fn hit_ratios(points: &[Point]) -> Vec<Point> {
    let mut by_day: BTreeMap<(&str, &str), (f64, f64, &Point)> = BTreeMap::new();
    for p in points {
        let (hits, misses) = match p.metric.as_str() {
            "app_cdn_hits" => (p.quantity, 0.0),
            "app_cdn_misses" => (0.0, p.quantity),
            _ => continue,
        };
        let day = by_day
            .entry((p.day.as_str(), p.resource_id.as_str()))
            .or_insert((0.0, 0.0, p));
        day.0 += hits;
        day.1 += misses;
    }
    by_day
        .into_values()
        .filter(|(hits, misses, _)| hits + misses > 0.0)
        .map(|(hits, misses, p)| Point {
            metric: prices::CDN_HIT_RATIO.to_owned(),
            quantity: hits / (hits + misses),
            ..p.clone()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(day: &str, app: &str, metric: &str, quantity: f64) -> Point {
        Point {
            day: day.to_owned(),
            resource_type: "app".to_owned(),
            resource_id: app.to_owned(),
            project_id: None,
            metric: metric.to_owned(),
            quantity,
        }
    }

    #[test]
    fn the_hit_ratio_is_the_days_hits_over_hits_and_misses() {
        let points = [
            point("2026-11-01", "a", "app_cdn_hits", 3.0),
            point("2026-11-01", "a", "app_cdn_misses", 1.0),
            point("2026-11-01", "a", "app_requests", 9.0),
            point("2026-11-01", "b", "app_cdn_misses", 2.0),
            point("2026-11-02", "a", "app_cdn_hits", 5.0),
        ];
        let ratios: Vec<(String, String, f64)> = hit_ratios(&points)
            .into_iter()
            .map(|p| {
                assert_eq!(p.metric, prices::CDN_HIT_RATIO);
                (p.day, p.resource_id, p.quantity)
            })
            .collect();
        assert_eq!(
            ratios,
            [
                ("2026-11-01".to_owned(), "a".to_owned(), 0.75),
                ("2026-11-01".to_owned(), "b".to_owned(), 0.0),
                ("2026-11-02".to_owned(), "a".to_owned(), 1.0),
            ]
        );
    }
}
