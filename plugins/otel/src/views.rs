//! What the query routes answer, as types: the handlers serialize these and
//! the router declares them, so the OpenAPI document shows the traces,
//! spans, metric series and log records the plugin really gives.

use plateau_sdk::clock;
use plateau_sdk::serde_json::Value;
use serde::Serialize;
use utoipa::ToSchema;

use crate::query::time;
use crate::record::{Attributes, LogRec, PointRec, SeriesRec, SpanRec};

/// A trace in a listing: its root span, services, start and size.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TraceSummary {
    /// 32 lowercase hex digits.
    pub trace_id: String,
    /// The root span's name; none when the root was not received.
    pub root_name: Option<String>,
    pub root_service: Option<String>,
    /// Every service with a span in the trace, sorted.
    pub services: Vec<String>,
    /// RFC 3339, the earliest span's start.
    pub start_time: String,
    pub duration_ms: f64,
    pub span_count: usize,
    /// Spans whose status is `error`.
    pub error_count: usize,
}

/// A trace with its spans as a tree.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TraceView {
    #[serde(flatten)]
    pub summary: TraceSummary,
    /// The root, and the tops of parts whose parents were not received,
    /// each with its `children` sorted by start time.
    pub spans: Vec<SpanNode>,
}

/// A span's status.
#[derive(Debug, Serialize, ToSchema)]
pub struct SpanStatus {
    /// `unset`, `ok` or `error`.
    pub code: String,
    pub message: String,
}

/// A span as stored, with its times in RFC 3339 and as Unix nanoseconds.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpanView {
    pub trace_id: String,
    pub span_id: String,
    pub parent_span_id: Option<String>,
    pub name: String,
    /// `internal`, `server`, `client`, `producer` or `consumer`.
    pub kind: String,
    pub service: String,
    pub start_time: String,
    /// A decimal string: nanoseconds do not fit a JSON number exactly.
    pub start_time_unix_nano: String,
    pub end_time_unix_nano: String,
    pub duration_ms: f64,
    pub status: SpanStatus,
    #[schema(value_type = Object)]
    pub attributes: Attributes,
    /// The resource's attributes (`service.name` and the rest).
    #[schema(value_type = Object)]
    pub resource: Attributes,
    /// The instrumentation scope's name.
    pub scope: String,
    /// OTLP span events as received (name, time, attributes).
    pub events: Vec<Value>,
    /// OTLP span links as received.
    pub links: Vec<Value>,
}

/// A span of a trace's tree and the spans under it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpanNode {
    #[serde(flatten)]
    pub span: SpanView,
    /// The spans whose parent this is, sorted by start time.
    #[schema(no_recursion)]
    pub children: Vec<SpanNode>,
}

/// A metric series and its newest points.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SeriesView {
    pub id: String,
    pub name: String,
    /// `gauge`, `sum`, `histogram`, `exponentialHistogram` or `summary`.
    pub kind: String,
    pub unit: String,
    pub description: String,
    pub service: String,
    #[schema(value_type = Object)]
    pub attributes: Attributes,
    #[schema(value_type = Object)]
    pub resource: Attributes,
    /// RFC 3339.
    pub last_seen: String,
    /// Newest first.
    pub points: Vec<PointView>,
}

/// One point of a metric series.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PointView {
    pub time: String,
    pub time_unix_nano: String,
    pub start_time_unix_nano: String,
    /// A number for gauges and sums; an object (count, sum, buckets...)
    /// for histograms and summaries.
    pub value: Value,
}

/// A log record.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogView {
    pub time: String,
    pub time_unix_nano: String,
    /// 1 to 24 (OpenTelemetry's severity numbers); 0 when unset.
    pub severity_number: i32,
    pub severity_text: String,
    /// The record's body as received: a string, number, object or list.
    pub body: Value,
    pub service: String,
    /// The trace it belongs to, when it carries trace context.
    pub trace_id: Option<String>,
    pub span_id: Option<String>,
    #[schema(value_type = Object)]
    pub attributes: Attributes,
    #[schema(value_type = Object)]
    pub resource: Attributes,
    pub scope: String,
}

/// Milliseconds between two nanosecond times.
pub fn duration_ms(start: u64, end: u64) -> f64 {
    end.saturating_sub(start) as f64 / 1e6
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_owned())
}

impl From<&SpanRec> for SpanView {
    fn from(s: &SpanRec) -> SpanView {
        SpanView {
            trace_id: s.trace_id.clone(),
            span_id: s.span_id.clone(),
            parent_span_id: non_empty(&s.parent_span_id),
            name: s.name.clone(),
            kind: s.kind.clone(),
            service: s.service.clone(),
            start_time: time(s.start),
            start_time_unix_nano: s.start.to_string(),
            end_time_unix_nano: s.end.to_string(),
            duration_ms: duration_ms(s.start, s.end),
            status: SpanStatus {
                code: s.status_code.clone(),
                message: s.status_message.clone(),
            },
            attributes: s.attributes.clone(),
            resource: s.resource.clone(),
            scope: s.scope.clone(),
            events: s.events.clone(),
            links: s.links.clone(),
        }
    }
}

impl From<&PointRec> for PointView {
    fn from(p: &PointRec) -> PointView {
        PointView {
            time: time(p.time),
            time_unix_nano: p.time.to_string(),
            start_time_unix_nano: p.start.to_string(),
            value: p.value.clone(),
        }
    }
}

impl SeriesView {
    pub fn new(s: SeriesRec, points: Vec<PointView>) -> SeriesView {
        SeriesView {
            id: s.id,
            name: s.name,
            kind: s.kind,
            unit: s.unit,
            description: s.description,
            service: s.service,
            attributes: s.attributes,
            resource: s.resource,
            last_seen: clock::rfc3339(s.last_seen),
            points,
        }
    }
}

impl From<&LogRec> for LogView {
    fn from(l: &LogRec) -> LogView {
        LogView {
            time: time(l.time),
            time_unix_nano: l.time.to_string(),
            severity_number: l.severity_number,
            severity_text: l.severity_text.clone(),
            body: l.body.clone(),
            service: l.service.clone(),
            trace_id: non_empty(&l.trace_id),
            span_id: non_empty(&l.span_id),
            attributes: l.attributes.clone(),
            resource: l.resource.clone(),
            scope: l.scope.clone(),
        }
    }
}
