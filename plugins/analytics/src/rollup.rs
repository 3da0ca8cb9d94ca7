//! What a page view adds at ingest. Pre-aggregation was chosen over
//! querying the page view log: plugin storage is key-value (pages of at
//! most 200 keys), so a query over 10 million page views can only be fast
//! if it reads counters whose number grows with days and distinct values,
//! not with page views. Counters are `increment`s, applied at commit
//! without conflicts, so concurrent page views all count.
//!
//! Keys, all in the site's organisation's bucket:
//! - `r/{site}/{day}/{dim}/{metric}/{value}`: per day and dimension value
//!   (dimension `_`, value `-`: the site's totals);
//! - `h/{site}/{day}{hour}/{metric}`: the totals per hour;
//! - `u/{site}/{day}/{visitor}/...`: markers of the visitors already
//!   counted that day for a value (the value's SHA-256 prefix);
//! - `vis/{site}/{day}/{visitor}`: the visitor's current visit;
//! - `e/{site}/{day}/{at}.{visitor}.{n}`: the page view itself, for
//!   filtered queries ([`crate::scan`]).
//!
//! Metrics: `pv` page views, `vi` visitors, `vs` visits, `bo` bounces
//! (visits of one page view), `du` visit duration in milliseconds. A visit
//! ends after 30 minutes without a page view (or at midnight UTC, when the
//! salt, and so the visitor, changes); its visits, bounces and duration
//! count in the day and hour it started.

use plateau_sdk::{ApiError, Bucket};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::agent::Agent;
use crate::day;
use crate::event::PageFacts;

/// The dimensions every page view of a visit shares (its first's), in the
/// order a visit and a logged page view keep them.
pub const VISIT_DIMS: [&str; 10] = [
    "entry",
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
/// A visit ends after this long without a page view.
pub const VISIT_GAP_MS: u64 = 30 * 60 * 1000;

/// A page view with its visitor.
#[derive(Clone, Debug)]
pub struct PageView {
    pub site: String,
    pub at: u64,
    pub visitor: String,
    pub facts: PageFacts,
    pub agent: Agent,
}

/// A visitor's current visit.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Visit {
    pub start: u64,
    pub last: u64,
    pub pages: u32,
    pub exit: String,
    /// The values of [`VISIT_DIMS`].
    pub dims: Vec<String>,
}

/// A page view as logged (short names: there are many).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Logged {
    /// When, in milliseconds.
    pub t: u64,
    /// The visitor.
    pub v: String,
    /// When its visit started.
    pub s: u64,
    /// Its number in the visit, from 1.
    pub n: u32,
    /// The path.
    pub p: String,
    /// The visit's [`VISIT_DIMS`].
    pub d: Vec<String>,
}

fn visit_dims(view: &PageView) -> Vec<String> {
    let f = &view.facts;
    [
        &f.path,
        &f.source,
        &f.utm_source,
        &f.utm_medium,
        &f.utm_campaign,
        &f.utm_content,
        &f.utm_term,
        &view.agent.browser,
        &view.agent.os,
        &view.agent.device,
    ]
    .into_iter()
    .cloned()
    .collect()
}

/// The short hash a visitor marker names a value by.
fn value_hash(value: &str) -> String {
    Sha256::digest(value.as_bytes())[..6]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The counters of one site and day.
struct Day<'a> {
    bucket: &'a Bucket,
    site: &'a str,
    day: String,
    visitor: &'a str,
}

