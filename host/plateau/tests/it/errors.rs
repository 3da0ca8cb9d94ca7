//! Section 7: one problem body on every error.

use plateau_testkit::Backend;
use reqwest::Method;
use serde_json::json;

use plateau_testkit::ServerOptions;

use crate::start_with;

crate::on_both_backends!(every_error_is_a_problem);

async fn every_error_is_a_problem(backend: Backend) {
    // A small body limit, so that the oversized body below fits in the
    // socket buffers and the client has sent it all when the 413 comes.
    let s = start_with(ServerOptions::new(backend).env("PLATEAU_MAX_BODY_BYTES", "4096")).await;
    let c = s.client();
    let check = |r: &plateau_testkit::Response, status: u16, code: &str| {
        assert_eq!(r.status, status, "{}", r.text());
        assert_eq!(r.header("content-type"), Some("application/problem+json"));
        let p = r.json();
        assert_eq!(p["status"], status);
        assert_eq!(p["code"], code);
        assert!(p["type"].as_str().unwrap().ends_with(code));
        assert!(!p["title"].as_str().unwrap().is_empty());
        assert!(!p["detail"].as_str().unwrap().is_empty());
        assert!(r.header("x-request-id").is_some());
    };
    check(&c.get("/nothing-here").await, 404, "not_found");
    let r = c.request(Method::PATCH, "/me").send().await;
    check(&r, 405, "method_not_allowed");
    assert!(r.header("allow").unwrap().contains("GET"));
    let big = format!(r#"{{"name": "{}"}}"#, "a".repeat(64 * 1024));
    check(
        &c.request(Method::POST, "/projects")
            .body("application/json", big)
            .send()
            .await,
        413,
        "payload_too_large",
    );
    check(
        &c.request(Method::POST, "/projects")
            .body("text/plain", "name=x")
            .send()
            .await,
        415,
        "unsupported_media_type",
    );
    check(
        &c.request(Method::POST, "/projects")
            .body("application/json", "{\"name\": ")
            .send()
            .await,
        400,
        "invalid_json",
    );
    // White space sent as JSON is not JSON (an absent body reads as `{}`).
    check(
        &c.request(Method::POST, "/projects")
            .body("application/json", " ")
            .send()
            .await,
        400,
        "invalid_json",
    );
    let r = c.post("/projects", json!({})).await;
    check(&r, 400, "validation_failed");
    assert_eq!(r.json()["errors"][0]["field"], "name");
    let r = c.post("/projects", json!({ "name": 42 })).await;
    assert_eq!(r.json()["errors"][0]["field"], "name");
    let r = c
        .post("/projects", json!({ "name": "ok", "colour": "red" }))
        .await;
    check(&r, 400, "validation_failed");
    assert_eq!(r.json()["errors"][0]["field"], "colour");
    let r = c.post("/projects", json!({ "name": "   " })).await;
    assert_eq!(r.json()["errors"][0]["field"], "name");
    let r = c
        .put("/notifications/preferences", json!({ "category": "spend" }))
        .await;
    assert_eq!(r.json()["errors"][0]["field"], "emailEnabled");
    check(&c.get("/projects/prj_nope").await, 404, "not_found");
}
