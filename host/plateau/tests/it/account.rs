//! Section 4.1: /me, /usage, notification preferences; the CLI's create-org.

use plateau_testkit::Backend;
use serde_json::json;

use crate::{create_org, start, until};

crate::on_both_backends!(
    me_and_usage,
    plugin_requests_are_metered_per_organisation,
    notification_preferences,
    cli_creates_organizations
);

async fn me_and_usage(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    let me = c.get("/me").await.json();
    assert_eq!(me["user"]["role"], "owner");
    assert_eq!(me["organization"]["plan"], "free");
    assert_eq!(me["token"]["scopes"], json!(["*"]));
    c.post("/projects", json!({ "name": "a" })).await;
    c.post(
        "/connect/grants",
        json!({ "name": "g", "allowedScopes": ["projects:read"] }),
    )
    .await;
    let usage = c.get("/usage").await.json();
    assert_eq!(usage["plan"], "free");
    assert_eq!(usage["limits"]["apps"], 1);
    assert_eq!(usage["limits"]["storageGb"], 1);
    assert_eq!(usage["limits"]["bandwidthGb"], 100);
    assert_eq!(usage["counts"]["projects"], 2);
    assert_eq!(usage["counts"]["connectGrants"], 1);
    assert_eq!(usage["counts"]["activeTokens"], 1);
    assert_eq!(usage["cost"]["planCents"], 0);
    let scale = s
        .anonymous()
        .with_token(&create_org(&s, "Big", "scale").await);
    let usage = scale.get("/usage").await.json();
    assert_eq!(
        (
            usage["limits"]["apps"].as_i64(),
            usage["cost"]["planCents"].as_i64()
        ),
        (Some(20), Some(8900))
    );
}

/// Every plugin request's fuel (the `plateau-fuel` header) reaches its
/// organisation's `/usage`, and no other organisation's.
async fn plugin_requests_are_metered_per_organisation(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    let other = s
        .anonymous()
        .with_token(&create_org(&s, "Other", "pro").await);
    assert_eq!(c.get("/usage").await.json()["plugins"], json!([]));
    let mut fuel = 0;
    for path in ["/flags", "/flags/missing", "/flags?limit=1"] {
        let r = c.get(path).await;
        assert_eq!(r.header("plateau-plugin").map(|p| &p[..6]), Some("flags@"));
        fuel += r.header("plateau-fuel").unwrap().parse::<i64>().unwrap();
    }
    let usage = until(&c, "/usage", "the flags plugin's requests", |u| {
        u["plugins"][0]["requests"] == 3
    })
    .await;
    assert_eq!(
        usage["plugins"],
        json!([{ "plugin": "flags", "requests": 3, "fuel": fuel }])
    );
    assert_eq!(other.get("/usage").await.json()["plugins"], json!([]));
}

async fn notification_preferences(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    let prefs = c.get("/notifications/preferences").await.json();
    let cats: Vec<&str> = prefs["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["category"].as_str().unwrap())
        .collect();
    assert_eq!(cats, ["alarms", "anomalies", "spend"]);
    assert!(
        prefs["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["emailEnabled"] == true)
    );
    let r = c
        .put(
            "/notifications/preferences",
            json!({ "category": "spend", "emailEnabled": false }),
        )
        .await;
    assert_eq!(r.status, 200);
    let spend = &r.json()["items"][2];
    assert_eq!(
        (
            spend["emailEnabled"].as_bool(),
            spend["updatedAt"].is_string()
        ),
        (Some(false), true)
    );
    assert_eq!(
        c.get("/notifications/preferences").await.json()["items"][2]["emailEnabled"],
        false
    );
    let r = c
        .put(
            "/notifications/preferences",
            json!({ "category": "weather", "emailEnabled": true }),
        )
        .await;
    assert_eq!(
        (r.status, r.json()["errors"][0]["field"].as_str()),
        (400, Some("category"))
    );
    assert_eq!(
        c.get("/events?type=notification_preference.updated")
            .await
            .json()["total"],
        1
    );
}

async fn cli_creates_organizations(backend: Backend) {
    let s = start(backend).await;
    let token = create_org(&s, "Acme", "starter").await;
    let me = s.anonymous().with_token(&token).get("/me").await.json();
    assert_eq!(
        (
            me["organization"]["name"].as_str(),
            me["organization"]["plan"].as_str()
        ),
        (Some("Acme"), Some("starter"))
    );
    let projects = s
        .anonymous()
        .with_token(&token)
        .get("/projects")
        .await
        .json();
    assert_eq!(projects["items"][0]["isDefault"], true);
    let out = s
        .command(&["admin", "create-org", "Bad", "--plan", "gold"])
        .await;
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown plan"));
}
