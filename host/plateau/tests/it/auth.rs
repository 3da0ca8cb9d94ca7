//! Section 5: tokens, scopes and the 401/403 rules.

use plateau_testkit::Backend;
use serde_json::json;

use crate::{mint, start};

crate::on_both_backends!(
    refusals_of_bad_credentials,
    scopes_are_enforced_and_named,
    minting_never_exceeds_the_creator,
    tokens_are_masked_and_revocable
);

async fn refusals_of_bad_credentials(backend: Backend) {
    let s = start(backend).await;
    let anon = s.anonymous();
    let r = anon.get("/me").await;
    assert_eq!((r.status, r.code().as_str()), (401, "unauthenticated"));
    assert_eq!(r.header("content-type"), Some("application/problem+json"));
    for bad in [
        "plt_short",
        "Basic abc",
        "plt_!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!",
    ] {
        let r = anon
            .request(reqwest::Method::GET, "/me")
            .header("authorization", &format!("Bearer {bad}"))
            .send()
            .await;
        assert_eq!(
            (r.status, r.code().as_str()),
            (401, "token_invalid"),
            "{bad}"
        );
    }
    let unknown = plateau_testkit::random_token();
    let r = anon.with_token(&unknown).get("/me").await;
    assert_eq!((r.status, r.code().as_str()), (401, "token_invalid"));
    // Expired.
    let short = mint(&s, json!({ "expiresInSeconds": 1 })).await;
    assert_eq!(anon.with_token(&short).get("/me").await.status, 200);
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let r = anon.with_token(&short).get("/me").await;
    assert_eq!((r.status, r.code().as_str()), (401, "token_expired"));
    // Public routes need nothing.
    assert_eq!(anon.get("/changelog").await.status, 200);
    assert_eq!(anon.get("/health").await.status, 200);
}

async fn scopes_are_enforced_and_named(backend: Backend) {
    let s = start(backend).await;
    let reader = mint(&s, json!({ "scopes": ["projects:read"] })).await;
    let c = s.anonymous().with_token(&reader);
    assert_eq!(c.get("/projects").await.status, 200);
    assert_eq!(c.get("/me").await.status, 200, "any valid token reads /me");
    let r = c.post("/projects", json!({ "name": "x" })).await;
    assert_eq!(r.status, 403);
    assert_eq!(r.code(), "missing_scope");
    assert_eq!(r.json()["scope"], "projects:write");
    assert!(
        r.json()["detail"]
            .as_str()
            .unwrap()
            .contains("projects:write")
    );
    let r = c.get("/usage").await;
    assert_eq!(
        (r.status, r.json()["scope"].as_str()),
        (403, Some("usage:read"))
    );
}

async fn minting_never_exceeds_the_creator(backend: Backend) {
    let s = start(backend).await;
    let limited = mint(&s, json!({ "scopes": ["tokens:write", "projects:read"], "expiresInSeconds": 600, "maxCostCents": 500 })).await;
    let c = s.anonymous().with_token(&limited);
    let r = c
        .post("/tokens", json!({ "scopes": ["projects:write"] }))
        .await;
    assert_eq!((r.status, r.code().as_str()), (403, "scope_exceeds_caller"));
    let r = c.post("/tokens", json!({ "scopes": ["*"] })).await;
    assert_eq!(r.status, 403);
    // Children inherit the ceilings: scopes, expiry and spend.
    let r = c
        .post(
            "/tokens",
            json!({ "expiresInSeconds": 86400, "maxCostCents": 9999 }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let child = r.json();
    assert_eq!(child["scopes"], json!(["projects:read", "tokens:write"]));
    assert_eq!(child["maxCostCents"], 500);
    let parent_expiry =
        s.anonymous().with_token(&limited).get("/me").await.json()["token"]["expiresAt"].clone();
    assert!(child["expiresAt"].as_str().unwrap() <= parent_expiry.as_str().unwrap());
    // Unknown scope names are refused, naming the field.
    let r = s
        .client()
        .post(
            "/tokens",
            json!({ "scopes": ["projects:read", "nope:read"] }),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["errors"][0]["field"], "scopes[1]");
    // The default lifetime is 90 days.
    let r = s.client().post("/tokens", json!({ "name": "ci" })).await;
    let expires = r.json()["expiresAt"].as_str().unwrap().to_owned();
    let created = r.json()["createdAt"].as_str().unwrap().to_owned();
    let days = |t: &str| t[..10].to_owned();
    assert_ne!(days(&expires), days(&created));
    let me = s
        .anonymous()
        .with_token(r.json()["token"].as_str().unwrap())
        .get("/me")
        .await
        .json();
    let exp = me["token"]["expiresAt"].as_str().unwrap();
    assert_eq!(exp, expires);
    assert!(
        days_between(&created, &expires) == 90,
        "{created} -> {expires}"
    );
}

fn days_between(a: &str, b: &str) -> i64 {
    let day = |s: &str| {
        let y: i64 = s[0..4].parse().unwrap();
        let m: i64 = s[5..7].parse().unwrap();
        let d: i64 = s[8..10].parse().unwrap();
        // Days from civil (Howard Hinnant's algorithm).
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
        era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy
    };
    day(b) - day(a)
}

async fn tokens_are_masked_and_revocable(backend: Backend) {
    let s = start(backend).await;
    let r = s
        .client()
        .post(
            "/tokens",
            json!({ "name": "deploy", "scopes": ["projects:read"] }),
        )
        .await;
    assert_eq!(r.status, 201);
    let secret = r.json()["token"].as_str().unwrap().to_owned();
    let id = r.json()["id"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("plt_") && secret.len() == 44);
    let list = s.client().get("/tokens").await;
    assert!(
        !list.text().contains(&secret[4..]),
        "a list never shows a secret"
    );
    assert!(!list.text().contains(&s.token[4..]));
    let entry = list.json()["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap()
        .clone();
    assert_eq!(entry["maskedToken"], format!("plt_…{}", &secret[40..]));
    let r = s.client().delete(&format!("/tokens/{id}")).await;
    assert_eq!(
        (r.status, r.json()["status"].as_str()),
        (200, Some("revoked"))
    );
    let r = s.anonymous().with_token(&secret).get("/projects").await;
    assert_eq!((r.status, r.code().as_str()), (401, "token_revoked"));
    assert_eq!(
        s.client().delete("/tokens/tok_doesnotexist").await.status,
        404
    );
}
