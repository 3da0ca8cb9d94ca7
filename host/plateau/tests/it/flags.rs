//! The built-in flags plugin over HTTP: management and OFREP evaluation,
//! as an OpenFeature OFREP provider calls it.

use plateau_testkit::Backend;
use reqwest::Method;
use serde_json::json;

use crate::start;

crate::on_both_backends!(flags_manage_and_evaluate_over_ofrep);

async fn flags_manage_and_evaluate_over_ofrep(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    let flag = json!({
        "state": "ENABLED",
        "variants": { "on": true, "off": false },
        "defaultVariant": "off",
        "targeting": { "if": [{ "ends_with": [{ "var": "email" }, "@example.com"] }, "on", null] },
    });
    let r = c.put("/flags/new-checkout", flag.clone()).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(c.put("/flags/new-checkout", flag).await.status, 200);
    let r = c
        .put(
            "/flags/broken",
            json!({ "state": "ENABLED", "variants": { "a": 1 }, "defaultVariant": "b" }),
        )
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "validation_failed"),
        "{}",
        r.text()
    );
    assert_eq!(r.json()["errors"][0]["field"], "defaultVariant");
    let list = c.get("/flags?limit=10").await.json();
    assert_eq!(list["total"], 1);
    // An OFREP provider's token carries flags:evaluate and nothing else.
    let sdk = s
        .anonymous()
        .with_token(&crate::mint(&s, json!({ "scopes": ["flags:evaluate"] })).await);
    let eval = |key: &'static str, ctx: serde_json::Value| {
        sdk.request(
            Method::POST,
            &format!("/flags/ofrep/v1/evaluate/flags/{key}"),
        )
        .json(&json!({ "context": ctx }))
        .send()
    };
    let r = eval(
        "new-checkout",
        json!({ "targetingKey": "u1", "email": "ann@example.com" }),
    )
    .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let body = r.json();
    assert_eq!(
        (
            body["value"].clone(),
            body["variant"].as_str(),
            body["reason"].as_str()
        ),
        (json!(true), Some("on"), Some("TARGETING_MATCH"))
    );
    let r = eval(
        "new-checkout",
        json!({ "targetingKey": "u2", "email": "bob@other.org" }),
    )
    .await;
    assert_eq!(
        (r.json()["value"].clone(), r.json()["reason"].as_str()),
        (json!(false), Some("DEFAULT"))
    );
    // OFREP errors keep OFREP's shape, not the problem shape.
    let r = eval("missing", json!({})).await;
    assert_eq!(r.status, 404);
    assert_eq!(
        (r.json()["key"].as_str(), r.json()["errorCode"].as_str()),
        (Some("missing"), Some("FLAG_NOT_FOUND"))
    );
    let r = sdk
        .request(Method::POST, "/flags/ofrep/v1/evaluate/flags/new-checkout")
        .json(&json!({ "context": [1] }))
        .send()
        .await;
    assert_eq!(
        (r.status, r.json()["errorCode"].as_str()),
        (400, Some("INVALID_CONTEXT"))
    );
    let bulk = sdk
        .request(Method::POST, "/flags/ofrep/v1/evaluate/flags")
        .json(&json!({ "context": { "targetingKey": "u1" } }))
        .send()
        .await;
    assert_eq!(bulk.status, 200, "{}", bulk.text());
    assert_eq!(bulk.json()["flags"][0]["key"], "new-checkout");
    // The evaluation token cannot manage flags.
    let r = sdk.get("/flags").await;
    assert_eq!(
        (r.status, r.json()["scope"].as_str()),
        (403, Some("flags:read"))
    );
    // Flag changes are audited in the organisation's log.
    let audit = c.get("/audit?resourceType=flag").await.json();
    assert_eq!(audit["total"], 2, "{audit}");
}
