//! OFREP request parsing and response bodies, as JSON a client would receive.

use crate::{NOW, flags};
use plateau_plugin_flags::ofrep::{BulkEvaluationSuccess, EvaluationResponse, parse_request};
use plateau_plugin_flags::{ErrorCode, FlagSet};
use serde_json::{Value, json};

fn single(key: &str, context: Value) -> (u16, Value) {
    let response = EvaluationResponse::from_resolution(key, flags().evaluate(key, &context, NOW));
    (response.status(), serde_json::to_value(&response).unwrap())
}

#[test]
fn single_flag_responses() {
    let set_metadata = json!({"owner": "platform", "tier": 1});
    let cases = [
        (
            "bool-static",
            json!({}),
            200,
            json!({"key": "bool-static", "value": true, "reason": "STATIC", "variant": "on", "metadata": set_metadata}),
        ),
        (
            "greeting-by-email",
            json!({"email": "ballmer@macrosoft.com"}),
            200,
            json!({"key": "greeting-by-email", "value": "hi", "reason": "TARGETING_MATCH", "variant": "hi", "metadata": set_metadata}),
        ),
        // The code default applies: no value, no variant.
        (
            "disabled-bool",
            json!({}),
            200,
            json!({"key": "disabled-bool", "reason": "DISABLED", "metadata": set_metadata}),
        ),
        (
            "code-default-null",
            json!({}),
            200,
            json!({"key": "code-default-null", "reason": "DEFAULT", "metadata": set_metadata}),
        ),
        (
            "no-such-flag",
            json!({}),
            404,
            json!({"key": "no-such-flag", "errorCode": "FLAG_NOT_FOUND",
                   "errorDetails": "flag \"no-such-flag\" does not exist", "metadata": set_metadata}),
        ),
        (
            "unknown-variant-from-targeting",
            json!({}),
            400,
            json!({"key": "unknown-variant-from-targeting", "errorCode": "GENERAL",
                   "errorDetails": "targeting returned \"three\", which is not one of the variants: one, two",
                   "metadata": set_metadata}),
        ),
    ];
    for (key, context, status, body) in cases {
        assert_eq!(single(key, context), (status, body), "{key}");
    }
}

#[test]
fn error_codes_map_to_http_statuses() {
    let cases = [
        (ErrorCode::FlagNotFound, 404, "FLAG_NOT_FOUND"),
        (ErrorCode::ParseError, 400, "PARSE_ERROR"),
        (ErrorCode::TypeMismatch, 400, "TYPE_MISMATCH"),
        (ErrorCode::TargetingKeyMissing, 400, "TARGETING_KEY_MISSING"),
        (ErrorCode::InvalidContext, 400, "INVALID_CONTEXT"),
        (ErrorCode::General, 400, "GENERAL"),
    ];
    for (code, status, text) in cases {
        assert_eq!(code.http_status(), status, "{code:?}");
        assert_eq!(code.as_str(), text);
        assert_eq!(json!(code), json!(text));
    }
}

#[test]
fn request_bodies() {
    // (body, context or error details)
    let ok = [
        ("", json!({})),
        ("  \n", json!({})),
        ("{}", json!({})),
        (r#"{"context": null}"#, json!({})),
        (
            r#"{"context": {"targetingKey": "u-1", "plan": "pro"}}"#,
            json!({"targetingKey": "u-1", "plan": "pro"}),
        ),
    ];
    for (body, context) in ok {
        let request = parse_request(body.as_bytes()).unwrap();
        assert_eq!(Value::Object(request.context), context, "{body:?}");
    }
    let bad = [
        (
            r#"{"context": "user-1"}"#,
            r#"context must be a JSON object, not "user-1""#,
        ),
        (
            r#"{"context": [1]}"#,
            "context must be a JSON object, not [1]",
        ),
        (
            r#"[1]"#,
            r#"the request body must be an object such as {"context": {}}, not [1]"#,
        ),
    ];
    for (body, details) in bad {
        let error = parse_request(body.as_bytes()).unwrap_err();
        assert_eq!(error.details, details, "{body}");
        assert_eq!(error.status(), 400);
        assert_eq!(
            serde_json::to_value(error.for_flag("f")).unwrap(),
            json!({"key": "f", "errorCode": "INVALID_CONTEXT", "errorDetails": details})
        );
        assert_eq!(
            serde_json::to_value(error.for_bulk()).unwrap(),
            json!({"errorCode": "INVALID_CONTEXT", "errorDetails": details})
        );
    }
    let error = parse_request(b"{\"context\": ").unwrap_err();
    assert!(
        error
            .details
            .starts_with("the request body is not valid JSON: "),
        "{error}"
    );
}

#[test]
fn bulk_response_mixes_successes_and_failures() {
    let set = FlagSet::from_json(
        r#"{"metadata": {"env": "prod"}, "flags": {
            "a-static": {"state": "ENABLED", "variants": {"on": true}, "defaultVariant": "on"},
            "b-broken": {"state": "ENABLED", "variants": {"on": true}, "targeting": {"cat": ["x"]}},
            "c-disabled": {"state": "DISABLED", "variants": {"on": true}, "defaultVariant": "on",
                           "metadata": {"env": "test"}}
        }}"#,
    )
    .unwrap();
    let request = parse_request(br#"{"context": {"targetingKey": "u"}}"#).unwrap();
    let context = Value::Object(request.context);
    let response =
        BulkEvaluationSuccess::from_resolutions(set.evaluate_all(&context, NOW), set.metadata());
    let body = serde_json::to_value(&response).unwrap();
    assert_eq!(
        body,
        json!({
            "flags": [
                {"key": "a-static", "value": true, "reason": "STATIC", "variant": "on", "metadata": {"env": "prod"}},
                {"key": "b-broken", "errorCode": "GENERAL",
                 "errorDetails": "targeting returned \"x\", which is not one of the variants: on",
                 "metadata": {"env": "prod"}},
                {"key": "c-disabled", "reason": "DISABLED", "metadata": {"env": "test"}}
            ],
            "metadata": {"env": "prod"}
        })
    );
    // What we send, an OFREP client reads back.
    let parsed: BulkEvaluationSuccess = serde_json::from_value(body).unwrap();
    assert_eq!(parsed, response);
}
