//! The built-in status pages plugin over HTTP, on one server whose clock
//! moves only through `/admin/clock`: a heartbeat going down feeds a
//! component through the timeline, an incident reaches a webhook
//! subscriber started here (its Standard Webhooks signature checked), an
//! email subscription asks the relay for its confirmation, and what an
//! anonymous visitor gets: the HTML page, Statuspage's `summary.json`
//! and the Atom feed; plus slugs, scopes, validation and isolation.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use plateau_sdk::webhooks;
use plateau_testkit::{Backend, ServerOptions};
use serde_json::{Value, json};

use crate::plugins::admin;
use crate::{advance, create_org, event_types, mint, start_with, until};

/// One signed request the sink received: id, timestamp, signature, body.
type Hook = (String, u64, String, Vec<u8>);

/// A webhook receiver on loopback that keeps what it gets.
async fn sink() -> (SocketAddr, Arc<Mutex<Vec<Hook>>>) {
    let got: Arc<Mutex<Vec<Hook>>> = Arc::default();
    let keep = got.clone();
    let app = Router::new().route(
        "/hook",
        post(move |headers: HeaderMap, body: axum::body::Bytes| {
            let keep = keep.clone();
            async move {
                let h = |n: &str| {
                    headers
                        .get(n)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_owned()
                };
                keep.lock().unwrap().push((
                    h("webhook-id"),
                    h("webhook-timestamp").parse().unwrap_or(0),
                    h("webhook-signature"),
                    body.to_vec(),
                ));
                StatusCode::NO_CONTENT
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, got)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_status_page_follows_heartbeats_and_tells_subscribers() {
    let options = ServerOptions::new(Backend::Sqlite)
        .env("PLATEAU_CLOCK", "manual")
        .env("PLATEAU_EGRESS_ALLOW", "127.0.0.0/8");
    let s = start_with(options).await;
    let admin = admin(&s).await;
    let c = s.client();
    let visitor = s.anonymous();

    // The page, and its slug, which another organisation cannot take.
    let r = c
        .put(
            "/status-pages/page",
            json!({"name": "Acme", "slug": "acme", "description": "Acme's services"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let page = r.json();
    let public = page["publicUrl"].as_str().unwrap().to_owned();
    assert!(
        public.ends_with("/api/v1/status-pages/public/acme"),
        "{public}"
    );
    let other = s
        .client()
        .with_token(&create_org(&s, "other", "free").await);
    let r = other
        .put(
            "/status-pages/page",
            json!({"name": "Not Acme", "slug": "acme"}),
        )
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "conflict"),
        "{}",
        r.text()
    );
    assert_eq!(
        other.get("/status-pages/components").await.json()["total"],
        0
    );

    // Every bad field is named.
    let r = c
        .post(
            "/status-pages/components",
            json!({"name": "", "source": {"kind": "check", "id": "no such id!"}}),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    let problem = r.json();
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["name", "source.id"]);
    let r = c
        .post(
            "/status-pages/incidents",
            json!({"name": "x", "body": "y", "scheduledFor": "soon"}),
        )
        .await;
    assert_eq!(
        r.json()["errors"][0]["field"],
        "scheduledFor",
        "{}",
        r.text()
    );

    // A read-only token reads and cannot write.
    let reader = s
        .client()
        .with_token(&mint(&s, json!({"scopes": ["status-pages:read"]})).await);
    assert_eq!(reader.get("/status-pages/page").await.status, 200);
    let r = reader
        .post("/status-pages/components", json!({"name": "x"}))
        .await;
    assert_eq!(r.status, 403, "{}", r.text());

    // A component fed by a heartbeat, which goes down: the timeline feeds it.
    let r = c
        .post(
            "/heartbeats",
            json!({"name": "nightly", "periodSeconds": 60, "graceSeconds": 60}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let hb = r.json();
    let hb_id = hb["id"].as_str().unwrap().to_owned();
    let r = c
        .post(
            "/status-pages/components",
            json!({"name": "Nightly jobs", "source": {"kind": "heartbeat", "id": hb_id}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let jobs = r.json()["id"].as_str().unwrap().to_owned();
    let r = c
        .post(
            "/status-pages/components",
            json!({"name": "Website", "position": 1}),
        )
        .await;
    let website = r.json()["id"].as_str().unwrap().to_owned();
    let ping = hb["pingUrl"]
        .as_str()
        .unwrap()
        .replace(&format!("{}/api/v1", s.url), "");
    assert_eq!(visitor.get(&ping).await.status, 200);
    advance(&admin, 200_000).await;
    until(
        &c,
        &format!("/status-pages/components/{jobs}"),
        "the heartbeat's down",
        |v| v["status"] == "major_outage",
    )
    .await;

    // Subscribers: a webhook, and an email address through the public form.
    let (addr, hooks) = sink().await;
    let r = c
        .post(
            "/status-pages/subscribers",
            json!({"url": format!("http://{addr}/hook")}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let secret = r.json()["secret"].as_str().unwrap().to_owned();
    let form = visitor
        .request(reqwest::Method::POST, "/status-pages/public/acme/subscribe")
        .body(
            "application/x-www-form-urlencoded",
            b"email=ann%40example.com".to_vec(),
        )
        .send()
        .await;
    assert_eq!(form.status, 202, "{}", form.text());
    assert!(form.text().contains("Check your inbox"), "{}", form.text());
    // The attack: a subscribe naming another site in its forwarded host,
    // so the platform would mail a victim a link to the forger's site.
    let forged = visitor
        .request(reqwest::Method::POST, "/status-pages/public/acme/subscribe")
        .header("x-forwarded-host", "evil.example")
        .body(
            "application/x-www-form-urlencoded",
            b"email=victim%40example.com".to_vec(),
        )
        .send()
        .await;
    assert_eq!(forged.status, 202, "{}", forged.text());

    // An incident: the subscribers hear of it, signed.
    let r = c
        .post(
            "/status-pages/incidents",
            json!({"name": "Website is slow", "body": "We are looking into it.", "impact": "minor",
                   "components": [{"id": website, "status": "degraded_performance"}]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let incident = r.json()["id"].as_str().unwrap().to_owned();
    // The attack on the shared cache: the first visit after a change names
    // another site; neither it nor the next visitor sees that site.
    for path in [
        "/status-pages/public/acme",
        "/status-pages/public/acme/api/v2/summary.json",
        "/status-pages/public/acme/history.atom",
    ] {
        let forged = visitor
            .request(reqwest::Method::GET, path)
            .header("x-forwarded-host", "evil.example")
            .send()
            .await;
        let plain = visitor.get(path).await;
        for r in [&forged, &plain] {
            assert_eq!(r.status, 200, "{path}: {}", r.text());
            assert!(
                !r.text().contains("evil.example"),
                "{path} was poisoned: {}",
                r.text()
            );
        }
    }
    let mut waited = 0;
    while hooks.lock().unwrap().is_empty() {
        assert!(waited < 400, "the webhook subscriber was never called");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        waited += 1;
    }
    let (id, ts, sig, body) = hooks.lock().unwrap()[0].clone();
    assert!(
        webhooks::verify(&secret, &id, ts, &body, &sig),
        "the signature verifies"
    );
    let hook: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(hook["type"], "status-pages.incident.updated");
    assert_eq!(hook["data"]["incident"]["name"], "Website is slow");

    // What a visitor sees.
    let html = visitor.get("/status-pages/public/acme").await;
    assert_eq!(html.status, 200);
    assert!(
        html.header("content-type")
            .unwrap()
            .starts_with("text/html")
    );
    let text = html.text();
    for want in [
        "Acme",
        "Major System Outage",
        "Nightly jobs",
        "Major outage",
        "Website is slow",
        "Degraded performance",
        "We are looking into it.",
    ] {
        assert!(text.contains(want), "the page shows {want}: {text}");
    }
    let summary = visitor
        .get("/status-pages/public/acme/api/v2/summary.json")
        .await
        .json();
    assert_eq!(summary["page"]["name"], "Acme");
    assert_eq!(summary["status"]["indicator"], "critical");
    let statuses: Vec<&str> = summary["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["major_outage", "degraded_performance"]);
    assert_eq!(
        summary["incidents"][0]["incident_updates"][0]["status"],
        "investigating"
    );
    let r = c
        .post(
            &format!("/status-pages/incidents/{incident}/updates"),
            json!({"status": "resolved", "body": "Fixed."}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let summary = visitor
        .get("/status-pages/public/acme/api/v2/summary.json")
        .await
        .json();
    assert!(
        summary["incidents"].as_array().unwrap().is_empty(),
        "{summary}"
    );
    assert_eq!(summary["components"][1]["status"], "operational");
    let atom = visitor.get("/status-pages/public/acme/history.atom").await;
    assert!(
        atom.header("content-type")
            .unwrap()
            .starts_with("application/atom+xml")
    );
    assert!(
        atom.text().contains("<title>Website is slow</title>"),
        "{}",
        atom.text()
    );
    assert_eq!(visitor.get("/status-pages/public/nobody").await.status, 404);

    // The timeline has it all, and the relay was asked for the confirmation.
    let events = c.get("/events?limit=200").await.json();
    let types = event_types(&events);
    let mailed = events["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["type"] == "status-pages.email.requested");
    for e in mailed {
        assert!(
            !e.to_string().contains("evil.example"),
            "a forged host reached an email: {e}"
        );
    }
    for want in [
        "status-pages.page.created",
        "status-pages.component.updated",
        "status-pages.incident.created",
        "status-pages.incident.resolved",
        "status-pages.email.requested",
    ] {
        assert!(types.contains(&want), "{want} in {types:?}");
    }
    let doc = s.anonymous().get("/openapi.json").await.json();
    assert!(doc["components"]["schemas"]["status-pages.PageView"].is_object());
    eprintln!(
        "status page: {} bytes of HTML, {} webhook deliveries, {} events",
        text.len(),
        hooks.lock().unwrap().len(),
        types.len()
    );
}
