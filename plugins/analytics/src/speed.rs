//! Speed insights (`/speed-insights`): Core Web Vitals of real visitors,
//! posted by the script of [`crate::speed_script`] to
//! `POST /speed-insights/api/vitals` for a site of `/analytics/sites`, and
//! their 75th percentile per route and device class over a period, worst
//! routes first.
//!
//! Each sample adds one to a histogram counter per UTC day, metric,
//! bucket, device and route (`si/{site}/{day}/{metric}/{bucket}/{device}/
//! {route}`): buckets grow by 10% (CLS is kept in thousandths), so a p75
//! is exact to within 10%, and a query reads one listing per day and
//! metric whatever the number of samples. A route is the page's path with
//! segments that look like ids (digits, or 16 or more hex or id
//! characters with a digit) written `[id]`, so `/orders/123` and
//! `/orders/456` are one route.

use std::collections::BTreeMap;

use plateau_sdk::{ApiError, Bucket, Params, Request, Response, Validator, clock, parse_json};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::sites::{DomainEntry, domain_key, find};
use crate::stats::Period;
use crate::{agent, day, event};

/// The metrics, as web-vitals names them.
pub const METRICS: [&str; 5] = ["LCP", "INP", "CLS", "FCP", "TTFB"];
const RATIO: f64 = 1.1;
const BUCKETS: u32 = 160;

/// What the script posts.
#[derive(Debug, Deserialize, ToSchema)]
pub struct VitalsInput {
    /// The site's domain.
    #[serde(alias = "d")]
    pub domain: String,
    /// The page's URL.
    #[serde(alias = "u")]
    pub url: String,
    /// At most 10 measurements.
    #[serde(alias = "m")]
    pub metrics: Vec<Sample>,
}

#[derive(Debug, Deserialize, ToSchema)]
pub struct Sample {
    /// LCP, INP, CLS, FCP or TTFB.
    #[serde(alias = "n")]
    pub name: String,
    /// Milliseconds (CLS: the unitless score).
    #[serde(alias = "v")]
    pub value: f64,
}

/// The bucket of a value (milliseconds, or thousandths of CLS).
pub fn bucket(value: f64) -> u32 {
    if value <= 1.0 {
        return 0;
    }
    ((value.ln() / RATIO.ln()).ceil() as u32).min(BUCKETS - 1)
}

/// The value a bucket stands for: its upper bound.
pub fn bucket_value(bucket: u32) -> f64 {
    RATIO.powi(bucket as i32)
}

/// The route of a path: id-like segments written `[id]`.
pub fn route(path: &str) -> String {
    let segments: Vec<&str> = path
        .split('/')
        .map(|s| {
            let digits = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
            let id = s.len() >= 16
                && s.bytes().any(|b| b.is_ascii_digit())
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if digits || id { "[id]" } else { s }
        })
        .collect();
    let joined = segments.join("/");
    if joined.is_empty() {
        "/".to_owned()
    } else {
        joined
    }
}

pub fn ingest(req: &Request, _: &Params) -> Result<Response, ApiError> {
    if req.body.len() > 8 * 1024 {
        return Err(ApiError::payload_too_large("a post is at most 8192 bytes"));
    }
    let input: VitalsInput = parse_json(&req.body)?;
    let domain = input.domain.trim().to_ascii_lowercase();
    let mut v = Validator::new();
    v.check(
        (1..=10).contains(&input.metrics.len()),
        "metrics",
        "must hold 1 to 10 measurements",
    );
    for (i, s) in input.metrics.iter().enumerate() {
        v.check(
            METRICS.contains(&s.name.as_str()),
            format!("metrics[{i}].name"),
            "must be LCP, INP, CLS, FCP or TTFB",
        );
        v.check(
            s.value.is_finite() && s.value >= 0.0 && s.value < 3_600_000.0,
            format!("metrics[{i}].value"),
            "must be a number from 0 to 3600000",
        );
    }
    let host = event::host_of(&input.url);
    v.check(
        host.is_some(),
        "url",
        "must be an http or https URL with a host",
    );
    v.finish()?;
    let entry: DomainEntry = Bucket::global()?
        .get(&domain_key(&domain))?
        .ok_or_else(|| {
            ApiError::validation(
                "domain",
                format!("{domain:?} is no site: add it with POST /analytics/sites"),
            )
        })?;
    let Some(agent) = agent::parse(req.header("user-agent").unwrap_or_default()) else {
        return Ok(Response::text(202, "ignored").with_header("access-control-allow-origin", "*"));
    };
    let rest = &input.url[input.url.find("://").map_or(0, |i| i + 3)..];
    let path = rest.find('/').map_or("/", |i| &rest[i..]);
    let path = path.split(['?', '#']).next().unwrap_or("/");
    let route: String = route(path).chars().take(event::MAX_VALUE).collect();
    let today = day::key(day::of_millis(clock::now_millis()));
    let bucket_of_org = Bucket::organization(&entry.organization_id)?;
    for s in &input.metrics {
        let scaled = if s.name == "CLS" {
            s.value * 1000.0
        } else {
            s.value
        };
        let key = format!(
            "si/{}/{today}/{}/{:03}/{}/{route}",
            entry.site_id,
            s.name,
            bucket(scaled),
            agent.device
        );
        bucket_of_org.increment(&key, 1)?;
    }
    Ok(Response::text(202, "ok").with_header("access-control-allow-origin", "*"))
}

