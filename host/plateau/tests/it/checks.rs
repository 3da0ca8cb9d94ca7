//! The built-in checks plugin against real HTTP servers started by the test:
//! a target that goes up, slow, down or answers the wrong JSON, and a
//! webhook receiver that verifies Standard Webhooks signatures. The host
//! runs on a manual clock moved by `/admin/clock`, so each interval is one
//! call and nothing sleeps for minutes.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use plateau_sdk::webhooks;
use plateau_testkit::{Backend, Client, Server, ServerOptions};
use serde_json::{Value, json};

use crate::plugins::admin;
use crate::{advance, create_org, event_types, mint, start_with, until};

crate::on_both_backends!(
    states_change_with_retries_and_alert_once_per_change,
    assertions_are_explained_and_run_now_answers_the_result,
    plans_validation_isolation_and_heartbeats,
    a_running_check_is_not_claimed_again_when_the_clock_jumps,
);

const MINUTE: u64 = 60_000;

fn options(backend: Backend) -> ServerOptions {
    ServerOptions::new(backend)
        .env("PLATEAU_CLOCK", "manual")
        .env("PLATEAU_EGRESS_ALLOW", "127.0.0.0/8")
}

/// How the target answers `GET /health`.
#[derive(Clone, Copy, Debug)]
enum Mode {
    Up,
    Slow(u64),
    Down,
    WrongJson,
}

/// One webhook request as received.
#[derive(Clone, Debug)]
struct Received {
    id: String,
    timestamp: u64,
    signature: String,
    body: Vec<u8>,
}

