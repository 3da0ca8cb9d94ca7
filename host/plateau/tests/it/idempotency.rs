//! Section 1.1: Idempotency-Key.

use plateau_testkit::Backend;
use reqwest::Method;
use serde_json::json;

use crate::start;

crate::on_both_backends!(
    replays_byte_for_byte,
    refusals_and_scoping,
    concurrent_retries_create_once,
    replays_survive_a_restart
);

async fn project_count(s: &plateau_testkit::Server, name: &str) -> usize {
    let list = s.client().get("/projects").await.json();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == name)
        .count()
}

async fn replays_byte_for_byte(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    let first = c
        .request(Method::POST, "/projects")
        .idempotency_key("key-1")
        .json(&json!({ "name": "web" }))
        .send()
        .await;
    assert_eq!(first.status, 201);
    assert_eq!(first.header("idempotent-replayed"), None);
    let again = c
        .request(Method::POST, "/projects")
        .idempotency_key("key-1")
        .json(&json!({ "name": "web" }))
        .send()
        .await;
    assert_eq!(again.status, 201);
    assert_eq!(again.bytes, first.bytes, "the replay is byte for byte");
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.header("content-type"), first.header("content-type"));
    assert_eq!(project_count(&s, "web").await, 1);
    // Without a key the same request runs again (and here conflicts on the name).
    let r = c.post("/projects", json!({ "name": "web" })).await;
    assert_eq!((r.status, r.code().as_str()), (409, "name_taken"));
    // DELETE is idempotent too.
    let id = first.json()["id"].as_str().unwrap().to_owned();
    let d1 = c
        .request(Method::DELETE, &format!("/projects/{id}"))
        .idempotency_key("del-1")
        .send()
        .await;
    let d2 = c
        .request(Method::DELETE, &format!("/projects/{id}"))
        .idempotency_key("del-1")
        .send()
        .await;
    assert_eq!((d1.status, d2.status), (200, 200));
    assert_eq!(d1.bytes, d2.bytes);
}

async fn refusals_and_scoping(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    let post = |key: &str, name: &str| {
        c.request(Method::POST, "/projects")
            .idempotency_key(key)
            .json(&json!({ "name": name }))
            .send()
    };
    assert_eq!(post("k", "one").await.status, 201);
    let r = post("k", "two").await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (422, "idempotency_key_reused")
    );
    let long = "x".repeat(256);
    let r = post(&long, "three").await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "invalid_idempotency_key")
    );
    assert_eq!(post(&"y".repeat(255), "three").await.status, 201);
    // A 4xx changes nothing and releases the key for a corrected retry.
    let r = post("fix-me", "").await;
    assert_eq!(r.status, 400);
    assert_eq!(post("fix-me", "fixed").await.status, 201);
    // Keys are scoped to the token: another token's same key is its own.
    let other = crate::mint(&s, json!({ "scopes": ["projects:write", "projects:read"] })).await;
    let r = s
        .anonymous()
        .with_token(&other)
        .request(Method::POST, "/projects")
        .idempotency_key("k")
        .json(&json!({ "name": "four" }))
        .send()
        .await;
    assert_eq!(r.status, 201);
    assert_eq!(r.header("idempotent-replayed"), None);
    // ... and to the path: the same key on another endpoint runs.
    let r = c
        .request(Method::POST, "/tokens")
        .idempotency_key("k")
        .json(&json!({ "name": "t" }))
        .send()
        .await;
    assert_eq!(r.status, 201);
    assert_eq!(r.header("idempotent-replayed"), None);
}

async fn concurrent_retries_create_once(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    let attempts = (0..12).map(|_| {
        let c = c.clone();
        async move {
            c.request(Method::POST, "/projects")
                .idempotency_key("race")
                .json(&json!({ "name": "raced" }))
                .send()
                .await
        }
    });
    let responses = futures::future::join_all(attempts).await;
    let mut created = std::collections::BTreeSet::new();
    for r in &responses {
        match r.status {
            201 => {
                created.insert(r.json()["id"].as_str().unwrap().to_owned());
            }
            409 => assert_eq!(r.code(), "idempotency_in_progress"),
            other => panic!("unexpected {other}: {}", r.text()),
        }
    }
    assert_eq!(created.len(), 1, "every 201 carries the same project");
    assert_eq!(project_count(&s, "raced").await, 1, "exactly one creation");
    let after = c
        .request(Method::POST, "/projects")
        .idempotency_key("race")
        .json(&json!({ "name": "raced" }))
        .send()
        .await;
    assert_eq!(after.status, 201);
    assert_eq!(after.header("idempotent-replayed"), Some("true"));
}

async fn replays_survive_a_restart(backend: Backend) {
    let mut s = start(backend).await;
    let send = |c: plateau_testkit::Client| async move {
        c.request(Method::POST, "/projects")
            .idempotency_key("durable")
            .json(&json!({ "name": "kept" }))
            .send()
            .await
    };
    let first = send(s.client()).await;
    assert_eq!(first.status, 201);
    s.restart().await;
    let again = send(s.client()).await;
    assert_eq!(again.bytes, first.bytes);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(project_count(&s, "kept").await, 1);
}
