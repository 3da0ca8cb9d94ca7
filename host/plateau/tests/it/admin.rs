//! The operator's admin API, behind a session cookie.

use plateau_testkit::{Backend, Server};
use serde_json::json;

use crate::start;

/// Logs in as the operator; returns the cookie pair to send.
pub async fn login(s: &Server) -> String {
    let r = s
        .anonymous()
        .post("/admin/login", json!({ "password": s.admin_password }))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let cookie = r.header("set-cookie").unwrap();
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    cookie.split(';').next().unwrap().to_owned()
}

crate::on_both_backends!(operator_sessions_manage_organizations);

async fn operator_sessions_manage_organizations(backend: Backend) {
    let s = start(backend).await;
    let r = s
        .anonymous()
        .post("/admin/login", json!({ "password": "wrong" }))
        .await;
    assert_eq!((r.status, r.code().as_str()), (401, "invalid_credentials"));
    // Tokens do not open the admin API, whatever their scopes: a valid
    // one is refused with 403, none with 401.
    let r = s.client().get("/admin/organizations").await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (403, "admin_session_required")
    );
    let r = s.anonymous().get("/admin/organizations").await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (401, "admin_session_required")
    );
    let admin = s.anonymous().with_cookie(&login(&s).await);
    let r = admin
        .post(
            "/admin/organizations",
            json!({ "name": "Gamma", "plan": "pro" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let owner = r.json()["owner"]["token"].as_str().unwrap().to_owned();
    let me = s.anonymous().with_token(&owner).get("/me").await.json();
    assert_eq!(me["organization"]["plan"], "pro");
    let r = admin
        .post(
            "/admin/organizations",
            json!({ "name": "Delta", "plan": "platinum" }),
        )
        .await;
    assert_eq!(
        (r.status, r.json()["errors"][0]["field"].as_str()),
        (400, Some("plan"))
    );
    let orgs = admin.get("/admin/organizations?limit=1").await.json();
    assert_eq!(orgs["total"], 2);
    assert!(orgs["nextCursor"].is_string());
    // The operator's actions are in the organisation's audit log.
    let audit = s
        .anonymous()
        .with_token(&owner)
        .get("/audit?category=members")
        .await
        .json();
    assert!(
        audit["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["actor"]["type"] == "admin")
    );
    let r = admin.post("/admin/logout", json!({})).await;
    assert_eq!(r.status, 204);
    assert_eq!(admin.get("/admin/organizations").await.status, 401);
}
