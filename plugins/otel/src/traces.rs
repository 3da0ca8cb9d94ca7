//! `GET /otel/traces` (traces with a span that matches the filters, newest
//! first) and `GET /otel/traces/{trace_id}` (a trace's span tree).

use std::collections::{BTreeMap, BTreeSet};

use plateau_sdk::{ApiError, Page, Params, Request, Response};

use crate::query::{self, MAX_CHUNKS, Scope};
use crate::record::SpanRec;
use crate::views::{SpanNode, SpanView, TraceSummary, TraceView, duration_ms};

/// What a span must be to match `GET /otel/traces`.
struct Filter {
    service: Option<String>,
    name: Option<String>,
    status: Option<String>,
    min_ns: Option<u64>,
    max_ns: Option<u64>,
    attributes: Vec<(String, String)>,
}

impl Filter {
    fn of(req: &Request) -> Result<Filter, ApiError> {
        let q = req.query();
        let ms = |field: &str| -> Result<Option<u64>, ApiError> {
            match q.get(field) {
                None => Ok(None),
                Some(raw) => match raw.parse::<f64>() {
                    Ok(v) if v >= 0.0 && v.is_finite() => Ok(Some((v * 1e6) as u64)),
                    _ => Err(ApiError::validation(
                        field,
                        "must be a number of milliseconds, 0 or more",
                    )),
                },
            }
        };
        let status = q.get("status").map(str::to_owned);
        if let Some(s) = &status
            && !["ok", "error", "unset"].contains(&s.as_str())
        {
            return Err(ApiError::validation("status", "must be ok, error or unset"));
        }
        Ok(Filter {
            service: q.get("service").map(str::to_owned),
            name: q.get("name").map(str::to_owned),
            status,
            min_ns: ms("minDurationMs")?,
            max_ns: ms("maxDurationMs")?,
            attributes: query::attribute_filters(req),
        })
    }

    fn matches(&self, s: &SpanRec) -> bool {
        let d = s.end - s.start;
        self.service.as_ref().is_none_or(|v| *v == s.service)
            && self.name.as_ref().is_none_or(|v| *v == s.name)
            && self.status.as_ref().is_none_or(|v| *v == s.status_code)
            && self.min_ns.is_none_or(|min| d >= min)
            && self.max_ns.is_none_or(|max| d <= max)
            && query::attributes_match(&self.attributes, &s.attributes, &s.resource)
    }
}

