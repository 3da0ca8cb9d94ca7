//! Black-box tests: each starts the real `plateau` binary on a fresh
//! store and drives it over HTTP. Every test runs twice, on embedded
//! SQLite and on a throwaway PostgreSQL server.

mod account;
mod admin;
mod agent;
mod alarms;
mod analytics;
mod anomalies;
mod apps;
mod audit_export;
mod auth;
mod cache;
mod checks;
mod cli;
mod config;
mod connect;
mod console;
mod cost_ceiling;
mod cron;
mod cron_container;
mod cron_due;
mod cron_missed;
mod databases;
mod email;
mod error_tracking;
mod errors;
mod events;
mod flags;
mod heartbeats;
mod http_details;
mod idempotency;
mod ids;
mod input_rules;
mod jobs;
mod log_drains;
mod manifest;
mod members;
mod metrics;
mod multihost;
mod openapi_conformance;
mod openapi_document;
mod otel;
mod pagination;
mod plans;
mod plugin_idempotency;
mod plugin_oci;
mod plugins;
mod projects;
mod queues;
mod registry;
mod rewards;
mod runner_volumes;
mod runners;
mod server;
mod slow_clients;
mod spend;
mod spend_lift;
mod standard_webhooks;
mod status_pages;
mod storage;
mod storage_objects;
mod webhooks;
mod workflows;

use std::time::Duration;

use plateau_testkit::{Backend, Client, Server, ServerOptions};
use serde_json::{Value, json};

pub async fn start(backend: Backend) -> Server {
    Server::start(env!("CARGO_BIN_EXE_plateau"), ServerOptions::new(backend)).await
}

pub async fn start_with(options: ServerOptions) -> Server {
    Server::start(env!("CARGO_BIN_EXE_plateau"), options).await
}

/// Mints a token with `body` using the owner token; returns the secret.
pub async fn mint(server: &Server, body: Value) -> String {
    let r = server.client().post("/tokens", body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["token"].as_str().unwrap().to_owned()
}

/// Creates another organisation with the CLI; returns its owner token.
pub async fn create_org(server: &Server, name: &str, plan: &str) -> String {
    let out = server
        .command(&["admin", "create-org", name, "--plan", plan])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("owner token (shown once): "))
        .expect("the owner token is printed")
        .to_owned()
}

/// Generates `mod sqlite` and `mod postgres`, each with one `#[tokio::test]`
/// per listed `async fn(Backend)`.
#[macro_export]
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(plateau_testkit::Backend::Sqlite).await })*
        }
        mod postgres {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() { super::$name(plateau_testkit::Backend::Postgres).await })*
        }
    };
}

/// Moves the host clock of a `PLATEAU_CLOCK=manual` server (admin session).
pub async fn advance(admin: &Client, ms: u64) {
    let r = admin.post("/admin/clock", json!({ "advanceMs": ms })).await;
    assert_eq!(r.status, 200, "{}", r.text());
}

/// Polls `path` until `done` holds for its JSON (jobs and deliveries run
/// asynchronously); the JSON.
pub async fn until(c: &Client, path: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        let r = c.get(path).await;
        assert_eq!(r.status, 200, "{}", r.text());
        last = r.json();
        if done(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("waited for {what} on {path}; last saw {last}");
}

/// The `type` of each event of a page of `/events`, `/audit` or
/// `/admin/events`, in order.
pub fn event_types(page: &Value) -> Vec<&str> {
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect()
}

/// Mints a token of the apps tests' organisation with `scopes`.
pub async fn mint_for(env: &apps::Apps, scopes: &[&str]) -> String {
    let r = env
        .client()
        .post("/tokens", json!({ "scopes": scopes }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["token"].as_str().unwrap().to_owned()
}

/// Polls `check` every 100 ms until it gives a value, for at most `within`
/// (a bound for a broken cluster, not a timed assertion).
pub async fn eventually<T, F, Fut>(what: &str, within: std::time::Duration, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    eventually_or(what, within, check, || ()).await
}

/// [`eventually`], calling `explain` (to print what tells why) before
/// it fails.
pub async fn eventually_or<T, F, Fut>(
    what: &str,
    within: std::time::Duration,
    mut check: F,
    explain: impl FnOnce(),
) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + within;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if tokio::time::Instant::now() >= deadline {
            explain();
            panic!("waited {within:?} for {what}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
