//! Black-box tests: each starts the real `plateau` binary on a fresh
//! store and drives it over HTTP. Every test runs twice, on embedded
//! SQLite and on a throwaway PostgreSQL server.

mod account;
mod admin;
mod auth;
mod checks;
mod connect;
mod email;
mod errors;
mod events;
mod flags;
mod heartbeats;
mod idempotency;
mod jobs;
mod multihost;
mod pagination;
mod plugin_oci;
mod plugins;
mod projects;
mod registry;
mod server;

use plateau_testkit::{Backend, Server, ServerOptions};
use serde_json::Value;

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
