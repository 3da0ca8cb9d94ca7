//! Stats over a period (`GET /analytics/sites/{id}/stats` and
//! `/breakdown`): visitors, page views, visits, bounce rate and visit
//! duration, a time series (hourly for one day, daily otherwise) and
//! breakdowns by a dimension. Without filters they read the rollups of
//! [`crate::rollup`], one listing per day; with filters, the page view log
//! ([`crate::scan`]).
//!
//! Visitors over several days are the sum of each day's: the salt, so the
//! visitor, changes every day, by design.

use std::collections::BTreeMap;

use plateau_sdk::{ApiError, Bucket, Params, Query, Request, Response, clock};
use serde::Serialize;
use utoipa::ToSchema;

use crate::rollup::VISIT_DIMS;
use crate::{day, scan, sites};

/// The longest period, in days.
pub const MAX_DAYS: i64 = 366;
/// The dimensions `property` and `filter.{dimension}` take.
pub const DIMENSIONS: [&str; 12] = [
    "page",
    "entry",
    "exit",
    "source",
    "utm_source",
    "utm_medium",
    "utm_campaign",
    "utm_content",
    "utm_term",
    "browser",
    "os",
    "device",
];

/// Counts over a period or one of its buckets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    pub visitors: i64,
    pub pageviews: i64,
    pub visits: i64,
    pub bounces: i64,
    pub duration_ms: i64,
}

impl Totals {
    pub fn add(&mut self, metric: &str, n: i64) {
        match metric {
            "vi" => self.visitors += n,
            "pv" => self.pageviews += n,
            "vs" => self.visits += n,
            "bo" => self.bounces += n,
            "du" => self.duration_ms += n,
            _ => {}
        }
    }

    pub fn merge(&mut self, other: &Totals) {
        self.visitors += other.visitors;
        self.pageviews += other.pageviews;
        self.visits += other.visits;
        self.bounces += other.bounces;
        self.duration_ms += other.duration_ms;
    }

    pub fn metrics(&self) -> Metrics {
        let per_visit = |n: i64| {
            if self.visits > 0 {
                n as f64 / self.visits as f64
            } else {
                0.0
            }
        };
        Metrics {
            visitors: self.visitors,
            pageviews: self.pageviews,
            visits: self.visits,
            bounce_rate: (per_visit(self.bounces) * 1000.0).round() / 10.0,
            visit_duration: (per_visit(self.duration_ms) / 1000.0).round() as i64,
        }
    }
}

/// The metrics of a period, a bucket or a breakdown row.
#[derive(Clone, Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Metrics {
    pub visitors: i64,
    pub pageviews: i64,
    pub visits: i64,
    /// Percent of visits with one page view, one decimal.
    pub bounce_rate: f64,
    /// Mean seconds from a visit's first page view to its last.
    pub visit_duration: i64,
}

/// A point of the time series.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Point {
    /// The bucket's start: `2026-11-27` or `2026-11-27T09:00:00Z`.
    pub time: String,
    #[serde(flatten)]
    pub metrics: Metrics,
}

/// `GET /analytics/sites/{id}/stats`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StatsView {
    pub site_id: String,
    pub from: String,
    pub to: String,
    /// `hour` or `day`.
    pub interval: String,
    /// The filters applied, `dimension` to value.
    pub filters: BTreeMap<String, String>,
    #[serde(flatten)]
    pub metrics: Metrics,
    pub timeseries: Vec<Point>,
}

/// A breakdown row. For `page`, visits, bounce rate and duration are
/// those of the visits that entered there (see `entry`) and are left out;
/// for `exit`, only `visits` (the visits that ended there) is meaningful.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Row {
    pub value: String,
    #[serde(flatten)]
    pub metrics: Metrics,
}

/// `GET /analytics/sites/{id}/breakdown`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BreakdownView {
    pub site_id: String,
    pub property: String,
    pub from: String,
    pub to: String,
    pub filters: BTreeMap<String, String>,
    /// Most visitors first (most visits for `exit`), at most `limit`.
    pub rows: Vec<Row>,
}

/// A period and the filters of a query.
pub struct Period {
    pub from: i64,
    pub to: i64,
    pub filters: BTreeMap<String, String>,
}

impl Period {
    /// `from` and `to` (`YYYY-MM-DD`, UTC, inclusive; the last 30 days by
    /// default) and `filter.{dimension}`; 400 naming the parameter.
    pub fn parse(query: &Query) -> Result<Period, ApiError> {
        let today = day::of_millis(clock::now_millis());
        let to = query
            .get("to")
            .map(|raw| day::parse("to", raw))
            .transpose()?;
        let to = to.unwrap_or(today);
        let from = query
            .get("from")
            .map(|raw| day::parse("from", raw))
            .transpose()?;
        let from = from.unwrap_or(to - 29);
        if from > to || to - from >= MAX_DAYS {
            return Err(ApiError::bad_request(format!(
                "query parameter from must be at most to and at most {MAX_DAYS} days before it"
            )));
        }
        let mut filters = BTreeMap::new();
        for (name, value) in query.pairs() {
            let Some(dim) = name.strip_prefix("filter.") else {
                continue;
            };
            if !DIMENSIONS.contains(&dim) {
                return Err(ApiError::bad_request(format!(
                    "query parameter {name} filters by an unknown dimension: use one of {}",
                    DIMENSIONS.join(", ")
                )));
            }
            filters.insert(dim.to_owned(), value.clone());
        }
        Ok(Period { from, to, filters })
    }