/// A route and device's percentile.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RouteRow {
    pub route: String,
    /// `desktop`, `mobile`, `appliance` or `unknown`.
    pub device: String,
    /// The 75th percentile: milliseconds, or the CLS score.
    pub p75: f64,
    pub samples: i64,
}

/// A day's percentile over every route.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DayRow {
    pub time: String,
    pub p75: Option<f64>,
    pub samples: i64,
}

/// `GET /speed-insights/sites/{id}`.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpeedView {
    pub site_id: String,
    pub metric: String,
    pub from: String,
    pub to: String,
    /// Worst p75 first.
    pub routes: Vec<RouteRow>,
    pub timeseries: Vec<DayRow>,
}

/// The 75th percentile of a histogram, or none when it is empty.
pub fn p75(histogram: &BTreeMap<u32, i64>, cls: bool) -> Option<f64> {
    let total: i64 = histogram.values().sum();
    if total == 0 {
        return None;
    }
    let rank = (total * 3 + 3) / 4;
    let mut seen = 0;
    for (b, n) in histogram {
        seen += n;
        if seen >= rank {
            let v = bucket_value(*b);
            let v = if cls { v / 1000.0 } else { v };
            return Some((v * 1000.0).round() / 1000.0);
        }
    }
    None
}

pub fn report(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let site = find(&params["id"])?;
    let query = req.query();
    let period = Period::parse(&query)?;
    let metric = query.get("metric").unwrap_or("LCP").to_owned();
    if !METRICS.contains(&metric.as_str()) {
        return Err(ApiError::bad_request(
            "query parameter metric must be LCP, INP, CLS, FCP or TTFB",
        ));
    }
    let device = query.get("device").map(str::to_owned);
    let cls = metric == "CLS";
    let bucket = Bucket::caller()?;
    let mut per_route: BTreeMap<(String, String), BTreeMap<u32, i64>> = BTreeMap::new();
    let mut series = Vec::new();
    for d in period.days() {
        let prefix = format!("si/{}/{}/{metric}/", site.id, day::key(d));
        let mut day_hist: BTreeMap<u32, i64> = BTreeMap::new();
        for entry in bucket.list_all(&prefix)? {
            let rest = &entry.key[prefix.len()..];
            let mut parts = rest.splitn(3, '/');
            let (Some(b), Some(dev), Some(route)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            if device.as_deref().is_some_and(|want| want != dev) {
                continue;
            }
            let (Ok(b), Ok(n)) = (
                b.parse::<u32>(),
                String::from_utf8_lossy(&entry.value).parse::<i64>(),
            ) else {
                continue;
            };
            *day_hist.entry(b).or_default() += n;
            *per_route
                .entry((route.to_owned(), dev.to_owned()))
                .or_default()
                .entry(b)
                .or_default() += n;
        }
        series.push(DayRow {
            time: day::iso(d),
            p75: p75(&day_hist, cls),
            samples: day_hist.values().sum(),
        });
    }
    let mut routes: Vec<RouteRow> = per_route
        .into_iter()
        .filter_map(|((route, device), h)| {
            Some(RouteRow {
                p75: p75(&h, cls)?,
                samples: h.values().sum(),
                route,
                device,
            })
        })
        .collect();
    routes.sort_by(|a, b| b.p75.total_cmp(&a.p75).then(b.samples.cmp(&a.samples)));
    Ok(Response::ok(&SpeedView {
        site_id: site.id,
        metric,
        from: day::iso(period.from),
        to: day::iso(period.to),
        routes,
        timeseries: series,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_come_from_buckets_within_ten_percent() {
        let mut h = BTreeMap::new();
        for v in [100.0, 200.0, 300.0, 2500.0] {
            *h.entry(bucket(v)).or_insert(0) += 1;
        }
        let p = p75(&h, false).unwrap();
        assert!((300.0..=330.0).contains(&p), "{p}");
        assert_eq!(p75(&BTreeMap::new(), false), None);
        let mut c = BTreeMap::new();
        c.insert(bucket(0.1 * 1000.0), 1);
        let cls = p75(&c, true).unwrap();
        assert!((0.1..=0.11).contains(&cls), "{cls}");
    }

    #[test]
    fn ids_in_paths_are_one_route() {
        assert_eq!(route("/orders/123"), "/orders/[id]");
        assert_eq!(route("/u/01jd8x2k9v3c4b5n6m7p8q9r0s"), "/u/[id]");
        assert_eq!(route("/blog/hello-world"), "/blog/hello-world");
        assert_eq!(route("/"), "/");
    }
}
