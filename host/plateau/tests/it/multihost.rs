//! Several hosts on one PostgreSQL behave as one: tokens, idempotency
//! records, cursors and plugin switches are shared.

use std::time::{Duration, Instant};

use plateau_plugin_artifacts::fixtures;
use plateau_testkit::{Backend, Client, ServerOptions};
use reqwest::Method;
use serde_json::json;

use crate::{start, start_with};

/// Polls `check` for up to `limit`.
async fn eventually<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let until = Instant::now() + limit;
    while Instant::now() < until {
        if check().await {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hosts_on_one_postgres_act_as_one() {
    let a = start(Backend::Postgres).await;
    let mut options = ServerOptions::joining(&a);
    options = options.env("PLATEAU_BOOTSTRAP_TOKEN", &a.token);
    let b = start_with(options).await;
    let (ca, cb) = (a.client(), b.client());
    // Idempotency records and cursors are shared.
    let first = ca
        .request(Method::POST, "/projects")
        .idempotency_key("shared")
        .json(&json!({ "name": "p" }))
        .send()
        .await;
    let again = cb
        .request(Method::POST, "/projects")
        .idempotency_key("shared")
        .json(&json!({ "name": "p" }))
        .send()
        .await;
    assert_eq!(
        (first.status, again.header("idempotent-replayed")),
        (201, Some("true"))
    );
    assert_eq!(first.bytes, again.bytes);
    let page = ca.get("/projects?limit=1").await.json();
    let next = cb
        .get(&format!(
            "/projects?limit=1&cursor={}",
            page["nextCursor"].as_str().unwrap()
        ))
        .await;
    assert_eq!(
        next.status, 200,
        "a cursor from one host works on the other"
    );
    // A token revoked on one host is refused by the other within the auth cache time.
    let r = ca
        .post("/tokens", json!({ "scopes": ["projects:read"] }))
        .await
        .json();
    let (id, secret) = (
        r["id"].as_str().unwrap().to_owned(),
        r["token"].as_str().unwrap().to_owned(),
    );
    let on_b = b.anonymous().with_token(&secret);
    assert_eq!(on_b.get("/projects").await.status, 200);
    assert_eq!(ca.delete(&format!("/tokens/{id}")).await.status, 200);
    assert!(
        eventually(Duration::from_secs(5), || {
            let c = on_b.clone();
            async move { c.get("/projects").await.status == 401 }
        })
        .await
    );
    // A plugin switch made on one host is applied by the other within seconds.
    let admin = a.anonymous().with_cookie(&crate::admin::login(&a).await);
    let upload = |wasm: &'static [u8], activate: bool| {
        let admin = admin.clone();
        async move {
            admin
                .request(
                    Method::POST,
                    &format!("/admin/plugins/echo/versions?activate={activate}"),
                )
                .body("application/wasm", wasm.to_vec())
                .send()
                .await
        }
    };
    assert_eq!(upload(fixtures::ECHO, true).await.status, 201);
    let version_on = |c: Client| async move { c.get("/echo/version").await.text() };
    assert!(
        eventually(Duration::from_secs(5), || version_on(cb.clone())
            .then_eq("1.0.0"))
        .await
    );
    let v2 = upload(fixtures::ECHO_V2, false).await.json();
    let r = admin
        .post(
            "/admin/plugins/echo/switch",
            json!({ "digest": v2["digest"] }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(version_on(ca.clone()).await, "2.0.0");
    assert!(
        eventually(Duration::from_secs(5), || version_on(cb.clone())
            .then_eq("2.0.0"))
        .await
    );
}

trait ThenEq {
    fn then_eq(self, want: &'static str) -> impl std::future::Future<Output = bool>;
}

impl<F: std::future::Future<Output = String>> ThenEq for F {
    async fn then_eq(self, want: &'static str) -> bool {
        self.await == want
    }
}