impl Received {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

#[derive(Default)]
struct Remote {
    mode: Option<Mode>,
    /// Statuses the receiver answers in turn before answering 204.
    hook_failures: Vec<u16>,
    hooks: Vec<Received>,
    /// Requests of `GET /health` received so far.
    health_calls: usize,
}

/// The target and the receiver, on one local server.
#[derive(Clone)]
struct Servers {
    addr: SocketAddr,
    state: Arc<Mutex<Remote>>,
}

impl Servers {
    async fn start() -> Servers {
        let state = Arc::new(Mutex::new(Remote {
            mode: Some(Mode::Up),
            ..Remote::default()
        }));
        let target = state.clone();
        let receiver = state.clone();
        let app = Router::new()
            .route(
                "/health",
                get(move || {
                    let state = target.clone();
                    async move {
                        let mode = {
                            let mut s = state.lock().unwrap();
                            s.health_calls += 1;
                            s.mode.unwrap_or(Mode::Up)
                        };
                        let ok = json!({"data": {"items": [{"id": "a1"}]}}).to_string();
                        match mode {
                            Mode::Up => (StatusCode::OK, ok).into_response(),
                            Mode::Slow(ms) => {
                                tokio::time::sleep(Duration::from_millis(ms)).await;
                                (StatusCode::OK, ok).into_response()
                            }
                            Mode::Down => (StatusCode::SERVICE_UNAVAILABLE, "down").into_response(),
                            Mode::WrongJson => {
                                let body = json!({"data": {"items": [{"id": "zz"}]}}).to_string();
                                (StatusCode::OK, body).into_response()
                            }
                        }
                    }
                }),
            )
            .route(
                "/hook",
                post(move |headers: HeaderMap, body: axum::body::Bytes| {
                    let state = receiver.clone();
                    async move {
                        let header = |n: &str| {
                            headers
                                .get(n)
                                .and_then(|v| v.to_str().ok())
                                .unwrap_or_default()
                                .to_owned()
                        };
                        let mut s = state.lock().unwrap();
                        s.hooks.push(Received {
                            id: header("webhook-id"),
                            timestamp: header("webhook-timestamp").parse().unwrap_or(0),
                            signature: header("webhook-signature"),
                            body: body.to_vec(),
                        });
                        if s.hook_failures.is_empty() {
                            StatusCode::NO_CONTENT
                        } else {
                            StatusCode::from_u16(s.hook_failures.remove(0)).unwrap()
                        }
                    }
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Servers { addr, state }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    fn set(&self, mode: Mode) {
        self.state.lock().unwrap().mode = Some(mode);
    }

    fn hooks(&self) -> Vec<Received> {
        self.state.lock().unwrap().hooks.clone()
    }

    fn health_calls(&self) -> usize {
        self.state.lock().unwrap().health_calls
    }
}

/// Waits for the check's `runs`-th result; the check.
async fn after_run(c: &Client, id: &str, runs: u64) -> Value {
    until(c, &format!("/checks/{id}"), &format!("run {runs}"), |v| {
        v["runs"].as_u64() >= Some(runs)
    })
    .await
}

async fn wait_for_hooks(servers: &Servers, n: usize) -> Vec<Received> {
    for _ in 0..200 {
        let hooks = servers.hooks();
        if hooks.len() >= n {
            return hooks;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("expected {n} webhook requests, got {:?}", servers.hooks());
}

async fn paid_client(s: &Server) -> Client {
    s.anonymous()
        .with_token(&create_org(s, "Paid Inc", "pro").await)
}

async fn states_change_with_retries_and_alert_once_per_change(backend: Backend) {
    let s = start_with(options(backend)).await;
    let admin = admin(&s).await;
    let c = paid_client(&s).await;
    let servers = Servers::start().await;
    // The receiver fails the first delivery: it is retried under the same id.
    servers.state.lock().unwrap().hook_failures = vec![500];
    let r = c
        .post(
            "/checks",
            json!({
                "name": "Home page", "kind": "url", "url": servers.url("/health"),
                "intervalSeconds": 60, "retries": 1, "timeoutMs": 3000, "degradedAfterMs": 400,
                "alerts": {"emails": ["ops@example.com"], "webhookUrl": servers.url("/hook")},
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let created = r.json();
    let id = created["id"].as_str().unwrap().to_owned();
    let secret = created["alerts"]["webhookSecret"]
        .as_str()
        .unwrap()
        .to_owned();
    let check = c.get(&format!("/checks/{id}")).await.json();
    assert_eq!(check["alerts"].get("webhookSecret"), None);

    // The first run is due at once: up, no alert.
    let check = after_run(&c, &id, 1).await;
    assert_eq!(check["status"], "up");
    let first = &check["lastResult"];
    assert_eq!(
        (first["outcome"].clone(), first["statusCode"].clone()),
        (json!("ok"), json!(200))
    );
    assert!(
        first["latencyMs"].is_u64() && first["connectMs"].is_u64(),
        "{first}"
    );
    assert_eq!(first["scheduledFor"], first["startedAt"]);

    // Down: the first failure is retried, the second declares it.
    servers.set(Mode::Down);
    advance(&admin, MINUTE).await;
    let check = after_run(&c, &id, 2).await;
    assert_eq!(
        (
            check["status"].clone(),
            check["consecutiveFailures"].clone()
        ),
        (json!("up"), json!(1))
    );
    advance(&admin, MINUTE).await;
    let check = after_run(&c, &id, 3).await;
    assert_eq!(check["status"], "down");
    assert_eq!(check["lastResult"]["failure"]["reason"], "status");
    assert_eq!(
        check["lastResult"]["message"],
        "status 503 is not among the expected 200-299"
    );
    // The webhook: first attempt refused, the next 10 s later.
    wait_for_hooks(&servers, 1).await;
    let alert = until(
        &c,
        &format!("/checks/{id}/alerts"),
        "a failed attempt",
        |v| v["items"][0]["webhook"]["attempts"] == 1,
    )
    .await;
    assert_eq!(alert["items"][0]["webhook"]["state"], "pending");
    advance(&admin, 10_000).await;
    let hooks = wait_for_hooks(&servers, 2).await;
    assert_eq!(hooks[0].id, hooks[1].id);
    // Still down a minute later: no new alert.
    advance(&admin, MINUTE).await;
    after_run(&c, &id, 4).await;

    // Slow: degraded. Then up again.
    servers.set(Mode::Slow(700));
    advance(&admin, MINUTE).await;
    let check = after_run(&c, &id, 5).await;
    assert_eq!(check["status"], "degraded");
    assert!(
        check["lastResult"]["message"]
            .as_str()
            .unwrap()
            .contains("over the degraded threshold of 400 ms"),
        "{check}"
    );
    assert!(check["lastResult"]["latencyMs"].as_u64().unwrap() >= 700);
    servers.set(Mode::Up);
    advance(&admin, MINUTE).await;
    let check = after_run(&c, &id, 6).await;
    assert_eq!(check["status"], "up");
    let hooks = wait_for_hooks(&servers, 4).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let hooks_now = servers.hooks();
    assert_eq!(
        hooks_now.len(),
        hooks.len(),
        "no more webhooks than changes"
    );

    // Exactly one delivered webhook per change, each signed.
    let mut kinds = Vec::new();
    let mut ids = Vec::new();
    for hook in &hooks {
        assert!(
            webhooks::verify(
                &secret,
                &hook.id,
                hook.timestamp,
                &hook.body,
                &hook.signature
            ),
            "bad signature on {hook:?}"
        );
        if ids.last() != Some(&hook.id) {
            ids.push(hook.id.clone());
            kinds.push(hook.json()["type"].as_str().unwrap().to_owned());
        }
    }
    assert_eq!(kinds, ["check.down", "check.degraded", "check.up"]);
    let down = hooks[0].json();
    assert_eq!(down["data"]["check"]["id"], json!(id));
    assert_eq!(down["data"]["previousStatus"], "up");
    assert_eq!(down["data"]["result"]["statusCode"], 503);
    let alerts = c.get(&format!("/checks/{id}/alerts")).await.json();
    assert_eq!(alerts["total"], 3);
    let states: Vec<&str> = alerts["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["webhook"]["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["delivered"; 3]);
    assert_eq!(alerts["items"][2]["webhook"]["attempts"], 2);

    // The timeline: every change once, and one email request per alert.
    let events = c.get("/events?type=checks.*&limit=200").await.json();
    let types = event_types(&events);
    let count = |t: &str| types.iter().filter(|x| **x == t).count();
    assert_eq!(
        (
            count("checks.check.down"),
            count("checks.check.degraded"),
            count("checks.check.up"),
            count("checks.email.requested"),
            count("checks.check.created"),
        ),
        (1, 1, 2, 3, 1),
        "{types:?}"
    );
    let email = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "checks.email.requested")
        .unwrap();
    assert_eq!(email["data"]["to"], json!(["ops@example.com"]));
    assert_eq!(
        email["data"]["subject"],
        "Check \"Home page\" is up again (was degraded)"
    );
    assert!(!events.to_string().contains(&secret));

    // The history: newest first, with the job's due time.
    let results = c.get(&format!("/checks/{id}/results?limit=2")).await.json();
    assert_eq!(results["total"], 6);
    assert_eq!(results["items"][0]["run"], 6);
    assert_eq!(results["items"][1]["outcome"], "degraded");
    assert!(results["nextCursor"].is_string());

    // Deleting stops the job: nothing runs any more.
    assert_eq!(c.delete(&format!("/checks/{id}")).await.status, 204);
    let jobs = admin.get("/admin/jobs").await.json();
    assert_eq!(jobs["total"], 0, "{jobs}");
}

async fn assertions_are_explained_and_run_now_answers_the_result(backend: Backend) {
    let s = start_with(options(backend)).await;
    let c = s.client();
    let servers = Servers::start().await;
    // Paused, so only the runs asked for happen.
    let r = c
        .post(
            "/checks",
            json!({
                "name": "Items API", "kind": "api", "url": servers.url("/health"),
                "enabled": false,
                "assertions": [
                    {"type": "statusCode", "operator": "equals", "value": 200},
                    {"type": "jsonPath", "path": "$.data.items[0].id", "operator": "equals", "value": "a1"},
                    {"type": "responseTime", "operator": "lessThan", "value": 5000},
                ],
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_owned();
    let r = c.post(&format!("/checks/{id}/run"), json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let ok = r.json();
    assert_eq!(
        (
            ok["outcome"].clone(),
            ok["trigger"].clone(),
            ok["scheduledFor"].clone(),
            ok["status"].clone()
        ),
        (json!("ok"), json!("manual"), Value::Null, json!("up"))
    );

    servers.set(Mode::WrongJson);
    let failed = c.post(&format!("/checks/{id}/run"), json!({})).await.json();
    assert_eq!(
        (failed["outcome"].clone(), failed["status"].clone()),
        (json!("failed"), json!("down"))
    );
    let failure = &failed["failure"];
    assert_eq!(failure["reason"], "assertion");
    assert_eq!(failure["assertion"]["index"], 1);
    assert_eq!(failure["assertion"]["path"], "$.data.items[0].id");
    assert_eq!(
        (failure["expected"].clone(), failure["actual"].clone()),
        (json!("equals \"a1\""), json!("zz"))
    );
    assert_eq!(
        failure["message"],
        "assertion 1 (jsonPath $.data.items[0].id equals \"a1\") failed: the actual value is \"zz\""
    );
    let results = c.get(&format!("/checks/{id}/results")).await.json();
    assert_eq!(results["total"], 2);
    assert_eq!(results["items"][0], failed);
    assert_eq!(results["items"][1]["outcome"], "ok");

    // A target that refuses connections is down with the reason.
    let r = c
        .patch(
            &format!("/checks/{id}"),
            json!({"url": "http://127.0.0.1:9/health"}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let refused = c.post(&format!("/checks/{id}/run"), json!({})).await.json();
    assert_eq!(refused["failure"]["reason"], "connection", "{refused}");
}

async fn plans_validation_isolation_and_heartbeats(backend: Backend) {
    let s = start_with(options(backend)).await;
    let admin = admin(&s).await;
    let free = s.client();
    let paid = paid_client(&s).await;
    // Paused, so nothing here leaves the machine.
    let url = "https://example.com/health";
    let every_minute =
        json!({"name": "Fast", "kind": "url", "url": url, "intervalSeconds": 60, "enabled": false});

    // The interval minimum is 5 minutes on free plans, 1 minute on paid ones.
    let r = free.post("/checks", every_minute.clone()).await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "validation_failed"),
        "{}",
        r.text()
    );
    let problem = r.json();
    assert_eq!(problem["errors"][0]["field"], "intervalSeconds");
    assert_eq!(
        problem["errors"][0]["message"],
        "must be at least 300 seconds (5 minutes) on the free plan; paid plans allow 60 seconds (1 minute)"
    );
    let r = paid.post("/checks", every_minute.clone()).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let paid_id = r.json()["id"].as_str().unwrap().to_owned();
    let r = paid
        .post(
            "/checks",
            json!({"name": "x", "kind": "url", "url": url, "intervalSeconds": 30}),
        )
        .await;
    assert_eq!(
        r.json()["errors"][0]["message"],
        "must be at least 60 seconds (1 minute)"
    );

    // Every invalid field is named.
    let r = free
        .post(
            "/checks",
            json!({"kind": "api", "url": "ftp://x", "expectedStatus": ["2xx", "700"],
                   "assertions": [{"type": "jsonPath", "path": "$..id", "operator": "exists"}]}),
        )
        .await;
    assert_eq!(r.status, 400);
    let fields: Vec<String> = r.json()["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        fields,
        ["name", "url", "expectedStatus[1]", "assertions[0].path"]
    );

    // Another organisation's check is not there.
    for path in [
        format!("/checks/{paid_id}"),
        format!("/checks/{paid_id}/results"),
        format!("/checks/{paid_id}/alerts"),
    ] {
        assert_eq!(free.get(&path).await.status, 404, "{path}");
    }
    assert_eq!(free.delete(&format!("/checks/{paid_id}")).await.status, 404);
    assert_eq!(
        free.post(&format!("/checks/{paid_id}/run"), json!({}))
            .await
            .status,
        404
    );
    assert_eq!(free.get("/checks").await.json()["total"], 0);
    assert_eq!(paid.get("/checks").await.json()["total"], 1);

    // Scopes and tokens.
    let reader = s
        .anonymous()
        .with_token(&mint(&s, json!({"scopes": ["checks:read"]})).await);
    assert_eq!(reader.get("/checks").await.status, 200);
    let r = reader.post("/checks", every_minute).await;
    assert_eq!(
        (r.status, r.json()["scope"].clone()),
        (403, json!("checks:write"))
    );
    assert_eq!(s.anonymous().get("/checks").await.status, 401);

    // A heartbeat: pinged through its public URL, down when a ping is
    // overdue (interval + grace), up again on the next ping.
    let r = free
        .post(
            "/checks",
            json!({"name": "Nightly job", "kind": "heartbeat", "intervalSeconds": 300,
                   "graceSeconds": 60, "alerts": {"emails": ["ops@example.com"]}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let beat = r.json();
    let id = beat["id"].as_str().unwrap().to_owned();
    let ping_url = beat["pingUrl"].as_str().unwrap().to_owned();
    let ping_path = ping_url
        .strip_prefix(&format!("{}/api/v1", s.url))
        .unwrap_or_else(|| panic!("{ping_url} is not below {}", s.url))
        .to_owned();
    let r = s.anonymous().post(&ping_path, json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        free.get(&format!("/checks/{id}")).await.json()["status"],
        "up"
    );
    assert_eq!(s.anonymous().get("/checks/ping/nope").await.status, 404);
    advance(&admin, 359_000).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        free.get(&format!("/checks/{id}")).await.json()["status"],
        "up"
    );
    advance(&admin, 1_000).await;
    let down = until(&free, &format!("/checks/{id}"), "down", |v| {
        v["status"] == "down"
    })
    .await;
    assert_eq!(down["lastResult"]["failure"]["reason"], "missedPing");
    assert_eq!(s.anonymous().get(&ping_path).await.status, 200);
    let up = free.get(&format!("/checks/{id}")).await.json();
    assert_eq!(
        (up["status"].clone(), up["runs"].clone()),
        (json!("up"), json!(3))
    );
    let events = free.get("/events?type=checks.email.requested").await.json();
    assert_eq!(events["total"], 2, "{events}");
}

/// Job leases run on the system clock: a run still going when the host
/// clock jumps past its lease is not claimed and run a second time.
async fn a_running_check_is_not_claimed_again_when_the_clock_jumps(backend: Backend) {
    let s = start_with(options(backend)).await;
    let admin = admin(&s).await;
    let c = paid_client(&s).await;
    let servers = Servers::start().await;
    let r = c
        .post(
            "/checks",
            json!({
                "name": "Slow", "kind": "url", "url": servers.url("/health"),
                "intervalSeconds": 60, "timeoutMs": 8000,
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_owned();
    after_run(&c, &id, 1).await;

    servers.set(Mode::Slow(2000));
    advance(&admin, MINUTE).await;
    for _ in 0..200 {
        if servers.health_calls() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(servers.health_calls(), 2, "the second run has started");
    // Ten minutes of host time while the run waits for the target: twice
    // the lease, were it on the host clock. The runner wakes at once when
    // the clock moves; the job stays leased to the run in progress.
    advance(&admin, 10 * MINUTE).await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(servers.health_calls(), 2, "a running job was claimed again");
    let check = after_run(&c, &id, 2).await;
    assert_eq!(
        check["lastResult"]["latencyMs"]
            .as_u64()
            .map(|ms| ms >= 2000),
        Some(true),
        "{check}"
    );
}
