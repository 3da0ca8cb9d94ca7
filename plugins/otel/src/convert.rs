//! OTLP messages to stored records: attribute values as JSON, ids as
//! lowercase hex, enums as their names.

use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::metrics::v1::{
    ExponentialHistogramDataPoint, HistogramDataPoint, NumberDataPoint, SummaryDataPoint,
    number_data_point,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::Span;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use plateau_sdk::serde_json::{Map, Value, json};

use crate::record::{Attributes, LogRec, SpanRec};

/// What a resource says of its service.
pub struct Origin {
    pub service: String,
    pub resource: Attributes,
}

impl Origin {
    pub fn of(resource: Option<&Resource>) -> Origin {
        let resource = attributes(resource.map(|r| r.attributes.as_slice()).unwrap_or(&[]));
        let service = match resource.get("service.name") {
            Some(Value::String(s)) => s.clone(),
            _ => "unknown_service".to_owned(),
        };
        Origin { service, resource }
    }
}

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// An attribute value as JSON: strings, booleans, integers and doubles as
/// themselves, arrays and key-value lists as arrays and objects, bytes as
/// base64 in `{"bytes": ...}`.
pub fn any(value: Option<&AnyValue>) -> Value {
    match value.and_then(|v| v.value.as_ref()) {
        None => Value::Null,
        Some(Any::StringValue(s)) => json!(s),
        Some(Any::BoolValue(b)) => json!(b),
        Some(Any::IntValue(i)) => json!(i),
        Some(Any::DoubleValue(d)) => json!(d),
        Some(Any::ArrayValue(a)) => Value::Array(a.values.iter().map(|v| any(Some(v))).collect()),
        Some(Any::KvlistValue(list)) => {
            let map: Map<String, Value> = list
                .values
                .iter()
                .map(|kv| (kv.key.clone(), any(kv.value.as_ref())))
                .collect();
            Value::Object(map)
        }
        Some(Any::BytesValue(b)) => {
            use base64::Engine as _;
            json!({ "bytes": base64::engine::general_purpose::STANDARD.encode(b) })
        }
        Some(Any::StringValueStrindex(i)) => json!({ "strindex": i }),
    }
}

pub fn attributes(list: &[KeyValue]) -> Attributes {
    list.iter()
        .map(|kv| (kv.key.clone(), any(kv.value.as_ref())))
        .collect()
}

fn scope_name(scope: Option<&InstrumentationScope>) -> String {
    scope.map(|s| s.name.clone()).unwrap_or_default()
}

fn span_kind(kind: i32) -> String {
    SpanKind::try_from(kind)
        .map(|k| match k {
            SpanKind::Internal => "internal",
            SpanKind::Server => "server",
            SpanKind::Client => "client",
            SpanKind::Producer => "producer",
            SpanKind::Consumer => "consumer",
            SpanKind::Unspecified => "unspecified",
        })
        .unwrap_or("unspecified")
        .to_owned()
}

fn status_code(code: i32) -> String {
    match StatusCode::try_from(code) {
        Ok(StatusCode::Ok) => "ok",
        Ok(StatusCode::Error) => "error",
        _ => "unset",
    }
    .to_owned()
}

/// Why a span cannot be kept, naming the field.
pub fn check_span(span: &Span) -> Result<(), String> {
    if span.trace_id.len() != 16 || span.trace_id.iter().all(|b| *b == 0) {
        return Err("traceId must be 16 bytes, not all zero".to_owned());
    }
    if span.span_id.len() != 8 || span.span_id.iter().all(|b| *b == 0) {
        return Err("spanId must be 8 bytes, not all zero".to_owned());
    }
    if !span.parent_span_id.is_empty() && span.parent_span_id.len() != 8 {
        return Err("parentSpanId must be empty or 8 bytes".to_owned());
    }
    Ok(())
}

pub fn span(span: &Span, origin: &Origin, scope: Option<&InstrumentationScope>) -> SpanRec {
    let status = span.status.as_ref();
    SpanRec {
        trace_id: hex(&span.trace_id),
        span_id: hex(&span.span_id),
        parent_span_id: hex(&span.parent_span_id),
        name: span.name.clone(),
        kind: span_kind(span.kind),
        service: origin.service.clone(),
        start: span.start_time_unix_nano,
        end: span.end_time_unix_nano.max(span.start_time_unix_nano),
        status_code: status_code(status.map(|s| s.code).unwrap_or_default()),
        status_message: status.map(|s| s.message.clone()).unwrap_or_default(),
        attributes: attributes(&span.attributes),
        resource: origin.resource.clone(),
        scope: scope_name(scope),
        events: span
            .events
            .iter()
            .map(|e| {
                json!({
                    "timeUnixNano": e.time_unix_nano.to_string(),
                    "name": e.name,
                    "attributes": attributes(&e.attributes),
                })
            })
            .collect(),
        links: span
            .links
            .iter()
            .map(|l| {
                json!({
                    "traceId": hex(&l.trace_id),
                    "spanId": hex(&l.span_id),
                    "attributes": attributes(&l.attributes),
                })
            })
            .collect(),
    }
}

pub fn log(
    record: &LogRecord,
    origin: &Origin,
    scope: Option<&InstrumentationScope>,
    now_ns: u64,
) -> LogRec {
    let time = [record.time_unix_nano, record.observed_time_unix_nano]
        .into_iter()
        .find(|t| *t != 0)
        .unwrap_or(now_ns);
    LogRec {
        time,
        severity_number: record.severity_number,
        severity_text: record.severity_text.clone(),
        body: any(record.body.as_ref()),
        service: origin.service.clone(),
        trace_id: hex(&record.trace_id),
        span_id: hex(&record.span_id),
        attributes: attributes(&record.attributes),
        resource: origin.resource.clone(),
        scope: scope_name(scope),
    }
}

/// The fields of a gauge or sum point.
pub fn number_point(p: &NumberDataPoint) -> Value {
    match p.value {
        Some(number_data_point::Value::AsInt(i)) => json!(i),
        Some(number_data_point::Value::AsDouble(d)) => json!(d),
        None => Value::Null,
    }
}

pub fn histogram_point(p: &HistogramDataPoint) -> Value {
    json!({
        "count": p.count,
        "sum": p.sum,
        "min": p.min,
        "max": p.max,
        "bucketCounts": p.bucket_counts,
        "explicitBounds": p.explicit_bounds,
    })
}

pub fn exponential_point(p: &ExponentialHistogramDataPoint) -> Value {
    json!({
        "count": p.count,
        "sum": p.sum,
        "min": p.min,
        "max": p.max,
        "scale": p.scale,
        "zeroCount": p.zero_count,
    })
}

pub fn summary_point(p: &SummaryDataPoint) -> Value {
    let quantiles: Vec<Value> = p
        .quantile_values
        .iter()
        .map(|q| json!({ "quantile": q.quantile, "value": q.value }))
        .collect();
    json!({ "count": p.count, "sum": p.sum, "quantiles": quantiles })
}

/// A series id: a hash of the metric name, the service and the point's
/// attributes (FNV-1a over their JSON, which sorts keys).
pub fn series_id(name: &str, service: &str, attributes: &Attributes) -> String {
    let text = format!(
        "{name}\u{0}{service}\u{0}{}",
        plateau_sdk::serde_json::to_string(attributes).unwrap_or_default()
    );
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry_proto::tonic::common::v1::{ArrayValue, KeyValueList};

    fn kv(key: &str, value: Any) -> KeyValue {
        KeyValue {
            key: key.to_owned(),
            value: Some(AnyValue { value: Some(value) }),
            ..Default::default()
        }
    }

    #[test]
    fn attribute_values_become_plain_json() {
        let attrs = attributes(&[
            kv("s", Any::StringValue("x".into())),
            kv("i", Any::IntValue(7)),
            kv("b", Any::BoolValue(true)),
            kv(
                "a",
                Any::ArrayValue(ArrayValue {
                    values: vec![AnyValue {
                        value: Some(Any::DoubleValue(1.5)),
                    }],
                }),
            ),
            kv(
                "m",
                Any::KvlistValue(KeyValueList {
                    values: vec![kv("k", Any::StringValue("v".into()))],
                }),
            ),
        ]);
        assert_eq!(
            Value::Object(attrs.into_iter().collect()),
            json!({"s": "x", "i": 7, "b": true, "a": [1.5], "m": {"k": "v"}})
        );
    }

    #[test]
    fn a_span_needs_well_formed_ids() {
        let mut span = Span {
            trace_id: vec![1; 16],
            span_id: vec![2; 8],
            ..Default::default()
        };
        assert_eq!(check_span(&span), Ok(()));
        span.trace_id = vec![0; 16];
        assert!(check_span(&span).unwrap_err().starts_with("traceId"));
        span.trace_id = vec![1; 16];
        span.span_id = vec![2; 3];
        assert!(check_span(&span).unwrap_err().starts_with("spanId"));
    }

    #[test]
    fn series_ids_depend_on_name_service_and_attributes() {
        let mut a = Attributes::new();
        a.insert("route".into(), json!("/x"));
        let one = series_id("requests", "api", &a);
        assert_eq!(one, series_id("requests", "api", &a.clone()));
        assert_ne!(one, series_id("requests", "web", &a));
        a.insert("code".into(), json!(200));
        assert_ne!(one, series_id("requests", "api", &a));
    }
}
