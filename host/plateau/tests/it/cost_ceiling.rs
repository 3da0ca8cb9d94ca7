//! A token's `maxCostCents` (spec sections 2, 4.1, 4.2): the usage of the
//! resources a token created is attributed to it (`spentCents` in
//! `GET /me`), and a call that would start another once that cost has
//! reached the ceiling is refused with 403 `cost_ceiling_reached` naming
//! the ceiling, directly and through a manifest.

use std::time::Duration;

use plateau_testkit::{Backend, ServerOptions};
use serde_json::json;

use crate::{eventually, mint, start_with};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_past_a_tokens_cost_ceiling_are_refused() {
    let s =
        start_with(ServerOptions::new(Backend::Sqlite).env("PLATEAU_USAGE_SAMPLE_MS", "300")).await;
    let _caches = crate::cache::Processes::of(&s);
    let c = s.client();

    // A ceiling of 0: nothing may be started, directly or by a manifest.
    let zero = c.with_token(&mint(&s, json!({ "name": "zero", "maxCostCents": 0 })).await);
    let r = zero
        .post(
            "/caches",
            json!({ "name": "z", "memoryMb": 32, "replicas": 0 }),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.json()["code"], "cost_ceiling_reached", "{}", r.text());
    assert!(r.text().contains("maxCostCents is 0"), "{}", r.text());
    let r = zero
        .post(
            "/manifest",
            json!({ "project": "p", "apps": [], "redis": [{ "name": "m", "replicas": 0 }] }),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(r.json()["item"], "redis.m", "{}", r.text());
    assert!(r.text().contains("maxCostCents is 0"), "{}", r.text());

    // A ceiling of 1 cent: the first cache starts; its usage is the
    // token's; once it reaches the ceiling the next start is refused.
    let one = c.with_token(&mint(&s, json!({ "name": "one", "maxCostCents": 1 })).await);
    let r = one
        .post(
            "/caches",
            json!({ "name": "first", "memoryMb": 32, "replicas": 0 }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_owned();
    c.wait_running(&format!("/caches/{id}")).await;
    let spent = eventually(
        "the cache's usage to be the token's",
        Duration::from_secs(60),
        || async {
            let me = one.get("/me").await.json();
            let spent = me["token"]["spentCents"].as_i64().unwrap();
            (spent >= 1).then_some(spent)
        },
    )
    .await;
    eprintln!("token with maxCostCents 1: spentCents {spent} once its cache ran");
    // The spend is kept on the token as the usage is written: the list of
    // tokens shows it.
    let tokens = c.get("/tokens").await.json();
    let listed = tokens["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "one")
        .unwrap_or_else(|| panic!("token one in {tokens}"))
        .clone();
    assert!(listed["spentCents"].as_i64().unwrap() >= 1, "{listed}");
    assert_eq!(listed["maxCostCents"], 1, "{listed}");
    let r = one
        .post(
            "/caches",
            json!({ "name": "second", "memoryMb": 32, "replicas": 0 }),
        )
        .await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert!(r.text().contains("maxCostCents is 1"), "{}", r.text());

    // Another token's resources are not attributed to it.
    let other = c.with_token(&mint(&s, json!({ "name": "other", "maxCostCents": 1 })).await);
    let me = other.get("/me").await.json();
    assert_eq!(me["token"]["spentCents"], 0, "{me}");
    let owner = c.get("/me").await.json();
    assert_eq!(owner["token"]["spentCents"], 0, "{owner}");
}
