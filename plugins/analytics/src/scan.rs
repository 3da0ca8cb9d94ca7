//! Filtered stats: read from the page view log (`e/{site}/{day}/...`)
//! rather than the rollups, which hold one dimension at a time. Filters
//! combine (all must hold): a visit counts when its dimensions match (for
//! `page`, when it viewed the page; for `exit`, when it ended there), and
//! with a `page` filter only that page's views count as page views. The
//! numbers agree with the rollups' for the same data.
//!
//! A scan reads every page view of the period, so it is bounded: a period
//! holding more than [`MAX_SCAN`] page views is refused (422) with the
//! advice to narrow it.

use std::collections::{BTreeMap, BTreeSet};

use plateau_sdk::{ApiError, Bucket};

use crate::day;
use crate::rollup::{Logged, VISIT_DIMS};
use crate::stats::{Period, Totals};

/// The most page views a filtered query reads.
pub const MAX_SCAN: usize = 200_000;

/// One visit as the log tells it.
struct Visit {
    day: i64,
    visitor: String,
    start: u64,
    dims: Vec<String>,
    /// `(at, path)`, in time order.
    pages: Vec<(u64, String)>,
}

impl Visit {
    fn dim(&self, dim: &str) -> Option<&str> {
        if dim == "exit" {
            return self.pages.last().map(|(_, p)| p.as_str());
        }
        let i = VISIT_DIMS.iter().position(|d| *d == dim)?;
        self.dims.get(i).map(String::as_str)
    }

    fn matches(&self, filters: &BTreeMap<String, String>) -> bool {
        filters.iter().all(|(dim, want)| {
            if dim == "page" {
                self.pages.iter().any(|(_, p)| p == want)
            } else {
                self.dim(dim) == Some(want.as_str())
            }
        })
    }

    /// The page views that count under `filters`.
    fn counted<'a>(
        &'a self,
        filters: &'a BTreeMap<String, String>,
    ) -> impl Iterator<Item = &'a (u64, String)> {
        let page = filters.get("page");
        self.pages
            .iter()
            .filter(move |(_, p)| page.is_none_or(|want| p == want))
    }

    /// Its visit, bounce and duration.
    fn totals(&self) -> Totals {
        let first = self.pages.first().map_or(self.start, |(t, _)| *t);
        let last = self.pages.last().map_or(self.start, |(t, _)| *t);
        Totals {
            visits: 1,
            bounces: i64::from(self.pages.len() == 1),
            duration_ms: i64::try_from(last - first).unwrap_or(i64::MAX),
            ..Totals::default()
        }
    }
}

/// The visits of `site` in the period that match its filters.
fn visits(site: &str, period: &Period) -> Result<Vec<Visit>, ApiError> {
    let bucket = Bucket::caller()?;
    let mut by_key: BTreeMap<(i64, String, u64), Visit> = BTreeMap::new();
    let mut read = 0usize;
    for d in period.days() {
        let prefix = format!("e/{site}/{}/", day::key(d));
        let mut cursor = None;
        loop {
            let page = bucket.list(&prefix, cursor.as_deref(), plateau_sdk::MAX_LIMIT)?;
            read += page.entries.len();
            if read > MAX_SCAN {
                return Err(ApiError::unprocessable(format!(
                    "the period holds more than {MAX_SCAN} page views, too many to filter: \
                     narrow from and to, or query without filters"
                )));
            }
            for entry in page.entries {
                let logged: Logged = entry.json()?;
                let visit = by_key
                    .entry((d, logged.v.clone(), logged.s))
                    .or_insert_with(|| Visit {
                        day: d,
                        visitor: logged.v.clone(),
                        start: logged.s,
                        dims: logged.d.clone(),
                        pages: Vec::new(),
                    });
                visit.pages.push((logged.t, logged.p));
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    Ok(by_key
        .into_values()
        .filter(|v| v.matches(&period.filters))
        .collect())
}

/// The period's totals and its series (per hour of the day when `hourly`).
pub fn stats(
    site: &str,
    period: &Period,
    hourly: bool,
) -> Result<(Totals, Vec<(String, Totals)>), ApiError> {
    let bucket_of = |d: i64, at: u64| {
        if hourly {
            day::iso_hour(d, day::hour_of(at))
        } else {
            day::iso(d)
        }
    };
    let mut series: BTreeMap<String, Totals> = BTreeMap::new();
    for d in period.days() {
        if hourly {
            for hour in 0..24 {
                series.insert(day::iso_hour(d, hour), Totals::default());
            }
        } else {
            series.insert(day::iso(d), Totals::default());
        }
    }
    let mut total = Totals::default();
    let mut seen = BTreeSet::new();
    let mut seen_in = BTreeSet::new();
    for visit in visits(site, period)? {
        let t = visit.totals();
        total.merge(&t);
        series
            .entry(bucket_of(visit.day, visit.start))
            .or_default()
            .merge(&t);
        for (at, _) in visit.counted(&period.filters) {
            let b = bucket_of(visit.day, *at);
            total.pageviews += 1;
            let point = series.entry(b.clone()).or_default();
            point.pageviews += 1;
            if seen.insert((visit.day, visit.visitor.clone())) {
                total.visitors += 1;
            }
            if seen_in.insert((b, visit.visitor.clone())) {
                point.visitors += 1;
            }
        }
    }
    Ok((total, series.into_iter().collect()))
}

/// The period's rows by `property`.
pub fn breakdown(
    site: &str,
    period: &Period,
    property: &str,
) -> Result<BTreeMap<String, Totals>, ApiError> {
    let mut rows: BTreeMap<String, Totals> = BTreeMap::new();
    let mut seen = BTreeSet::new();
    for visit in visits(site, period)? {
        let counted: Vec<&(u64, String)> = visit.counted(&period.filters).collect();
        match property {
            "page" => {
                for (_, path) in counted {
                    let row = rows.entry(path.clone()).or_default();
                    row.pageviews += 1;
                    if seen.insert((visit.day, visit.visitor.clone(), path.clone())) {
                        row.visitors += 1;
                    }
                }
            }
            "exit" => {
                if let Some(exit) = visit.dim("exit") {
                    rows.entry(exit.to_owned()).or_default().visits += 1;
                }
            }
            dim => {
                let Some(value) = visit.dim(dim).filter(|v| !v.is_empty()) else {
                    continue;
                };
                let row = rows.entry(value.to_owned()).or_default();
                row.merge(&visit.totals());
                row.pageviews += counted.len() as i64;
                if seen.insert((visit.day, visit.visitor.clone(), value.to_owned())) {
                    row.visitors += 1;
                }
            }
        }
    }
    Ok(rows)
}