impl Day<'_> {
    fn add(&self, dim: &str, value: &str, metric: &str, delta: i64) -> Result<(), ApiError> {
        if dim != "_" && value.is_empty() {
            return Ok(());
        }
        let key = format!("r/{}/{}/{dim}/{metric}/{value}", self.site, self.day);
        self.bucket.increment(&key, delta)?;
        Ok(())
    }

    fn add_hour(&self, hour: u32, metric: &str, delta: i64) -> Result<(), ApiError> {
        let key = format!("h/{}/{}{hour:02}/{metric}", self.site, self.day);
        self.bucket.increment(&key, delta)?;
        Ok(())
    }

    /// Whether the visitor is counted for `marker` yet; marks it.
    fn first(&self, marker: &str) -> Result<bool, ApiError> {
        let key = format!("u/{}/{}/{}/{marker}", self.site, self.day, self.visitor);
        if self.bucket.get_raw(&key)?.is_some() {
            return Ok(false);
        }
        self.bucket.set_raw(&key, b"1")?;
        Ok(true)
    }

    /// Counts the visitor once for `(dim, value)`.
    fn visitor_of(&self, dim: &str, value: &str) -> Result<(), ApiError> {
        if !value.is_empty() && self.first(&format!("{dim}/{}", value_hash(value)))? {
            self.add(dim, value, "vi", 1)?;
        }
        Ok(())
    }
}

/// Adds `view` to its site's counters and log, in `bucket` (its
/// organisation's).
pub fn record(bucket: &Bucket, view: &PageView) -> Result<(), ApiError> {
    let today = day::of_millis(view.at);
    let day = Day {
        bucket,
        site: &view.site,
        day: day::key(today),
        visitor: &view.visitor,
    };
    let path = &view.facts.path;
    let visit_key = format!("vis/{}/{}/{}", view.site, day.day, view.visitor);
    let current = bucket
        .get::<Visit>(&visit_key)?
        .filter(|v| view.at >= v.last && view.at - v.last <= VISIT_GAP_MS);
    let visit = match current {
        None => {
            let visit = Visit {
                start: view.at,
                last: view.at,
                pages: 1,
                exit: path.clone(),
                dims: visit_dims(view),
            };
            let hour = day::hour_of(view.at);
            for metric in ["vs", "bo"] {
                day.add("_", "-", metric, 1)?;
                day.add_hour(hour, metric, 1)?;
                for (dim, value) in VISIT_DIMS.iter().zip(&visit.dims) {
                    day.add(dim, value, metric, 1)?;
                }
            }
            for (dim, value) in VISIT_DIMS.iter().zip(&visit.dims) {
                day.visitor_of(dim, value)?;
            }
            day.add("exit", path, "vs", 1)?;
            visit
        }
        Some(mut visit) => {
            let hour = day::hour_of(visit.start);
            let spent = i64::try_from(view.at - visit.last).unwrap_or(i64::MAX);
            let mut changes = vec![("du", spent)];
            if visit.pages == 1 {
                changes.push(("bo", -1));
            }
            for (metric, delta) in changes {
                day.add("_", "-", metric, delta)?;
                day.add_hour(hour, metric, delta)?;
                for (dim, value) in VISIT_DIMS.iter().zip(&visit.dims) {
                    day.add(dim, value, metric, delta)?;
                }
            }
            day.add("exit", &visit.exit, "vs", -1)?;
            day.add("exit", path, "vs", 1)?;
            visit.pages += 1;
            visit.last = view.at;
            visit.exit.clone_from(path);
            visit
        }
    };
    let hour = day::hour_of(view.at);
    day.add("_", "-", "pv", 1)?;
    day.add_hour(hour, "pv", 1)?;
    if day.first("_")? {
        day.add("_", "-", "vi", 1)?;
    }
    if day.first(&format!("h{hour:02}"))? {
        day.add_hour(hour, "vi", 1)?;
    }
    day.add("page", path, "pv", 1)?;
    day.visitor_of("page", path)?;
    for (dim, value) in VISIT_DIMS.iter().zip(&visit.dims) {
        day.add(dim, value, "pv", 1)?;
    }
    let logged = Logged {
        t: view.at,
        v: view.visitor.clone(),
        s: visit.start,
        n: visit.pages,
        p: path.clone(),
        d: visit.dims.clone(),
    };
    let log_key = format!(
        "e/{}/{}/{:013}.{}.{}",
        view.site, day.day, view.at, view.visitor, visit.pages
    );
    bucket.set(&log_key, &logged)?;
    bucket.set(&visit_key, &visit)?;
    Ok(())
}
