//! OFREP over HTTP: single and bulk evaluation, every error code, ETags and environments in
//! the path.

use crate::client::{
    ORG, PROJECT, admin, bool_flag, caller, evaluate, json, ofrep_raw, request, save_flag,
};
use plateau_plugin_flags::FlagsPlugin;
use plateau_sdk::{Bucket, Method, Response, testing};
use serde_json::{Value, json};

pub const BULK: &str = "/flags/ofrep/v1/evaluate/flags";

pub fn bulk(target: &str, context: &Value, if_none_match: Option<&str>) -> Response {
    let mut req = request(Method::Post, target, admin()).with_json(&json!({ "context": context }));
    if let Some(tag) = if_none_match {
        req = req.with_header("if-none-match", tag);
    }
    testing::handle::<FlagsPlugin>(&req)
}

pub fn rollout(weights: [u32; 2]) -> Value {
    json!({
        "state": "ENABLED",
        "variants": {"on": true, "off": false},
        "defaultVariant": "off",
        "targeting": {"fractional": [["on", weights[0]], ["off", weights[1]]]},
    })
}

#[test]
fn single_flag_successes() {
    save_flag(
        "static-on",
        &json!({"state": "ENABLED", "variants": {"on": true, "off": false},
                                   "defaultVariant": "on", "metadata": {"team": "growth"}}),
    );
    save_flag(
        "by-email",
        &bool_flag(json!({"if": [{"ends_with": [{"var": "email"}, "@example.com"]}, "on"]})),
    );
    save_flag(
        "code-default",
        &json!({"state": "ENABLED", "variants": {"a": 1, "b": 2}}),
    );
    save_flag(
        "disabled",
        &json!({"state": "DISABLED", "variants": {"on": true}, "defaultVariant": "on"}),
    );
    // (key, context, expected body; all 200)
    let cases = [
        (
            "static-on",
            json!({}),
            json!({"key": "static-on", "value": true, "reason": "STATIC", "variant": "on", "metadata": {"team": "growth"}}),
        ),
        (
            "by-email",
            json!({"targetingKey": "u1", "email": "ann@example.com"}),
            json!({"key": "by-email", "value": true, "reason": "TARGETING_MATCH", "variant": "on", "metadata": {}}),
        ),
        (
            "by-email",
            json!({"targetingKey": "u2", "email": "bob@elsewhere.org"}),
            json!({"key": "by-email", "value": false, "reason": "DEFAULT", "variant": "off", "metadata": {}}),
        ),
        (
            "code-default",
            json!({}),
            json!({"key": "code-default", "reason": "DEFAULT", "metadata": {}}),
        ),
        (
            "disabled",
            json!({"targetingKey": "u1"}),
            json!({"key": "disabled", "reason": "DISABLED", "metadata": {}}),
        ),
    ];
    for (key, context, body) in cases {
        assert_eq!(evaluate(key, &context), (200, body), "{key} {context}");
    }
}

