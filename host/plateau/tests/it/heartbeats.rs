//! The built-in heartbeats plugin over HTTP, on a server whose clock moves
//! only through `/admin/clock`: public pings, late and down on the plugin's
//! durable jobs, and alerts to a real webhook receiver started here, which
//! checks the Standard Webhooks signature itself.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use plateau_testkit::{Backend, Client, Server, ServerOptions};
use reqwest::Method;
use serde_json::{Value, json};
use sha2::Sha256;

use crate::plugins::admin;
use crate::{advance, event_types, start_with, until};

crate::on_both_backends!(
    heartbeats_go_late_then_down_and_alert_once_per_change,
    pings_are_public_and_record_runs,
    cron_schedules_follow_their_time_zone,
);

/// A server on a manual clock that may reach the receivers on loopback.
async fn server(backend: Backend) -> (Server, Client) {
    let options = ServerOptions::new(backend)
        .env("PLATEAU_CLOCK", "manual")
        .env("PLATEAU_EGRESS_ALLOW", "127.0.0.0/8");
    let s = start_with(options).await;
    let admin = admin(&s).await;
    (s, admin)
}

/// Polls the heartbeat until its state is `want` (jobs run asynchronously).
async fn wait_state(c: &Client, id: &str, want: &str) -> Value {
    until(c, &format!("/heartbeats/{id}"), want, |hb| {
        hb["state"] == want
    })
    .await
}

/// One delivery the receiver saw.
#[derive(Clone, Debug)]
struct Delivery {
    id: String,
    timestamp: String,
    signature: String,
    body: Vec<u8>,
}

impl Delivery {
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// The Standard Webhooks check, written out here rather than taken from
    /// the SDK: HMAC-SHA256 over `id.timestamp.body` with the secret's
    /// base64 key, compared with each `v1,` signature.
    fn verifies(&self, secret: &str) -> bool {
        let key = BASE64
            .decode(secret.strip_prefix("whsec_").unwrap())
            .unwrap();
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
        mac.update(format!("{}.{}.", self.id, self.timestamp).as_bytes());
        mac.update(&self.body);
        let expected = format!("v1,{}", BASE64.encode(mac.finalize().into_bytes()));
        self.signature.split(' ').any(|s| s == expected)
    }
}

/// A webhook receiver on 127.0.0.1 that answers with the queued statuses,
/// then 204.
#[derive(Default)]
struct Receiver {
    seen: Mutex<Vec<Delivery>>,
    statuses: Mutex<VecDeque<u16>>,
}

