//! Section 6: the timeline, the audit log and its CSV export.

use plateau_testkit::Backend;
use serde_json::json;

use crate::{event_types, start};

crate::on_both_backends!(
    timeline_filters,
    audit_log_filters_roles_and_csv,
    secrets_never_reach_events
);

async fn timeline_filters(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    c.post("/projects", json!({ "name": "one" })).await;
    c.post("/tokens", json!({ "name": "t" })).await;
    let all = c.get("/events").await.json();
    let kinds = event_types(&all);
    assert_eq!(&kinds[..2], ["token.created", "project.created"]);
    let created = &all["items"][1];
    assert_eq!(created["actor"]["type"], "token");
    assert_eq!(created["actor"]["ip"], "127.0.0.1");
    assert_eq!(created["data"]["name"], "one");
    let only = c.get("/events?type=project.created").await.json();
    assert_eq!(only["total"], 1);
    let prefixed = c.get("/events?type=project.*,token.*").await.json();
    assert_eq!(prefixed["total"], 2);
    let future = c.get("/events?from=2999-01-01").await.json();
    assert_eq!(future["total"], 0);
    let past = c.get("/events?to=2000-01-01T00:00:00Z").await.json();
    assert_eq!(past["total"], 0);
    let today = c
        .get(&format!(
            "/events?from={}",
            &created["createdAt"].as_str().unwrap()[..10]
        ))
        .await
        .json();
    assert_eq!(today["total"], all["total"]);
    let r = c.get("/events?from=yesterday").await;
    assert_eq!(
        (r.status, r.json()["errors"][0]["field"].as_str()),
        (400, Some("from"))
    );
}

async fn audit_log_filters_roles_and_csv(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    c.post(
        "/projects",
        json!({ "name": "=HYPERLINK(\"http://evil\",\"x\")" }),
    )
    .await;
    c.post("/projects", json!({ "name": "plain, with \"quotes\"" }))
        .await;
    let t = c.post("/tokens", json!({ "name": "-2+3" })).await.json();
    let token_id = t["id"].as_str().unwrap();
    let by_category = c.get("/audit?category=tokens").await.json();
    assert_eq!(by_category["items"][0]["resourceId"], token_id);
    let by_action = c
        .get("/audit?action=create&resourceType=project")
        .await
        .json();
    assert_eq!(by_action["total"], 2);
    let me = c.get("/me").await.json();
    let by_actor = c
        .get(&format!(
            "/audit?actor={}",
            me["token"]["id"].as_str().unwrap()
        ))
        .await
        .json();
    assert_eq!(by_actor["total"], 3);
    let by_user = c
        .get(&format!(
            "/audit?actor={}",
            me["user"]["id"].as_str().unwrap()
        ))
        .await
        .json();
    assert_eq!(by_user["total"], 3);
    assert_eq!(c.get("/audit?from=2999-01-01").await.json()["total"], 0);
    // CSV: RFC 4180 with formula cells defused.
    let csv = c.get("/audit/export?resourceType=project").await;
    assert_eq!(csv.status, 200);
    assert!(csv.header("content-type").unwrap().starts_with("text/csv"));
    let text = csv.text();
    assert!(
        text.ends_with("\r\n") && !text.replace("\r\n", "").contains('\n'),
        "CRLF line ends"
    );
    let rows: Vec<csv::StringRecord> = csv::Reader::from_reader(text.as_bytes())
        .records()
        .map(Result::unwrap)
        .collect();
    assert_eq!(rows.len(), 2);
    let names: Vec<&str> = rows.iter().map(|r| &r[11]).collect();
    assert!(
        names.contains(&"'=HYPERLINK(\"http://evil\",\"x\")"),
        "{names:?}"
    );
    assert!(names.contains(&"plain, with \"quotes\""));
    assert!(text.contains("\"plain, with \"\"quotes\"\"\""));
    let tokens_csv = c.get("/audit/export?category=tokens").await.text();
    assert!(tokens_csv.contains(",'-2+3,"), "{tokens_csv}");
    // Members may not read the audit log, whatever their scopes: their
    // role leaves out audit:read (plateau_core::role).
    let admin = s.anonymous().with_cookie(&crate::admin::login(&s).await);
    let org = me["organization"]["id"].as_str().unwrap();
    let m = admin
        .post(
            &format!("/admin/organizations/{org}/members"),
            json!({ "name": "mia", "role": "member" }),
        )
        .await;
    assert_eq!(m.status, 201, "{}", m.text());
    let member = s
        .anonymous()
        .with_token(m.json()["token"].as_str().unwrap());
    let r = member.get("/audit").await;
    assert_eq!((r.status, r.code().as_str()), (403, "missing_scope"));
    assert_eq!(r.json()["scope"], "audit:read");
    assert_eq!(member.get("/audit/export").await.status, 403);
    assert_eq!(member.get("/events").await.status, 200);
}

async fn secrets_never_reach_events(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    let token = c.post("/tokens", json!({ "name": "t" })).await.json()["token"]
        .as_str()
        .unwrap()
        .to_owned();
    let grant = c
        .post(
            "/connect/grants",
            json!({ "name": "g", "allowedScopes": ["projects:read"] }),
        )
        .await
        .json();
    let grant_secret = grant["secret"].as_str().unwrap().to_owned();
    let minted = s
        .anonymous()
        .with_token(&grant_secret)
        .post("/connect/token", json!({ "scopes": ["projects:read"] }))
        .await
        .json();
    let eph = minted["token"].as_str().unwrap().to_owned();
    for path in [
        "/events",
        "/audit",
        "/audit/export",
        "/tokens",
        "/connect/grants",
    ] {
        let body = c.get(path).await.text();
        for secret in [&token, &grant_secret, &eph, &s.token] {
            assert!(
                !body.contains(&secret[secret.len() - 30..]),
                "{path} leaks a secret"
            );
        }
    }
}