#[test]
fn each_error_code_has_its_status_and_body() {
    save_flag("wrong-variant", &bool_flag(json!({"if": [true, "maybe"]})));
    save_flag("split", &rollout([50, 50]));
    // A record whose definition this version refuses, as an older or newer one may have
    // written it.
    testing::set_organization(Some(ORG));
    let mut stored = json!({"key": "legacy", "project": PROJECT, "environment": "production",
        "version": 1, "etag": "\"1\"", "createdAt": "2023-11-14T22:13:20.000Z",
        "updatedAt": "2023-11-14T22:13:20.000Z", "updatedBy": null});
    stored.as_object_mut().unwrap().extend(
        bool_flag(json!({"future_op": [1]}))
            .as_object()
            .unwrap()
            .clone(),
    );
    let bucket = Bucket::caller().unwrap();
    bucket
        .set("flag:prj_main:production:legacy", &stored)
        .unwrap();
    bucket
        .set_raw("flag:prj_main:production:garbled", b"not json")
        .unwrap();
    testing::set_organization(None);

    // (path below the OFREP base, body, status, errorCode, start of errorDetails)
    let single = |key: &str| format!("{BULK}/{key}");
    let cases = [
        (
            single("nope"),
            r#"{"context": {}}"#,
            404,
            "FLAG_NOT_FOUND",
            "flag nope does not exist in project prj_main and environment production",
        ),
        (
            single("bad%20key"),
            r#"{"context": {}}"#,
            404,
            "FLAG_NOT_FOUND",
            "flag bad key does not exist",
        ),
        (
            format!("{}?environment=staging", single("split")),
            r#"{"context": {}}"#,
            404,
            "FLAG_NOT_FOUND",
            "flag split does not exist in project prj_main and environment staging",
        ),
        (
            single("legacy"),
            r#"{"context": {}}"#,
            400,
            "PARSE_ERROR",
            "the stored definition of flag legacy cannot be used: unknown operator \"future_op\" (at $.targeting)",
        ),
        (
            single("garbled"),
            r#"{"context": {}}"#,
            400,
            "PARSE_ERROR",
            "the stored definition of flag garbled",
        ),
        (
            single("split"),
            r#"{"context": {"plan": "pro"}}"#,
            400,
            "TARGETING_KEY_MISSING",
            "flag split splits traffic by targetingKey: add a non-empty targetingKey",
        ),
        (
            single("split"),
            r#"{"context": {"targetingKey": ""}}"#,
            400,
            "TARGETING_KEY_MISSING",
            "flag split",
        ),
        (
            single("split"),
            r#"{"context": "user-1"}"#,
            400,
            "INVALID_CONTEXT",
            "context must be a JSON object, not \"user-1\"",
        ),
        (
            single("split"),
            r#"{"context": {"targetingKey": 42}}"#,
            400,
            "INVALID_CONTEXT",
            "targetingKey must be a string, not 42",
        ),
        (
            single("split"),
            r#"{"context": "#,
            400,
            "INVALID_CONTEXT",
            "the request body is not valid JSON",
        ),
        (
            single("wrong-variant"),
            r#"{"context": {}}"#,
            400,
            "GENERAL",
            "targeting returned \"maybe\", which is not one of the variants: off, on",
        ),
        (
            format!("{}?environment=Prod", single("split")),
            r#"{"context": {}}"#,
            400,
            "GENERAL",
            "environment must be 1 to 32 of a-z, 0-9 and -",
        ),
    ];
    for (path, body, status, code, details) in cases {
        let (got_status, got) = ofrep_raw(&path, body.as_bytes());
        let key = path.rsplit('/').next().unwrap().split('?').next().unwrap();
        let key = plateau_sdk::percent_decode(key);
        assert_eq!(got_status, status, "{path} {body}: {got}");
        assert_eq!(
            (&got["key"], &got["errorCode"]),
            (&json!(key), &json!(code)),
            "{path} {body}"
        );
        let got_details = got["errorDetails"].as_str().unwrap();
        assert!(
            got_details.starts_with(details),
            "{path} {body}: {got_details}"
        );
        assert!(
            got.get("value").is_none() && got.get("reason").is_none(),
            "{got}"
        );
    }
}

#[test]
fn auth_failures_stay_problem_documents() {
    let req = request(Method::Post, &format!("{BULK}/x"), caller(&["flags:read"]))
        .with_json(&json!({"context": {}}));
    let res = testing::handle::<FlagsPlugin>(&req);
    assert_eq!(res.status, 403);
    assert_eq!(
        res.problem().unwrap().scope.as_deref(),
        Some("flags:evaluate")
    );
}