impl Receiver {
    async fn start(statuses: &[u16]) -> (Arc<Receiver>, String) {
        let receiver = Arc::new(Receiver {
            seen: Mutex::default(),
            statuses: Mutex::new(statuses.iter().copied().collect()),
        });
        let app = axum::Router::new()
            .route("/hook", axum::routing::post(receive))
            .with_state(receiver.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        (receiver, format!("http://{addr}/hook"))
    }

    fn seen(&self) -> Vec<Delivery> {
        self.seen.lock().unwrap().clone()
    }

    /// Waits for `n` deliveries in all.
    async fn wait_for(&self, n: usize) -> Vec<Delivery> {
        for _ in 0..100 {
            if self.seen().len() >= n {
                return self.seen();
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("expected {n} webhook deliveries, saw {:?}", self.seen());
    }
}

async fn receive(
    State(receiver): State<Arc<Receiver>>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> StatusCode {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    receiver.seen.lock().unwrap().push(Delivery {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        body: body.to_vec(),
    });
    let status = receiver.statuses.lock().unwrap().pop_front().unwrap_or(204);
    StatusCode::from_u16(status).unwrap()
}

/// A ping without any credential, on the absolute URL the API answered.
async fn ping(method: reqwest::Method, url: &str) -> (u16, String) {
    let r = reqwest::Client::new()
        .request(method, url)
        .header("x-forwarded-for", "198.51.100.23")
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.text().await.unwrap())
}

async fn heartbeats_go_late_then_down_and_alert_once_per_change(backend: Backend) {
    let (s, admin) = server(backend).await;
    let (receiver, hook) = Receiver::start(&[]).await;
    let c = s.client();
    let r = c
        .post(
            "/heartbeats",
            json!({
                "name": "nightly backup",
                "periodSeconds": 60,
                "graceSeconds": 120,
                "alertEmails": ["ops@example.com"],
                "webhookUrl": hook,
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let created = r.json();
    let id = created["id"].as_str().unwrap().to_owned();
    let ping_url = created["pingUrl"].as_str().unwrap().to_owned();
    assert!(
        ping_url.starts_with(&format!("{}/api/v1/heartbeats/ping/", s.url)),
        "{ping_url}"
    );
    let secret = created["webhookSecret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"));
    // The secret is answered once.
    let read = c.get(&format!("/heartbeats/{id}")).await;
    assert!(!read.text().contains(&secret[6..]), "{}", read.text());
    assert_eq!(
        read.json()["webhookSecret"],
        format!("whsec_…{}", &secret[secret.len() - 4..])
    );
    assert_eq!(read.json()["state"], "new");

    assert_eq!(ping(Method::GET, &ping_url).await, (200, "OK".to_owned()));
    let up = wait_state(&c, &id, "up").await;
    assert!(
        up["expectedAt"].is_string() && up["downAt"].is_string(),
        "{up}"
    );

    // Late once the period passes, without an alert; down after the grace.
    advance(&admin, 61_000).await;
    wait_state(&c, &id, "late").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(receiver.seen().is_empty(), "late does not alert by default");
    advance(&admin, 120_000).await;
    wait_state(&c, &id, "down").await;
    let hooks = receiver.wait_for(1).await;
    assert!(hooks[0].verifies(&secret), "{:?}", hooks[0]);
    let down = hooks[0].json();
    assert_eq!(down["type"], "heartbeats.heartbeat.down");
    assert_eq!(down["data"]["id"], id.as_str());
    assert_eq!(down["data"]["previousState"], "late");

    // No second alert while it stays down, however long.
    advance(&admin, 3_600_000).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(receiver.seen().len(), 1);

    // A success ping recovers it: one more alert.
    assert_eq!(ping(Method::POST, &ping_url).await.0, 200);
    wait_state(&c, &id, "up").await;
    let hooks = receiver.wait_for(2).await;
    assert!(hooks[1].verifies(&secret));
    assert_eq!(hooks[1].json()["type"], "heartbeats.heartbeat.up");
    assert_ne!(hooks[0].id, hooks[1].id);
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.seen().len(), 2);

    // The email requests are in the timeline, for the relay to send.
    let emails = c
        .get("/events?type=heartbeats.email.requested")
        .await
        .json();
    assert_eq!(emails["total"], 2, "{emails}");
    let subjects: Vec<&str> = emails["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["data"]["subject"].as_str().unwrap())
        .collect();
    assert_eq!(
        subjects,
        [
            "Heartbeat \"nightly backup\" is up again",
            "Heartbeat \"nightly backup\" is down"
        ],
        "newest first"
    );
    let first = &emails["items"][1];
    assert_eq!(first["data"]["to"], json!(["ops@example.com"]));
    assert!(first["data"]["text"].as_str().unwrap().contains(&id));
    assert_eq!(first["resourceId"], id.as_str());
    let changes = c.get("/events?type=heartbeats.heartbeat.*").await.json();
    let types = event_types(&changes);
    assert_eq!(
        types,
        [
            "heartbeats.heartbeat.up",
            "heartbeats.heartbeat.down",
            "heartbeats.heartbeat.late",
            "heartbeats.heartbeat.up",
            "heartbeats.heartbeat.created",
        ]
    );
    assert!(!changes.to_string().contains(&secret[6..]));

    // A receiver that fails is retried with the host's backoff; the
    // message and its id stay the same.
    receiver.statuses.lock().unwrap().extend([500, 503]);
    let (status, _) = ping(Method::POST, &format!("{ping_url}/fail")).await;
    assert_eq!(status, 200);
    wait_state(&c, &id, "down").await;
    receiver.wait_for(3).await;
    for _ in 0..50 {
        if receiver.seen().len() >= 5 {
            break;
        }
        advance(&admin, 5_000).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let hooks = receiver.wait_for(5).await;
    assert_eq!(hooks[2].id, hooks[3].id);
    assert_eq!(hooks[3].id, hooks[4].id);
    assert!(hooks[4].verifies(&secret));
    assert_eq!(hooks[4].json()["data"]["cause"], "failPing");
    advance(&admin, 600_000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.seen().len(), 5, "delivered once, then done");

    // Paused: no deadlines and no alerts; a ping resumes it quietly.
    let r = c
        .patch(&format!("/heartbeats/{id}"), json!({ "paused": true }))
        .await;
    assert_eq!(r.json()["state"], "paused", "{}", r.text());
    let (status, _) = ping(Method::POST, &format!("{ping_url}/start")).await;
    assert_eq!(status, 200);
    advance(&admin, 7_200_000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(wait_state(&c, &id, "paused").await["paused"], true);
    assert_eq!(ping(Method::GET, &ping_url).await.0, 200);
    wait_state(&c, &id, "up").await;
    advance(&admin, 30_000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(receiver.seen().len(), 5, "resuming is not a recovery");
    assert_eq!(
        c.get("/events?type=heartbeats.email.requested")
            .await
            .json()["total"],
        3
    );

    // A rotated secret signs from then on.
    let r = c
        .post(&format!("/heartbeats/{id}/webhook-secret"), json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let rotated = r.json()["webhookSecret"].as_str().unwrap().to_owned();
    assert_ne!(rotated, secret);
    ping(Method::POST, &format!("{ping_url}/fail")).await;
    let hooks = receiver.wait_for(6).await;
    assert!(hooks[5].verifies(&rotated) && !hooks[5].verifies(&secret));
}

async fn pings_are_public_and_record_runs(backend: Backend) {
    let (s, admin) = server(backend).await;
    let c = s.client();
    let created = c
        .post(
            "/heartbeats",
            json!({ "name": "etl", "periodSeconds": 3600 }),
        )
        .await
        .json();
    let id = created["id"].as_str().unwrap().to_owned();
    let ping_url = created["pingUrl"].as_str().unwrap().to_owned();
    assert!(created["webhookSecret"].is_null());

    // A start, five seconds of work on the host clock, a success.
    assert_eq!(
        ping(Method::POST, &format!("{ping_url}/start")).await.0,
        200
    );
    advance(&admin, 5_000).await;
    assert_eq!(ping(Method::POST, &ping_url).await.0, 200);
    let up = wait_state(&c, &id, "up").await;
    assert_eq!(up["lastDurationMs"], 5_000, "{up}");
    advance(&admin, 1_000).await;
    assert_eq!(ping(Method::GET, &format!("{ping_url}/start")).await.0, 200);
    advance(&admin, 2_500).await;
    assert_eq!(ping(Method::GET, &format!("{ping_url}/fail")).await.0, 200);
    let down = wait_state(&c, &id, "down").await;
    assert_eq!(down["lastDurationMs"], 2_500);
    let pings = c.get(&format!("/heartbeats/{id}/pings?limit=3")).await;
    assert_eq!(pings.status, 200, "{}", pings.text());
    let pings = pings.json();
    assert_eq!(pings["total"], 4);
    let kinds: Vec<(&str, Value)> = pings["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["kind"].as_str().unwrap(), p["durationMs"].clone()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("fail", json!(2_500)),
            ("start", Value::Null),
            ("success", json!(5_000))
        ]
    );
    assert_eq!(pings["items"][0]["sourceIp"], "198.51.100.23");
    assert_eq!(pings["items"][0]["method"], "GET");
    let cursor = pings["nextCursor"].as_str().unwrap();
    let rest = c
        .get(&format!("/heartbeats/{id}/pings?limit=3&cursor={cursor}"))
        .await
        .json();
    assert_eq!(rest["items"][0]["kind"], "start");
    assert!(rest["nextCursor"].is_null());

    // Unknown and malformed tokens are 404; so is a guess at the shape.
    let token = ping_url.rsplit('/').next().unwrap();
    let flipped: String = token
        .chars()
        .enumerate()
        .map(|(i, ch)| match (i, ch) {
            (0, 'A') => 'B',
            (0, _) => 'A',
            (_, ch) => ch,
        })
        .collect();
    let base = format!("{}/api/v1/heartbeats/ping", s.url);
    for url in [
        format!("{base}/{flipped}"),
        format!("{base}/{flipped}/fail"),
        format!("{base}/nope"),
    ] {
        let (status, body) = ping(Method::POST, &url).await;
        assert_eq!(status, 404, "{url}: {body}");
        assert!(body.contains("not_found"), "{body}");
    }

    // Another organisation's token reads nothing of it, and pings need none.
    let other = s
        .anonymous()
        .with_token(&crate::create_org(&s, "Other Org", "pro").await);
    for path in [
        format!("/heartbeats/{id}"),
        format!("/heartbeats/{id}/pings"),
    ] {
        let r = other.get(&path).await;
        assert_eq!((r.status, r.code().as_str()), (404, "not_found"), "{path}");
    }
    let r = other
        .patch(&format!("/heartbeats/{id}"), json!({ "name": "theirs" }))
        .await;
    assert_eq!(r.status, 404);
    assert_eq!(other.delete(&format!("/heartbeats/{id}")).await.status, 404);
    assert_eq!(other.get("/heartbeats").await.json()["total"], 0);
    let r = reqwest::Client::new()
        .post(&ping_url)
        .bearer_auth("plt_not_a_real_token")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200, "a ping URL ignores credentials");
    assert_eq!(
        c.get(&format!("/heartbeats/{id}")).await.json()["name"],
        "etl"
    );

    // Scopes, and validation problems that name the fields.
    let reader = s
        .anonymous()
        .with_token(&crate::mint(&s, json!({ "scopes": ["heartbeats:read"] })).await);
    assert_eq!(reader.get("/heartbeats").await.status, 200);
    let r = reader.post("/heartbeats", json!({ "name": "x" })).await;
    assert_eq!(
        (r.status, r.json()["scope"].as_str()),
        (403, Some("heartbeats:write"))
    );
    let r = c
        .post(
            "/heartbeats",
            json!({
                "name": "",
                "periodSeconds": 60,
                "schedule": "0 3 * * *",
                "graceSeconds": 1,
                "alertEmails": ["ops@example.com\r\nBcc: x@example.com"],
                "webhookUrl": "gopher://example.com",
            }),
        )
        .await;
    assert_eq!((r.status, r.code().as_str()), (400, "validation_failed"));
    let problem = r.json();
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        [
            "name",
            "schedule",
            "graceSeconds",
            "alertEmails[0]",
            "webhookUrl"
        ],
        "{}",
        r.text()
    );
    let r = c
        .post(
            "/heartbeats",
            json!({ "name": "x", "schedule": "0 3 * * *", "timezone": "Europe/Atlantis" }),
        )
        .await;
    assert_eq!(r.json()["errors"][0]["field"], "timezone", "{}", r.text());
    assert_eq!(c.get("/heartbeats").await.json()["total"], 1);

    // Deleting it retires its ping URL.
    assert_eq!(c.delete(&format!("/heartbeats/{id}")).await.status, 204);
    assert_eq!(ping(Method::POST, &ping_url).await.0, 404);
    let audit = c
        .get("/audit?type=heartbeats.heartbeat.created,heartbeats.heartbeat.deleted")
        .await
        .json();
    assert_eq!(audit["total"], 2, "created and deleted: {audit}");
}

async fn cron_schedules_follow_their_time_zone(backend: Backend) {
    let (s, admin) = server(backend).await;
    let c = s.client();
    // Kathmandu is UTC+05:45: its hours start at a quarter past UTC ones.
    let created = c
        .post(
            "/heartbeats",
            json!({
                "name": "hourly import",
                "schedule": "0 * * * *",
                "timezone": "Asia/Kathmandu",
                "graceSeconds": 300,
            }),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.text());
    let created = created.json();
    assert_eq!(created["timezone"], "Asia/Kathmandu");
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(
        ping(Method::POST, created["pingUrl"].as_str().unwrap())
            .await
            .0,
        200
    );
    let up = wait_state(&c, &id, "up").await;
    let expected = up["expectedAt"].as_str().unwrap();
    assert_eq!(&expected[13..], ":15:00.000Z", "{up}");
    let pinged = millis(up["lastPingAt"].as_str().unwrap());
    let due = millis(expected);
    assert!(due > pinged && due - pinged <= 3_600_000, "{up}");
    // Late at the hour in Kathmandu, down five minutes later.
    advance(&admin, due - pinged).await;
    wait_state(&c, &id, "late").await;
    advance(&admin, 300_000).await;
    let down = wait_state(&c, &id, "down").await;
    assert!(down["expectedAt"].is_null(), "{down}");
}

/// Milliseconds since the Unix epoch of the plugin's RFC 3339 UTC times
/// (`2026-01-10T12:00:00.000Z`).
fn millis(rfc3339: &str) -> u64 {
    let n = |range: std::ops::Range<usize>| rfc3339[range].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    // Days from civil, proleptic Gregorian.
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19);
    (secs * 1000 + n(20..23)) as u64
}
