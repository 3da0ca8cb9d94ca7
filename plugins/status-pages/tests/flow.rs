//! The plugin over the SDK's in-memory host: a page, components fed by a
//! check's events and set by hand, an incident with updates, what the
//! public routes answer, and the double opt-in of a subscriber.

use plateau_plugin_status_pages::StatusPagesPlugin;
use plateau_sdk::{Caller, Event, Method, Request, Response, testing};
use serde_json::{Value, json};

const ORG: &str = "org_1";
const DAY: u64 = 86_400_000;

fn send(method: Method, target: &str, body: Option<Value>) -> Response {
    let mut req = Request::new(method, target)
        .with_caller(Caller::new(
            ORG,
            &["status-pages:read", "status-pages:write"],
        ))
        .with_header("host", "plateau.test");
    if let Some(body) = body {
        req = req.with_json(&body);
    }
    testing::handle::<StatusPagesPlugin>(&req)
}

fn public(method: Method, target: &str, body: Option<(&str, &str)>) -> Response {
    let mut req = Request::new(method, target)
        .with_caller(Caller::anonymous())
        .with_header("host", "plateau.test");
    if let Some((ct, body)) = body {
        req = req
            .with_header("content-type", ct)
            .with_body(body.as_bytes().to_vec());
    }
    testing::handle::<StatusPagesPlugin>(&req)
}

fn ok(res: &Response, status: u16) -> Value {
    assert_eq!(res.status, status, "{}", String::from_utf8_lossy(&res.body));
    serde_json::from_slice(&res.body).unwrap_or(Value::Null)
}

fn text(res: &Response) -> String {
    String::from_utf8_lossy(&res.body).into_owned()
}

fn check_event(id: &str, status: &str, at: u64) {
    testing::set_now(at);
    let event = Event {
        id: format!("evt_{at}"),
        organization_id: ORG.to_owned(),
        event_type: format!("checks.check.{status}"),
        resource_type: Some("check".to_owned()),
        resource_id: Some(id.to_owned()),
        data: "{}".to_owned(),
        at,
    };
    testing::deliver::<StatusPagesPlugin>(&event).unwrap();
}

#[test]
fn the_description_passes_the_hosts_checks() {
    let description = plateau_sdk::describe::<StatusPagesPlugin>();
    assert_eq!(description.problems(), Vec::<String>::new());
}

#[test]
fn a_page_shows_components_incidents_and_uptime() {
    let start = 20_000 * DAY;
    testing::set_now(start);
    let res = send(
        Method::Put,
        "/status-pages/page",
        Some(json!({"name": "Acme", "slug": "acme"})),
    );
    let page = ok(&res, 201);
    assert_eq!(
        page["publicUrl"],
        "http://plateau.test/api/v1/status-pages/public/acme"
    );
    let bad = send(
        Method::Put,
        "/status-pages/page",
        Some(json!({"name": "", "slug": "A"})),
    );
    let problem = ok(&bad, 400);
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["name", "slug"]);

    let api = ok(
        &send(
            Method::Post,
            "/status-pages/components",
            Some(json!({
                "name": "API", "source": {"kind": "check", "id": "chk_1"}
            })),
        ),
        201,
    );
    let web = ok(
        &send(
            Method::Post,
            "/status-pages/components",
            Some(json!({"name": "Website", "position": 1})),
        ),
        201,
    );
    let bad = send(
        Method::Post,
        "/status-pages/components",
        Some(json!({"name": "x", "status": "sideways"})),
    );
    assert_eq!(bad.status, 400, "{}", text(&bad));

    // The check goes down for six hours of the next day.
    check_event("chk_1", "down", start + DAY);
    check_event("chk_1", "up", start + DAY + DAY / 4);
    check_event("chk_2", "down", start + DAY + DAY / 4);
    let got = ok(
        &send(
            Method::Get,
            &format!("/status-pages/components/{}", api["id"].as_str().unwrap()),
            None,
        ),
        200,
    );
    assert_eq!(got["status"], "operational");

    testing::set_now(start + 2 * DAY);
    let inc = ok(
        &send(
            Method::Post,
            "/status-pages/incidents",
            Some(json!({
                "name": "Slow website <b>", "body": "We are looking into it.", "impact": "major",
                "components": [{"id": web["id"], "status": "partial_outage"}]
            })),
        ),
        201,
    );
    assert_eq!(inc["status"], "investigating");
    let summary = ok(
        &public(
            Method::Get,
            "/status-pages/public/acme/api/v2/summary.json",
            None,
        ),
        200,
    );
    assert_eq!(summary["status"]["indicator"], "major");
    assert_eq!(summary["incidents"][0]["name"], "Slow website <b>");
    assert_eq!(summary["components"][1]["status"], "partial_outage");
    assert_eq!(
        summary["incidents"][0]["incident_updates"][0]["body"],
        "We are looking into it."
    );

    let html = public(Method::Get, "/status-pages/public/acme", None);
    assert_eq!(html.status, 200);
    let body = text(&html);
    assert!(body.contains("Partial System Outage"), "{body}");
    assert!(body.contains("Slow website &lt;b&gt;"), "escaped: {body}");
    assert!(!body.contains("<b>"), "{body}");
    // The API's bar: one day of 75% (six hours down), the first day known.
    assert!(
        body.contains("75.00% uptime, worst: major outage"),
        "{body}"
    );
    let etag = html.header("etag").unwrap().to_owned();
    let again = testing::handle::<StatusPagesPlugin>(
        &Request::new(Method::Get, "/status-pages/public/acme")
            .with_caller(Caller::anonymous())
            .with_header("if-none-match", etag.clone()),
    );
    assert_eq!(again.status, 304);

    // Resolving sets the hand-set component back, and the cache goes stale.
    testing::set_now(start + 2 * DAY + 3_600_000);
    ok(
        &send(
            Method::Post,
            &format!(
                "/status-pages/incidents/{}/updates",
                inc["id"].as_str().unwrap()
            ),
            Some(json!({"status": "resolved", "body": "Fixed."})),
        ),
        201,
    );
    let summary = ok(
        &public(
            Method::Get,
            "/status-pages/public/acme/api/v2/summary.json",
            None,
        ),
        200,
    );
    assert_eq!(summary["status"]["indicator"], "none");
    assert_eq!(summary["status"]["description"], "All Systems Operational");
    assert!(summary["incidents"].as_array().unwrap().is_empty());
    let html = public(Method::Get, "/status-pages/public/acme", None);
    assert_ne!(html.header("etag").unwrap(), etag);
    assert!(text(&html).contains("Past incidents"));
    let atom = text(&public(
        Method::Get,
        "/status-pages/public/acme/history.atom",
        None,
    ));
    assert!(
        atom.contains("<title>Slow website &lt;b&gt;</title>"),
        "{atom}"
    );

    assert_eq!(
        public(Method::Get, "/status-pages/public/nobody", None).status,
        404
    );
}