    pub fn days(&self) -> impl Iterator<Item = i64> {
        self.from..=self.to
    }
}

/// Every counter under `prefix`, as the rest of its key and its value.
fn counters(
    bucket: &Bucket,
    prefix: &str,
    mut each: impl FnMut(&str, i64),
) -> Result<(), ApiError> {
    let mut cursor = None;
    loop {
        let page = bucket.list(prefix, cursor.as_deref(), plateau_sdk::MAX_LIMIT)?;
        for entry in page.entries {
            let n: i64 = std::str::from_utf8(&entry.value)
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            each(&entry.key[prefix.len()..], n);
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(()),
        }
    }
}

/// Adds the rollups under `prefix` (`{metric}/{value}` after it) to
/// `into`, per value.
fn read(
    bucket: &Bucket,
    prefix: &str,
    into: &mut BTreeMap<String, Totals>,
) -> Result<(), ApiError> {
    counters(bucket, prefix, |rest, n| {
        let (metric, value) = rest.split_once('/').unwrap_or((rest, ""));
        into.entry(value.to_owned()).or_default().add(metric, n);
    })
}

pub fn stats(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let site = sites::find(&params["id"])?;
    let period = Period::parse(&req.query())?;
    let hourly = period.from == period.to;
    let (total, series) = if period.filters.is_empty() {
        let bucket = Bucket::caller()?;
        let mut total = Totals::default();
        let mut series = Vec::new();
        for d in period.days() {
            let mut day_total = BTreeMap::new();
            read(
                &bucket,
                &format!("r/{}/{}/_/", site.id, day::key(d)),
                &mut day_total,
            )?;
            let day_total = day_total.remove("-").unwrap_or_default();
            total.merge(&day_total);
            if hourly {
                let mut hours = vec![Totals::default(); 24];
                counters(
                    &bucket,
                    &format!("h/{}/{}", site.id, day::key(d)),
                    |rest, n| {
                        let (hour, metric) = rest.split_once('/').unwrap_or((rest, ""));
                        if let Some(t) = hour.parse::<usize>().ok().and_then(|h| hours.get_mut(h)) {
                            t.add(metric, n);
                        }
                    },
                )?;
                for (hour, t) in (0..).zip(hours) {
                    series.push((day::iso_hour(d, hour), t));
                }
            } else {
                series.push((day::iso(d), day_total));
            }
        }
        (total, series)
    } else {
        scan::stats(&site.id, &period, hourly)?
    };
    Ok(Response::ok(&StatsView {
        site_id: site.id,
        from: day::iso(period.from),
        to: day::iso(period.to),
        interval: if hourly { "hour" } else { "day" }.to_owned(),
        filters: period.filters,
        metrics: total.metrics(),
        timeseries: series
            .into_iter()
            .map(|(time, t)| Point {
                time,
                metrics: t.metrics(),
            })
            .collect(),
    }))
}

pub fn breakdown(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let site = sites::find(&params["id"])?;
    let query = req.query();
    let period = Period::parse(&query)?;
    let property = query.get("property").unwrap_or_default().to_owned();
    if !DIMENSIONS.contains(&property.as_str()) {
        return Err(ApiError::bad_request(format!(
            "query parameter property must be one of {}",
            DIMENSIONS.join(", ")
        )));
    }
    let limit = query.parse_as::<usize>("limit")?.unwrap_or(10);
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::bad_request(
            "query parameter limit must be 1 to 1000",
        ));
    }
    let values = if period.filters.is_empty() {
        let bucket = Bucket::caller()?;
        let mut values = BTreeMap::new();
        for d in period.days() {
            let prefix = format!("r/{}/{}/{property}/", site.id, day::key(d));
            read(&bucket, &prefix, &mut values)?;
        }
        values
    } else {
        scan::breakdown(&site.id, &period, &property)?
    };
    let mut rows: Vec<(String, Totals)> = values
        .into_iter()
        .filter(|(_, t)| t.visitors > 0 || t.visits > 0 || t.pageviews > 0)
        .collect();
    if property == "exit" {
        rows.sort_by(|a, b| b.1.visits.cmp(&a.1.visits).then(a.0.cmp(&b.0)));
    } else {
        rows.sort_by(|a, b| {
            (b.1.visitors, b.1.pageviews)
                .cmp(&(a.1.visitors, a.1.pageviews))
                .then(a.0.cmp(&b.0))
        });
    }
    rows.truncate(limit);
    debug_assert!(VISIT_DIMS.iter().all(|d| DIMENSIONS.contains(d)));
    Ok(Response::ok(&BreakdownView {
        site_id: site.id,
        property,
        from: day::iso(period.from),
        to: day::iso(period.to),
        filters: period.filters,
        rows: rows
            .into_iter()
            .map(|(value, t)| Row {
                value,
                metrics: t.metrics(),
            })
            .collect(),
    }))
}
