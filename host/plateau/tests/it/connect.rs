//! Section 4.2: the connect credential broker.

use plateau_testkit::Backend;
use serde_json::json;

use crate::{event_types, start};

crate::on_both_backends!(
    grants_mint_within_their_ceiling,
    paused_deleted_and_project_limited_grants
);

async fn grants_mint_within_their_ceiling(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    let r = c
        .post(
            "/connect/grants",
            json!({
                "name": "agent", "allowedScopes": ["projects:read", "projects:write"],
                "maxTtlSeconds": 120, "maxCostCents": 300,
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let secret = r.json()["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("pltc_"));
    let list = c.get("/connect/grants").await;
    assert!(
        !list.text().contains(&secret[5..]),
        "lists never show the secret"
    );
    let broker = s.anonymous().with_token(&secret);
    // The grant secret is no API token...
    assert_eq!(broker.get("/me").await.status, 401);
    assert_eq!(broker.get("/projects").await.code(), "token_invalid");
    // ... and an API token is no grant secret.
    assert_eq!(
        c.post("/connect/token", json!({ "scopes": ["projects:read"] }))
            .await
            .status,
        401
    );
    let r = broker.post("/connect/token", json!({ "scopes": ["projects:read"], "ttlSeconds": 999_999, "maxCostCents": 10_000, "purpose": "nightly sync" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let minted = r.json();
    assert_eq!(minted["scopes"], json!(["projects:read"]));
    assert_eq!(minted["maxCostCents"], 300, "spend is clamped to the grant");
    assert_eq!(minted["purpose"], "nightly sync");
    let created = minted["createdAt"].as_str().unwrap();
    let expires = minted["expiresAt"].as_str().unwrap();
    assert!(
        seconds(expires) - seconds(created) <= 120,
        "{created} -> {expires}: ttl clamped"
    );
    let eph = s.anonymous().with_token(minted["token"].as_str().unwrap());
    assert_eq!(eph.get("/projects").await.status, 200);
    assert_eq!(
        eph.post("/projects", json!({ "name": "x" })).await.status,
        403
    );
    let r = broker
        .post(
            "/connect/token",
            json!({ "scopes": ["projects:read", "tokens:write"] }),
        )
        .await;
    assert_eq!((r.status, r.code().as_str()), (403, "scope_outside_grant"));
    assert!(
        r.json()["detail"]
            .as_str()
            .unwrap()
            .contains("tokens:write")
    );
    let r = broker.post("/connect/token", json!({})).await;
    assert_eq!(r.json()["errors"][0]["field"], "scopes");
    // A grant cannot allow more than its creator has.
    let reader = crate::mint(&s, json!({ "scopes": ["connect:write", "projects:read"] })).await;
    let r = s
        .anonymous()
        .with_token(&reader)
        .post(
            "/connect/grants",
            json!({ "name": "x", "allowedScopes": ["projects:write"] }),
        )
        .await;
    assert_eq!((r.status, r.code().as_str()), (403, "scope_exceeds_caller"));
}

fn seconds(t: &str) -> i64 {
    let h: i64 = t[11..13].parse().unwrap();
    let m: i64 = t[14..16].parse().unwrap();
    let s: i64 = t[17..19].parse().unwrap();
    let d: i64 = t[8..10].parse().unwrap();
    ((d * 24 + h) * 60 + m) * 60 + s
}

async fn paused_deleted_and_project_limited_grants(backend: Backend) {
    let s = start(backend).await;
    let c = s.client();
    let project = c
        .post("/projects", json!({ "name": "scoped" }))
        .await
        .json();
    let pid = project["id"].as_str().unwrap().to_owned();
    let other = c
        .post("/projects", json!({ "name": "elsewhere" }))
        .await
        .json();
    let oid = other["id"].as_str().unwrap().to_owned();
    let g = c.post("/connect/grants", json!({ "name": "p", "allowedScopes": ["projects:read", "projects:write"], "projectId": pid })).await.json();
    let gid = g["id"].as_str().unwrap().to_owned();
    let broker = s.anonymous().with_token(g["secret"].as_str().unwrap());
    let mint = || {
        broker.post(
            "/connect/token",
            json!({ "scopes": ["projects:read", "projects:write"] }),
        )
    };
    let minted = mint().await.json();
    assert_eq!(minted["projectId"], pid.as_str());
    let eph = s.anonymous().with_token(minted["token"].as_str().unwrap());
    let seen = eph.get("/projects").await.json();
    assert_eq!(seen["total"], 1);
    assert_eq!(seen["items"][0]["id"], pid.as_str());
    assert_eq!(eph.get(&format!("/projects/{oid}")).await.status, 404);
    assert_eq!(eph.delete(&format!("/projects/{oid}")).await.status, 404);
    assert_eq!(
        eph.post("/projects", json!({ "name": "nope" }))
            .await
            .code(),
        "project_limited_token"
    );
    // Paused: no mints; resumed: mints again.
    let r = c
        .patch(
            &format!("/connect/grants/{gid}"),
            json!({ "enabled": false }),
        )
        .await;
    assert_eq!(
        (r.status, r.json()["enabled"].as_bool()),
        (200, Some(false))
    );
    let r = mint().await;
    assert_eq!((r.status, r.code().as_str()), (403, "grant_paused"));
    assert_eq!(
        c.patch(
            &format!("/connect/grants/{gid}"),
            json!({ "enabled": true })
        )
        .await
        .status,
        200
    );
    assert_eq!(mint().await.status, 201);
    // Deleted: refused for good.
    assert_eq!(
        c.delete(&format!("/connect/grants/{gid}")).await.status,
        200
    );
    let r = mint().await;
    assert_eq!((r.status, r.code().as_str()), (401, "token_invalid"));
    assert_eq!(
        c.patch(
            &format!("/connect/grants/{gid}"),
            json!({ "enabled": true })
        )
        .await
        .status,
        404
    );
    let audit = c.get("/audit?resourceType=connect_grant").await.json();
    let kinds = event_types(&audit);
    assert_eq!(
        kinds,
        [
            "connect_grant.deleted",
            "connect_grant.resumed",
            "connect_grant.paused",
            "connect_grant.created"
        ]
    );
}
