//! The built-in webhooks plugin over HTTP, against sinks in the test: a
//! project created through the API reaches the endpoints that subscribe to
//! `project.*`, signed so that the Standard Webhooks reference library
//! (`standardwebhooks`, PyPI) verifies it, also with both secrets during a
//! rotation; a sink failing its first attempts gets retries with the same
//! message id; one that never answers well disables its endpoint with an
//! event after the last retry; replay of one delivery and of every failed
//! one since a time; validation, scopes and tenant isolation. One server on
//! SQLite, with a retry schedule of 1 s, 1 s (`retrySchedule` in the
//! plugin's configuration).

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::{Value, json};

use crate::standard_webhooks::Signed;
use crate::{create_org, mint, start_with};

/// One request a sink received: its webhook headers and body.
#[derive(Clone, Debug)]
struct Received {
    id: String,
    timestamp: String,
    signature: String,
    body: String,
}

#[derive(Default)]
struct Sinks {
    received: HashMap<String, Vec<Received>>,
    /// How many more requests each sink answers 500.
    fail_next: HashMap<String, usize>,
    /// Sinks that answer 503 until taken out.
    down: HashSet<String>,
}

type Shared = Arc<Mutex<Sinks>>;

async fn receive(
    State(sinks): State<Shared>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: String,
) -> (StatusCode, &'static str) {
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let mut sinks = sinks.lock().unwrap();
    sinks
        .received
        .entry(name.clone())
        .or_default()
        .push(Received {
            id: header("webhook-id"),
            timestamp: header("webhook-timestamp"),
            signature: header("webhook-signature"),
            body,
        });
    if sinks.down.contains(&name) {
        return (StatusCode::SERVICE_UNAVAILABLE, "down");
    }
    if let Some(n) = sinks.fail_next.get_mut(&name)
        && *n > 0
    {
        *n -= 1;
        return (StatusCode::INTERNAL_SERVER_ERROR, "not yet");
    }
    (StatusCode::OK, "thanks")
}

async fn sinks() -> (SocketAddr, Shared) {
    let shared: Shared = Arc::default();
    let app = Router::new()
        .route("/{name}", post(receive))
        .with_state(shared.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, shared)
}

fn received(sinks: &Shared, name: &str) -> Vec<Received> {
    sinks
        .lock()
        .unwrap()
        .received
        .get(name)
        .cloned()
        .unwrap_or_default()
}

