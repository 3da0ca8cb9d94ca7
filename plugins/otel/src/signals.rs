//! `GET /otel/metrics` (metric series with their newest points) and
//! `GET /otel/logs` (log records, newest first, or those of one trace).

use plateau_sdk::{ApiError, Page, Params, Request, Response};

use crate::query::{self, MAX_CHUNKS, Scope};
use crate::record::{self, LogRec, PointRec, SeriesRec};
use crate::views::{LogView, PointView, SeriesView};

/// The most series one query looks at.
const MAX_SERIES_SCANNED: usize = 5_000;

/// `GET /otel/metrics?name=&service=&attr.{key}=&limit=&points=`
pub fn metrics(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let scope = Scope::of(req)?;
    let q = req.query();
    let name = q.get("name");
    let service = q.get("service");
    let filters = query::attribute_filters(req);
    let limit = query::limit(req, 20, 100)?;
    let per_series = query::limit_named(req, "points", 100, 1000)?;
    let first_day = scope.days.last().cloned().unwrap_or_default();
    let cutoff_ms = first_day.parse::<u64>().unwrap_or(0) * record::DAY_MS;
    let prefix = record::series_prefix(&scope.project, name);
    let mut series = Vec::new();
    let mut cursor = None;
    let mut scanned = 0;
    'pages: loop {
        let page = scope.bucket.list(&prefix, cursor.as_deref(), 200)?;
        for entry in &page.entries {
            scanned += 1;
            let s: SeriesRec = entry.json()?;
            let wanted = s.last_seen >= cutoff_ms
                && name.is_none_or(|n| n == s.name)
                && service.is_none_or(|v| v == s.service)
                && query::attributes_match(&filters, &s.attributes, &s.resource);
            if wanted {
                series.push(s);
            }
            if series.len() >= limit || scanned >= MAX_SERIES_SCANNED {
                break 'pages;
            }
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let mut items = Vec::new();
    for s in series {
        let points = points(&scope, &s, per_series)?;
        items.push(SeriesView::new(s, points));
    }
    Ok(Page::all(items).into_response())
}

/// The newest `limit` points of series `s`, newest first.
fn points(scope: &Scope, s: &SeriesRec, limit: usize) -> Result<Vec<PointView>, ApiError> {
    let last_day = record::day(s.last_seen);
    let mut out = Vec::new();
    for day in scope.days.iter().filter(|d| **d <= last_day) {
        let prefix = record::points_prefix(&scope.project, day, &s.name, &s.id);
        let page = scope
            .bucket
            .list(&prefix, None, (limit - out.len()) as u32)?;
        for entry in &page.entries {
            let p: PointRec = entry.json()?;
            out.push(PointView::from(&p));
        }
        if out.len() >= limit {
            break;
        }
    }
    Ok(out)
}

/// `GET /otel/logs?traceId=&service=&minSeverity=&attr.{key}=&limit=`
pub fn logs(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let scope = Scope::of(req)?;
    let q = req.query();
    let trace = q
        .get("traceId")
        .map(|t| query::trace_id(t, "traceId"))
        .transpose()?;
    let service = q.get("service");
    let min_severity = match q.get("minSeverity") {
        None => 0,
        Some(raw) => raw
            .parse::<i32>()
            .ok()
            .filter(|n| (1..=24).contains(n))
            .ok_or_else(|| {
                ApiError::validation("minSeverity", "must be a severity number, 1 to 24")
            })?,
    };
    let filters = query::attribute_filters(req);
    let limit = query::limit(req, 50, 500)?;
    let wanted = |l: &LogRec| {
        trace.as_ref().is_none_or(|t| *t == l.trace_id)
            && service.is_none_or(|v| v == l.service)
            && l.severity_number >= min_severity
            && query::attributes_match(&filters, &l.attributes, &l.resource)
    };
    let mut found: Vec<LogRec> = Vec::new();
    let mut read = 0;
    'days: for day in &scope.days {
        if let Some(t) = &trace {
            for chunk in scope.pointed("lt", day, t)? {
                read += 1;
                let logs = scope.chunk::<LogRec>("l", day, &chunk)?;
                found.extend(logs.into_iter().filter(|l| wanted(l)));
                if read >= MAX_CHUNKS {
                    break 'days;
                }
            }
            continue;
        }
        let prefix = record::daily_prefix("l", &scope.project, day);
        let mut cursor = None;
        loop {
            let page = scope.bucket.list(&prefix, cursor.as_deref(), 10)?;
            for entry in &page.entries {
                read += 1;
                let logs: Vec<LogRec> = entry.json()?;
                found.extend(logs.into_iter().filter(|l| wanted(l)));
                if found.len() >= limit || read >= MAX_CHUNKS {
                    break 'days;
                }
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => break,
            }
        }
    }
    found.sort_by_key(|f| std::cmp::Reverse(f.time));
    found.truncate(limit);
    Ok(Page::all(found.iter().map(LogView::from).collect::<Vec<_>>()).into_response())
}