/// `GET /otel/traces`
pub fn list(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    let scope = Scope::of(req)?;
    let filter = Filter::of(req)?;
    let limit = query::limit(req, 20, 100)?;
    // Trace id to the index of the day its newest matching span arrived.
    let mut found: Vec<(String, usize)> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut read = 0;
    'days: for (i, day) in scope.days.iter().enumerate() {
        let prefix = crate::record::daily_prefix("s", &scope.project, day);
        let mut cursor = None;
        loop {
            let page = scope.bucket.list(&prefix, cursor.as_deref(), 10)?;
            for entry in &page.entries {
                read += 1;
                let spans: Vec<SpanRec> = entry.json()?;
                for s in spans.iter().rev().filter(|s| filter.matches(s)) {
                    if seen.insert(s.trace_id.clone()) {
                        found.push((s.trace_id.clone(), i));
                    }
                }
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
    found.truncate(limit);
    let mut items = Vec::new();
    for (trace, i) in found {
        // A trace's spans arrive within a day or so of each other.
        let around = &scope.days[i.saturating_sub(1)..(i + 2).min(scope.days.len())];
        let spans = spans_of(&scope, &trace, around)?;
        items.push(summary(&trace, &spans));
    }
    Ok(Page::all(items).into_response())
}

/// Every kept span of `trace` that arrived on `days`, each once.
fn spans_of(scope: &Scope, trace: &str, days: &[String]) -> Result<Vec<SpanRec>, ApiError> {
    let mut spans: BTreeMap<String, SpanRec> = BTreeMap::new();
    for day in days {
        for chunk in scope.pointed("t", day, trace)? {
            for s in scope.chunk::<SpanRec>("s", day, &chunk)? {
                if s.trace_id == trace {
                    spans.entry(s.span_id.clone()).or_insert(s);
                }
            }
        }
    }
    Ok(spans.into_values().collect())
}

/// The spans whose parent is not among `spans`: the root, and the tops of
/// parts whose parents were not received.
fn is_top(s: &SpanRec, ids: &BTreeSet<&str>) -> bool {
    s.parent_span_id.is_empty() || !ids.contains(s.parent_span_id.as_str())
}

fn summary(trace: &str, spans: &[SpanRec]) -> TraceSummary {
    let ids: BTreeSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    let root = spans
        .iter()
        .filter(|s| is_top(s, &ids))
        .min_by_key(|s| (!s.parent_span_id.is_empty(), s.start));
    let start = spans.iter().map(|s| s.start).min().unwrap_or(0);
    let end = spans.iter().map(|s| s.end).max().unwrap_or(0);
    let services: BTreeSet<&str> = spans.iter().map(|s| s.service.as_str()).collect();
    TraceSummary {
        trace_id: trace.to_owned(),
        root_name: root.map(|s| s.name.clone()),
        root_service: root.map(|s| s.service.clone()),
        services: services.into_iter().map(str::to_owned).collect(),
        start_time: query::time(start),
        duration_ms: duration_ms(start, end),
        span_count: spans.len(),
        error_count: spans.iter().filter(|s| s.status_code == "error").count(),
    }
}

/// `GET /otel/traces/{trace_id}`: the trace's spans as a tree, each with
/// its `children` sorted by start time.
pub fn get(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let trace = query::trace_id(&params["trace_id"], "trace_id")?;
    let scope = Scope::of(req)?;
    let spans = spans_of(&scope, &trace, &scope.days)?;
    if spans.is_empty() {
        return Err(ApiError::not_found(format!(
            "trace {trace} has no kept spans: find traces with GET /otel/traces"
        )));
    }
    let body = TraceView {
        summary: summary(&trace, &spans),
        spans: tree(spans),
    };
    Ok(Response::ok(&body))
}

/// The spans nested under their parents, built without recursion (a
/// trace may be deep).
fn tree(mut spans: Vec<SpanRec>) -> Vec<SpanNode> {
    spans.sort_by_key(|s| s.start);
    let ids: BTreeSet<String> = spans.iter().map(|s| s.span_id.clone()).collect();
    let mut children: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    let mut tops = Vec::new();
    for (i, s) in spans.iter().enumerate() {
        if s.parent_span_id.is_empty() || !ids.contains(&s.parent_span_id) {
            tops.push(i);
        } else {
            children
                .entry(s.parent_span_id.clone())
                .or_default()
                .push(i);
        }
    }
    // Pre-order, then built in reverse so children exist before parents.
    let mut order = Vec::new();
    let mut stack: Vec<usize> = tops.iter().rev().copied().collect();
    while let Some(i) = stack.pop() {
        order.push(i);
        if let Some(kids) = children.get(&spans[i].span_id) {
            stack.extend(kids.iter().rev());
        }
    }
    let mut built: Vec<Option<SpanNode>> = (0..spans.len()).map(|_| None).collect();
    for &i in order.iter().rev() {
        let kids: Vec<SpanNode> = children
            .get(&spans[i].span_id)
            .map(|k| k.iter().filter_map(|&c| built[c].take()).collect())
            .unwrap_or_default();
        built[i] = Some(SpanNode {
            span: SpanView::from(&spans[i]),
            children: kids,
        });
    }
    tops.iter().filter_map(|&i| built[i].take()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(id: &str, parent: &str, start: u64) -> SpanRec {
        SpanRec {
            trace_id: "t".into(),
            span_id: id.into(),
            parent_span_id: parent.into(),
            name: id.into(),
            kind: "internal".into(),
            service: "svc".into(),
            start,
            end: start + 10,
            status_code: "unset".into(),
            status_message: String::new(),
            attributes: Default::default(),
            resource: Default::default(),
            scope: String::new(),
            events: vec![],
            links: vec![],
        }
    }

    #[test]
    fn spans_nest_under_their_parents_in_start_order() {
        let roots = tree(vec![
            span("c2", "root", 30),
            span("root", "", 0),
            span("g", "c1", 25),
            span("c1", "root", 20),
            span("orphan", "lost", 5),
        ]);
        let names: Vec<&str> = roots.iter().map(|r| r.span.name.as_str()).collect();
        assert_eq!(names, ["root", "orphan"]);
        let kids: Vec<&str> = roots[0]
            .children
            .iter()
            .map(|c| c.span.name.as_str())
            .collect();
        assert_eq!(kids, ["c1", "c2"]);
        assert_eq!(roots[0].children[0].children[0].span.name, "g");
    }

    #[test]
    fn a_deep_trace_builds_without_recursion() {
        let mut spans = vec![span("s0", "", 0)];
        for i in 1..2000 {
            spans.push(span(&format!("s{i}"), &format!("s{}", i - 1), i));
        }
        let roots = tree(spans);
        assert_eq!(roots.len(), 1);
    }
}
