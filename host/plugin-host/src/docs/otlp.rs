//! The OTLP/HTTP receiver in the document: a route at one of OTLP's paths
//! (`.../v1/traces`, `/v1/metrics`, `/v1/logs` below an ingest base, as
//! the otel plugin serves them) takes `application/x-protobuf` or
//! `application/json`, answers the service's response message in the same
//! encoding, and its errors are a `google.rpc.Status` to a protobuf client
//! and a problem document to a JSON one, as the OTLP specification says.
//! Its credential is an ingest token in `plateau-otel-token`, so a missing
//! or wrong one is a 401 although the route needs no API token.
//!
//! A plugin's description carries no body shapes, so the host knows this
//! protocol's by its fixed paths, as it knows OFREP's ([`super::ofrep`]).

use serde_json::{Map, Value, json};

/// The signals, by the last segment of their path, with the field their
/// partial success counts rejections in.
const SIGNALS: &[(&str, &str)] = &[
    ("/ingest/v1/traces", "rejectedSpans"),
    ("/ingest/v1/metrics", "rejectedDataPoints"),
    ("/ingest/v1/logs", "rejectedLogRecords"),
];

fn signal(path: &str) -> Option<&'static str> {
    SIGNALS
        .iter()
        .find(|(suffix, _)| path.ends_with(suffix))
        .map(|(_, rejected)| *rejected)
}

fn protobuf() -> Value {
    json!({ "schema": { "type": "string", "format": "binary" } })
}

fn error(description: &str) -> Value {
    json!({
        "description": description,
        "content": {
            "application/problem+json": { "schema": { "$ref": "#/components/schemas/Problem" } },
            "application/x-protobuf": protobuf()
        }
    })
}

/// Replaces the generic success and errors with OTLP's when `path` is an
/// OTLP path.
pub fn document(path: &str, responses: &mut Map<String, Value>) {
    let Some(rejected) = signal(path) else { return };
    responses.remove("2XX");
    let answer = json!({
        "type": "object",
        "properties": { "partialSuccess": {
            "type": "object",
            "properties": {
                rejected: { "type": ["string", "integer"] },
                "errorMessage": { "type": "string" }
            }
        } }
    });
    responses.insert(
        "200".into(),
        json!({
            "description": "accepted; partialSuccess counts the records that were not kept and says why",
            "content": {
                "application/json": { "schema": answer },
                "application/x-protobuf": protobuf()
            }
        }),
    );
    for (status, description) in [
        (
            "400",
            "the body does not decode as the service's request message",
        ),
        (
            "401",
            "the plateau-otel-token header holds no known ingest token",
        ),
        ("413", "the body is over the limit, compressed or not"),
        (
            "415",
            "the content type is not application/x-protobuf or application/json, or the encoding not gzip",
        ),
    ] {
        responses.insert(status.into(), error(description));
    }
}

/// OTLP's request body when `path` is an OTLP path.
pub fn request_body(path: &str) -> Option<Value> {
    signal(path)?;
    Some(json!({
        "description": "an OTLP Export*ServiceRequest, protobuf or OTLP/JSON, optionally with Content-Encoding: gzip",
        "required": true,
        "content": {
            "application/x-protobuf": protobuf(),
            "application/json": { "schema": { "type": "object" } }
        }
    }))
}