/// Polls until `done` holds for what `path` answers (deliveries run on the
/// plugin's jobs, retries a second apart); the JSON.
async fn wait_for(c: &Client, path: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    let mut last = Value::Null;
    for _ in 0..600 {
        let r = c.get(path).await;
        assert_eq!(r.status, 200, "{}", r.text());
        last = r.json();
        if done(&last) {
            eprintln!("{what}: {:.1} s", started.elapsed().as_secs_f64());
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("waited for {what} on {path}; last saw {last}");
}

/// Verifies each `(secret, request)` with the `standardwebhooks` library;
/// one `ok` or `bad` per case.
async fn verify(cases: &[(&str, &Received)]) -> Vec<String> {
    let cases: Vec<_> = cases
        .iter()
        .map(|(secret, r)| (*secret, r.signed()))
        .collect();
    crate::standard_webhooks::verify(&cases, true).await
}

impl Received {
    fn signed(&self) -> Signed<'_> {
        Signed {
            id: &self.id,
            timestamp: &self.timestamp,
            signature: &self.signature,
            body: &self.body,
        }
    }
}

async fn create(c: &Client, body: Value) -> Value {
    let r = c.post("/webhooks", body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

async fn deliveries(c: &Client, id: &str) -> Vec<Value> {
    let page = c.get(&format!("/webhooks/{id}/deliveries")).await;
    assert_eq!(page.status, 200, "{}", page.text());
    page.json()["items"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn webhooks_are_signed_retried_disabled_and_replayed() {
    let (addr, sinks) = sinks().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("plugins.json");
    let plugins = json!({ "plugins": { "webhooks": {
        "grants": ["kv", "events", "log", "config", "clock", "cursors", "scheduler", "http", "secrets"],
        "outboundHosts": ["*"],
        "config": { "retrySchedule": "1,1" },
    } } });
    std::fs::write(&config, plugins.to_string()).unwrap();
    let s = start_with(
        ServerOptions::new(Backend::Sqlite)
            .env("PLATEAU_EGRESS_ALLOW", "127.0.0.0/8")
            .env("PLATEAU_PLUGINS_CONFIG", config.to_str().unwrap()),
    )
    .await;
    // A pro organisation, whose plan allows the four endpoints below.
    let c = s.client().with_token(&create_org(&s, "hooks", "pro").await);
    let sink = |name: &str| format!("http://{addr}/{name}");

    // Bad input names each field.
    let r = c
        .post(
            "/webhooks",
            json!({ "url": "ftp://x", "eventTypes": ["project.*", "Bad Type"] }),
        )
        .await;
    assert_eq!((r.status, r.code().as_str()), (400, "validation_failed"));
    let fields: Vec<String> = r.json()["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap().to_owned())
        .collect::<Vec<_>>();
    assert_eq!(fields, ["url", "eventTypes[1]"], "{}", r.text());

    // ok answers at once, flaky fails twice, down until it is taken out.
    sinks.lock().unwrap().fail_next.insert("flaky".into(), 2);
    sinks.lock().unwrap().down.insert("down".into());
    let ok = create(
        &c,
        json!({ "url": sink("ok"), "eventTypes": ["project.*"] }),
    )
    .await;
    let secret = ok["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{ok}");
    let ok_id = ok["id"].as_str().unwrap().to_owned();
    let flaky = create(
        &c,
        json!({ "url": sink("flaky"), "eventTypes": ["project.created"] }),
    )
    .await;
    let flaky_id = flaky["id"].as_str().unwrap().to_owned();
    let down = create(
        &c,
        json!({ "url": sink("down"), "eventTypes": ["project.created"] }),
    )
    .await;
    let down_id = down["id"].as_str().unwrap().to_owned();
    let apps = create(&c, json!({ "url": sink("apps"), "eventTypes": ["app.*"] })).await;
    let apps_id = apps["id"].as_str().unwrap().to_owned();
    // The secret is shown once.
    let got = c.get(&format!("/webhooks/{ok_id}")).await.json();
    assert!(
        got.get("secret").is_none() && got["status"] == "enabled",
        "{got}"
    );

    // A real event: a project made through the API.
    let before = down["createdAt"].as_str().unwrap().to_owned();
    let r = c.post("/projects", json!({ "name": "hooked" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let project_id = r.json()["id"].as_str().unwrap().to_owned();

    let log = wait_for(
        &c,
        &format!("/webhooks/{ok_id}/deliveries"),
        "the first delivery",
        |p| {
            p["items"]
                .as_array()
                .is_some_and(|i| i.iter().any(|d| d["status"] == "succeeded"))
        },
    )
    .await;
    let first = &log["items"][0];
    assert_eq!(first["eventType"], "project.created", "{first}");
    assert_eq!(first["statusCode"], 200);
    assert!(first["latencyMs"].is_u64(), "{first}");
    assert_eq!(first["attemptLog"][0]["responseBody"], "thanks");
    assert!(
        first["attemptLog"][0]["responseHeaders"].is_object(),
        "{first}"
    );
    let hit = received(&sinks, "ok");
    assert_eq!(hit.len(), 1, "{hit:?}");
    let body: Value = serde_json::from_str(&hit[0].body).unwrap();
    assert_eq!(body["type"], "project.created");
    assert_eq!(body["data"]["resourceId"], project_id.as_str());
    assert_eq!(hit[0].id, first["id"].as_str().unwrap());

    // The reference library verifies it; another secret or another body does not.
    let mut tampered = hit[0].clone();
    tampered.body = tampered.body.replace("hooked", "hacked");
    let other = flaky["secret"].as_str().unwrap();
    assert_eq!(
        verify(&[(&secret, &hit[0]), (other, &hit[0]), (&secret, &tampered)]).await,
        ["ok", "bad", "bad"]
    );

    // The flaky sink got three attempts with one message id, the last one good.
    let flaky_log = wait_for(
        &c,
        &format!("/webhooks/{flaky_id}/deliveries"),
        "the retried delivery",
        |p| p["items"][0]["status"] == "succeeded",
    )
    .await;
    assert_eq!(flaky_log["items"][0]["attempts"], 3, "{flaky_log}");
    let attempts = &flaky_log["items"][0]["attemptLog"];
    assert_eq!(
        (
            attempts[0]["statusCode"].as_u64(),
            attempts[1]["statusCode"].as_u64(),
            attempts[2]["statusCode"].as_u64()
        ),
        (Some(200), Some(500), Some(500)),
        "{flaky_log}"
    );
    let flaky_hits = received(&sinks, "flaky");
    assert_eq!(flaky_hits.len(), 3);
    assert!(flaky_hits.iter().all(|h| h.id == flaky_hits[0].id));
    let flaky_secret = flaky["secret"].as_str().unwrap();
    assert_eq!(verify(&[(flaky_secret, &flaky_hits[2])]).await, ["ok"]);

    // The sink that stays down: three attempts, then its endpoint is disabled
    // with an event.
    let down_now = wait_for(
        &c,
        &format!("/webhooks/{down_id}"),
        "the endpoint disabled",
        |e| e["status"] == "disabled",
    )
    .await;
    assert!(
        down_now["disabledReason"]
            .as_str()
            .unwrap()
            .contains("failed 3 attempts"),
        "{down_now}"
    );
    let failed = deliveries(&c, &down_id).await;
    assert_eq!(
        (failed.len(), &failed[0]["status"]),
        (1, &json!("failed")),
        "{failed:?}"
    );
    let events = wait_for(
        &c,
        "/events?type=webhooks.endpoint.disabled",
        "the disabled event",
        |p| p["items"].as_array().is_some_and(|i| !i.is_empty()),
    )
    .await;
    assert_eq!(
        events["items"][0]["resourceId"],
        down_id.as_str(),
        "{events}"
    );
    // The app.* endpoint heard nothing of a project.
    assert!(deliveries(&c, &apps_id).await.is_empty());

    // Rotation: a new secret shown once, both signing during the window.
    let r = c
        .post(
            &format!("/webhooks/{ok_id}/rotate-secret"),
            json!({ "graceSeconds": 3600 }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let rotated = r.json();
    let new_secret = rotated["secret"].as_str().unwrap().to_owned();
    assert!(new_secret.starts_with("whsec_") && new_secret != secret);
    assert!(rotated["previousSecretExpiresAt"].is_string(), "{rotated}");
    let r = c.post("/projects", json!({ "name": "rotated" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    wait_for(
        &c,
        &format!("/webhooks/{ok_id}/deliveries"),
        "the second delivery",
        |p| {
            p["items"]
                .as_array()
                .is_some_and(|i| i.len() == 2 && i[0]["status"] == "succeeded")
        },
    )
    .await;
    let hit = received(&sinks, "ok");
    assert_eq!(hit[1].signature.split(' ').count(), 2, "{:?}", hit[1]);
    assert_eq!(
        verify(&[(&secret, &hit[1]), (&new_secret, &hit[1])]).await,
        ["ok", "ok"]
    );
    // The disabled endpoint got nothing of the second project.
    assert_eq!(deliveries(&c, &down_id).await.len(), 1);

    // Replay one delivery: the same message again.
    let first_id = first["id"].as_str().unwrap();
    let r = c
        .post(
            &format!("/webhooks/{ok_id}/deliveries/{first_id}/replay"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text());
    wait_for(
        &c,
        &format!("/webhooks/{ok_id}/deliveries/{first_id}"),
        "the replay",
        |d| d["status"] == "succeeded" && d["attempts"] == 2,
    )
    .await;
    let hit = received(&sinks, "ok");
    assert_eq!((hit.len(), hit[2].id.as_str()), (3, first_id));

    // Replay every failed one since a time: refused while disabled, then
    // delivered once the sink is up and the endpoint enabled.
    let replay_path = format!("/webhooks/{down_id}/replay");
    let r = c.post(&replay_path, json!({ "since": before })).await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "conflict"),
        "{}",
        r.text()
    );
    let r = c.post(&replay_path, json!({ "since": "yesterday" })).await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["errors"][0]["field"], "since", "{}", r.text());
    sinks.lock().unwrap().down.clear();
    let r = c
        .patch(&format!("/webhooks/{down_id}"), json!({ "enabled": true }))
        .await;
    assert_eq!(
        (r.status, &r.json()["status"]),
        (200, &json!("enabled")),
        "{}",
        r.text()
    );
    let r = c.post(&replay_path, json!({ "since": before })).await;
    assert_eq!(
        (r.status, &r.json()["replayed"]),
        (202, &json!(1)),
        "{}",
        r.text()
    );
    let replayed = wait_for(
        &c,
        &format!("/webhooks/{down_id}/deliveries"),
        "the replayed failures",
        |p| p["items"][0]["status"] == "succeeded",
    )
    .await;
    assert_eq!(replayed["items"][0]["attemptLog"][0]["trigger"], "replay");

    // Scopes and tenants.
    let reader = s
        .client()
        .with_token(&mint(&s, json!({ "scopes": ["webhooks:read"] })).await);
    assert_eq!(reader.get("/webhooks").await.status, 200);
    let r = reader
        .post(
            "/webhooks",
            json!({ "url": sink("ok"), "eventTypes": ["*"] }),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text());
    // The first organisation, on the free plan.
    let stranger = s.client();
    assert_eq!(
        stranger.get(&format!("/webhooks/{ok_id}")).await.status,
        404
    );
    assert_eq!(stranger.get("/webhooks").await.json()["items"], json!([]));
    // The free plan allows two endpoints.
    let r = stranger
        .post(
            "/webhooks",
            json!({ "url": sink("x"), "eventTypes": ["*"] }),
        )
        .await;
    assert_eq!(r.status, 201);
    let r = stranger
        .post(
            "/webhooks",
            json!({ "url": sink("x"), "eventTypes": ["*"] }),
        )
        .await;
    assert_eq!(r.status, 201);
    let r = stranger
        .post(
            "/webhooks",
            json!({ "url": sink("x"), "eventTypes": ["*"] }),
        )
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "plan_limit_reached"),
        "{}",
        r.text()
    );
}
