//! The OpenFeature Remote Evaluation Protocol in the document: a route at
//! one of OFREP's paths answers OFREP's bodies, errors included (`application/json`,
//! not problem documents, so OpenFeature's OFREP providers read every answer).
//!
//! A plugin's description carries no response shapes, so the host knows
//! this protocol's by its fixed paths, as OFREP's own OpenAPI document
//! defines them; 401 and 403 stay the host's problem documents.

use serde_json::{Map, Value, json};

/// OFREP's paths below a provider's base URL.
const SINGLE: &str = "/ofrep/v1/evaluate/flags/{key}";
const BULK: &str = "/ofrep/v1/evaluate/flags";

/// The evaluation statuses OFREP gives a failed evaluation a code of.
const ERROR_CODES: &[&str] = &[
    "FLAG_NOT_FOUND",
    "PARSE_ERROR",
    "TYPE_MISMATCH",
    "TARGETING_KEY_MISSING",
    "INVALID_CONTEXT",
    "GENERAL",
];

fn json_body(description: &str, schema: Value) -> Value {
    json!({
        "description": description,
        "content": { "application/json": { "schema": schema } }
    })
}

fn success() -> Value {
    json!({
        "type": "object",
        "required": ["key", "reason"],
        "properties": {
            "key": { "type": "string" },
            "value": {},
            "reason": { "type": "string" },
            "variant": { "type": "string" },
            "metadata": { "type": "object" }
        }
    })
}

fn failure() -> Value {
    json!({
        "type": "object",
        "required": ["key", "errorCode"],
        "properties": {
            "key": { "type": "string" },
            "errorCode": { "enum": ERROR_CODES },
            "errorDetails": { "type": "string" },
            "metadata": { "type": "object" }
        }
    })
}

fn bulk_failure() -> Value {
    json!({
        "type": "object",
        "required": ["errorCode"],
        "properties": {
            "errorCode": { "enum": ERROR_CODES },
            "errorDetails": { "type": "string" }
        }
    })
}

/// Replaces the generic success and the 400 and 404 problems with OFREP's
/// answers when `path` is one of OFREP's.
pub fn document(path: &str, responses: &mut Map<String, Value>) {
    if path.ends_with(SINGLE) {
        responses.remove("2XX");
        responses.insert("200".into(), json_body("the flag's evaluation", success()));
        responses.insert(
            "400".into(),
            json_body("the evaluation failed; errorCode says why", failure()),
        );
        responses.insert(
            "404".into(),
            json_body("FLAG_NOT_FOUND: no such flag", failure()),
        );
    } else if path.ends_with(BULK) {
        responses.remove("2XX");
        let flags = json!({
            "type": "object",
            "required": ["flags"],
            "properties": {
                "flags": { "type": "array", "items": { "anyOf": [success(), failure()] } },
                "metadata": { "type": "object" }
            }
        });
        responses.insert(
            "200".into(),
            json_body("every flag's evaluation, with an ETag", flags),
        );
        responses.insert(
            "304".into(),
            json!({ "description": "If-None-Match names the current ETag: nothing changed" }),
        );
        responses.insert(
            "400".into(),
            json_body("the request cannot be evaluated", bulk_failure()),
        );
    }
}

/// OFREP's request body, `{"context": {...}}`, when `path` is one of
/// OFREP's; it may be left out (an empty context).
pub fn request_body(path: &str) -> Option<Value> {
    (path.ends_with(SINGLE) || path.ends_with(BULK)).then(|| {
        json!({
            "description": "the evaluation context; an absent body is an empty context",
            "required": false,
            "content": { "application/json": { "schema": {
                "type": "object",
                "properties": { "context": {
                    "type": ["object", "null"],
                    "properties": { "targetingKey": { "type": "string" } }
                } }
            } } }
        })
    })
}