#[test]
fn an_email_subscriber_confirms_before_getting_updates() {
    testing::set_now(1_800_000_000_000);
    ok(
        &send(
            Method::Put,
            "/status-pages/page",
            Some(json!({"name": "Acme", "slug": "acme-two"})),
        ),
        201,
    );
    let form = (
        "application/x-www-form-urlencoded",
        "email=ann%40example.com",
    );
    let res = public(
        Method::Post,
        "/status-pages/public/acme-two/subscribe",
        Some(form),
    );
    assert_eq!(res.status, 202, "{}", text(&res));
    let asked: Vec<_> = testing::events()
        .into_iter()
        .filter(|e| e.event_type == "status-pages.email.requested")
        .collect();
    assert_eq!(asked.len(), 1);
    let data: Value = serde_json::from_str(&asked[0].data).unwrap();
    assert_eq!(data["to"], json!(["ann@example.com"]));
    let link = data["text"]
        .as_str()
        .unwrap()
        .lines()
        .find(|l| l.contains("/confirm/"))
        .unwrap()
        .to_owned();
    let path = link.strip_prefix("http://plateau.test/api/v1").unwrap();
    // Asking again within 10 minutes sends nothing more.
    public(
        Method::Post,
        "/status-pages/public/acme-two/subscribe",
        Some(form),
    );
    let subs = ok(&send(Method::Get, "/status-pages/subscribers", None), 200);
    assert_eq!(subs["total"], 1);
    assert_eq!(subs["items"][0]["confirmed"], false);

    // An update before confirmation mails nobody.
    ok(
        &send(
            Method::Post,
            "/status-pages/incidents",
            Some(json!({"name": "Down", "body": "Looking."})),
        ),
        201,
    );
    let before = testing::events().len();
    testing::run_due_jobs::<StatusPagesPlugin>(1_800_000_000_000);
    assert_eq!(testing::events().len(), before, "nobody is mailed yet");

    // The link shows a button; pressing it confirms.
    let shown = public(Method::Get, path, None);
    assert!(text(&shown).contains("<button"), "{}", text(&shown));
    assert_eq!(public(Method::Post, path, None).status, 200);
    let subs = ok(&send(Method::Get, "/status-pages/subscribers", None), 200);
    assert_eq!(subs["items"][0]["confirmed"], true);

    let inc = ok(&send(Method::Get, "/status-pages/incidents", None), 200);
    ok(
        &send(
            Method::Post,
            &format!(
                "/status-pages/incidents/{}/updates",
                inc["items"][0]["id"].as_str().unwrap()
            ),
            Some(json!({"status": "identified", "body": "Found it."})),
        ),
        201,
    );
    testing::run_due_jobs::<StatusPagesPlugin>(1_800_000_000_000);
    let mails: Vec<Value> = testing::events()
        .into_iter()
        .filter(|e| e.event_type == "status-pages.email.requested")
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect();
    let last = mails.last().unwrap();
    assert_eq!(last["subject"], "[Acme] Down: identified");
    assert!(last["text"].as_str().unwrap().contains("/unsubscribe/"));
    let bad = public(
        Method::Post,
        "/status-pages/public/acme-two/subscribe",
        Some(("application/json", "{\"email\": \"nope\"}")),
    );
    assert_eq!(bad.status, 400);
}
