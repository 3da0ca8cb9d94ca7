//! The OTLP/HTTP receiver: `POST /otel/ingest/v1/traces`, `/v1/metrics`
//! and `/v1/logs`, public routes whose credential is the project's ingest
//! token ([`crate::tokens::TOKEN_HEADER`]). So an exporter needs only
//! `OTEL_EXPORTER_OTLP_ENDPOINT=<api>/otel/ingest` and
//! `OTEL_EXPORTER_OTLP_HEADERS=plateau-otel-token=plto_...`.
//!
//! A request that decodes answers 200 with the service's response message;
//! records that cannot be kept (malformed ids, an empty metric name, more
//! than one request may store) are counted in its partial success.

use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::metrics::v1::{
    ExportMetricsPartialSuccess, ExportMetricsServiceRequest, ExportMetricsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTracePartialSuccess, ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use plateau_sdk::serde_json::Value;
use plateau_sdk::{ApiError, Params, Request, Response, clock};

use crate::convert::{self, Origin};
use crate::record::{Attributes, PointRec, SeriesRec};
use crate::store::{OVER_BUDGET, Outcome, Writer};
use crate::tokens;
use crate::wire::{self, Encoding, WireError};

/// Runs `receive` with the request's encoding, token and decoded body, and
/// turns a failure into the answer OTLP expects.
fn serve<T>(
    req: &Request,
    what: &str,
    receive: impl FnOnce(Encoding, &mut Writer, T) -> Result<Response, ApiError>,
) -> Result<Response, ApiError>
where
    T: prost::Message + Default + serde::de::DeserializeOwned,
{
    let encoding = match wire::encoding(req) {
        Ok(e) => e,
        Err(e) => return Ok(e.response(None)),
    };
    let attempt = || -> Result<Response, WireError> {
        let entry = tokens::authenticate(req)?;
        let bytes = wire::body(req)?;
        let message: T = wire::decode(encoding, &bytes, what)?;
        let mut writer = Writer::open(
            &entry.organization_id,
            &entry.project_id,
            clock::now_millis(),
        )?;
        Ok(receive(encoding, &mut writer, message)?)
    };
    Ok(attempt().unwrap_or_else(|e| e.response(Some(encoding))))
}

/// `POST /otel/ingest/v1/traces`
pub fn traces(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    serve(
        req,
        "ExportTraceServiceRequest",
        |encoding, writer, message: ExportTraceServiceRequest| {
            let mut outcome = Outcome::default();
            let mut spans = Vec::new();
            for rs in &message.resource_spans {
                let origin = Origin::of(rs.resource.as_ref());
                for ss in &rs.scope_spans {
                    for span in &ss.spans {
                        match convert::check_span(span) {
                            Ok(()) => {
                                let rec = convert::span(span, &origin, ss.scope.as_ref());
                                spans.push((rec.trace_id.clone(), rec));
                            }
                            Err(why) => outcome.reject(why),
                        }
                    }
                }
            }
            let dropped = writer.chunks("s", "t", spans)?;
            outcome.reject_many(dropped, OVER_BUDGET);
            let partial = (outcome.rejected > 0).then(|| ExportTracePartialSuccess {
                rejected_spans: outcome.rejected as i64,
                error_message: outcome.message(),
            });
            Ok(wire::answer(
                encoding,
                &ExportTraceServiceResponse {
                    partial_success: partial,
                },
            ))
        },
    )
}

/// `POST /otel/ingest/v1/logs`
pub fn logs(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    serve(
        req,
        "ExportLogsServiceRequest",
        |encoding, writer, message: ExportLogsServiceRequest| {
            let mut outcome = Outcome::default();
            let now_ns = writer.now.saturating_mul(1_000_000);
            let mut records = Vec::new();
            for rl in &message.resource_logs {
                let origin = Origin::of(rl.resource.as_ref());
                for sl in &rl.scope_logs {
                    for log in &sl.log_records {
                        if !matches!(log.trace_id.len(), 0 | 16)
                            || !matches!(log.span_id.len(), 0 | 8)
                        {
                            outcome.reject("traceId must be empty or 16 bytes, spanId empty or 8");
                            continue;
                        }
                        let rec = convert::log(log, &origin, sl.scope.as_ref(), now_ns);
                        records.push((rec.trace_id.clone(), rec));
                    }
                }
            }
            let dropped = writer.chunks("l", "lt", records)?;
            outcome.reject_many(dropped, OVER_BUDGET);
            let partial = (outcome.rejected > 0).then(|| ExportLogsPartialSuccess {
                rejected_log_records: outcome.rejected as i64,
                error_message: outcome.message(),
            });
            Ok(wire::answer(
                encoding,
                &ExportLogsServiceResponse {
                    partial_success: partial,
                },
            ))
        },
    )
}

/// `POST /otel/ingest/v1/metrics`
pub fn metrics(req: &Request, _params: &Params) -> Result<Response, ApiError> {
    serve(
        req,
        "ExportMetricsServiceRequest",
        |encoding, writer, message: ExportMetricsServiceRequest| {
            let mut outcome = Outcome::default();
            let now_ns = writer.now.saturating_mul(1_000_000);
            for rm in &message.resource_metrics {
                let origin = Origin::of(rm.resource.as_ref());
                for sm in &rm.scope_metrics {
                    for metric in &sm.metrics {
                        let points = points(metric.data.as_ref());
                        if metric.name.is_empty() || metric.name.len() > 255 {
                            outcome
                                .reject_many(points.len(), "a metric name must be 1 to 255 bytes");
                            continue;
                        }
                        for (kind, attributes, start, time, value) in points {
                            let series = SeriesRec {
                                id: convert::series_id(&metric.name, &origin.service, &attributes),
                                name: metric.name.clone(),
                                kind: kind.to_owned(),
                                unit: metric.unit.clone(),
                                description: metric.description.clone(),
                                service: origin.service.clone(),
                                attributes,
                                resource: origin.resource.clone(),
                                last_seen: writer.now,
                            };
                            let time = if time == 0 { now_ns } else { time };
                            let point = PointRec { start, time, value };
                            if !writer.point(&series, &point)? {
                                outcome.reject(OVER_BUDGET);
                            }
                        }
                    }
                }
            }
            let partial = (outcome.rejected > 0).then(|| ExportMetricsPartialSuccess {
                rejected_data_points: outcome.rejected as i64,
                error_message: outcome.message(),
            });
            Ok(wire::answer(
                encoding,
                &ExportMetricsServiceResponse {
                    partial_success: partial,
                },
            ))
        },
    )
}

/// A metric's points: kind, attributes, start and time (ns), value.
type Point = (&'static str, Attributes, u64, u64, Value);

fn points(data: Option<&Data>) -> Vec<Point> {
    let attrs = convert::attributes;
    match data {
        None => Vec::new(),
        Some(Data::Gauge(g)) => g
            .data_points
            .iter()
            .map(|p| {
                (
                    "gauge",
                    attrs(&p.attributes),
                    p.start_time_unix_nano,
                    p.time_unix_nano,
                    convert::number_point(p),
                )
            })
            .collect(),
        Some(Data::Sum(s)) => s
            .data_points
            .iter()
            .map(|p| {
                (
                    "sum",
                    attrs(&p.attributes),
                    p.start_time_unix_nano,
                    p.time_unix_nano,
                    convert::number_point(p),
                )
            })
            .collect(),
        Some(Data::Histogram(h)) => h
            .data_points
            .iter()
            .map(|p| {
                (
                    "histogram",
                    attrs(&p.attributes),
                    p.start_time_unix_nano,
                    p.time_unix_nano,
                    convert::histogram_point(p),
                )
            })
            .collect(),
        Some(Data::ExponentialHistogram(h)) => h
            .data_points
            .iter()
            .map(|p| {
                (
                    "exponentialHistogram",
                    attrs(&p.attributes),
                    p.start_time_unix_nano,
                    p.time_unix_nano,
                    convert::exponential_point(p),
                )
            })
            .collect(),
        Some(Data::Summary(s)) => s
            .data_points
            .iter()
            .map(|p| {
                (
                    "summary",
                    attrs(&p.attributes),
                    p.start_time_unix_nano,
                    p.time_unix_nano,
                    convert::summary_point(p),
                )
            })
            .collect(),
    }
}