#[test]
fn bulk_evaluates_every_flag_with_an_etag() {
    save_flag(
        "a-static",
        &json!({"state": "ENABLED", "variants": {"on": true}, "defaultVariant": "on"}),
    );
    save_flag("b-broken", &bool_flag(json!({"cat": ["x"]})));
    save_flag(
        "c-disabled",
        &json!({"state": "DISABLED", "variants": {"on": true}, "defaultVariant": "on"}),
    );
    save_flag("d-split", &rollout([0, 1]));
    save_flag("other-env?environment=staging", &bool_flag(Value::Null));

    let res = bulk(BULK, &json!({"plan": "pro"}), None);
    assert_eq!(res.status, 200);
    assert_eq!(
        json(&res),
        json!({"flags": [
            {"key": "a-static", "value": true, "reason": "STATIC", "variant": "on", "metadata": {}},
            {"key": "b-broken", "errorCode": "GENERAL",
             "errorDetails": "targeting returned \"x\", which is not one of the variants: off, on"},
            {"key": "c-disabled", "reason": "DISABLED", "metadata": {}},
            {"key": "d-split", "errorCode": "TARGETING_KEY_MISSING",
             "errorDetails": "flag d-split splits traffic by targetingKey: add a non-empty targetingKey to the context"},
        ]})
    );
    let etag = res
        .header("etag")
        .expect("bulk answers carry an ETag")
        .to_owned();

    // Polling with the ETag: 304 without a body while nothing the client sees changed.
    let again = bulk(BULK, &json!({"plan": "pro"}), Some(&etag));
    assert_eq!((again.status, again.body.len()), (304, 0));
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    // Another context, or a changed flag, is a new answer with a new ETag.
    let keyed = bulk(BULK, &json!({"targetingKey": "u1"}), Some(&etag));
    assert_eq!(keyed.status, 200);
    assert_eq!(json(&keyed)["flags"][3]["value"], false);
    save_flag(
        "a-static",
        &json!({"state": "ENABLED", "variants": {"on": false}, "defaultVariant": "on"}),
    );
    let changed = bulk(BULK, &json!({"plan": "pro"}), Some(&etag));
    assert_eq!(changed.status, 200);
    assert_ne!(changed.header("etag"), Some(etag.as_str()));

    let staging = json(&bulk(
        &format!("{BULK}?environment=staging"),
        &json!({}),
        None,
    ));
    assert_eq!(staging["flags"].as_array().unwrap().len(), 1);
    let empty = json(&bulk(&format!("{BULK}?environment=dev"), &json!({}), None));
    assert_eq!(empty, json!({"flags": []}));
}

#[test]
fn bulk_request_errors_have_no_key() {
    // (raw body, query, errorCode, errorDetails)
    let cases = [
        (
            r#"{"context": "x"}"#,
            "",
            "INVALID_CONTEXT",
            "context must be a JSON object, not \"x\"",
        ),
        (
            r#"{"context": {"targetingKey": true}}"#,
            "",
            "INVALID_CONTEXT",
            "targetingKey must be a string, not true",
        ),
        (
            "{}",
            "?environment=a_b",
            "GENERAL",
            "environment must be 1 to 32 of a-z, 0-9 and -",
        ),
    ];
    for (body, query, code, details) in cases {
        let (status, got) = ofrep_raw(&format!("{BULK}{query}"), body.as_bytes());
        assert_eq!(status, 400, "{body}");
        assert_eq!(
            got,
            json!({"errorCode": code, "errorDetails": details}),
            "{body}"
        );
    }
}

#[test]
fn an_environment_in_the_path_serves_providers_that_take_only_a_base_url() {
    save_flag(
        "theme",
        &json!({"state": "ENABLED", "variants": {"dark": "dark", "light": "light"}, "defaultVariant": "light"}),
    );
    save_flag(
        "theme?environment=staging",
        &json!({"state": "ENABLED", "variants": {"dark": "dark", "light": "light"}, "defaultVariant": "dark"}),
    );
    let base = "/flags/environments/staging/ofrep/v1/evaluate/flags";
    let (status, body) = ofrep_raw(&format!("{base}/theme"), br#"{"context": {}}"#);
    assert_eq!((status, &body["value"]), (200, &json!("dark")));
    let all = json(&bulk(base, &json!({}), None));
    assert_eq!(all["flags"][0]["value"], "dark");
    let (status, body) = ofrep_raw(&format!("{base}/theme?environment=production"), b"{}");
    assert_eq!((status, &body["errorCode"]), (400, &json!("GENERAL")));
}
