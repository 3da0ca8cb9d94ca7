//! Section 1.1 on plugin routes: a plugin's writes and the idempotency
//! record of its response are one commit, so a crash between the plugin's
//! call and the record keeps neither, and the client's retry runs the
//! plugin exactly once.

use std::os::unix::process::ExitStatusExt;

use plateau_plugin_artifacts::fixtures;
use plateau_testkit::{Backend, Client, Server, ServerOptions};
use reqwest::Method;

use crate::plugins::{admin, upload};
use crate::start_with;

crate::on_both_backends!(
    a_crash_before_the_record_keeps_nothing,
    client_errors_commit_and_server_errors_roll_back
);

/// Arms the crash point of `plateau_api::fault` (the test build has it).
const FAULT: &str = "PLATEAU_FAULT";

/// Starts a server with the echo fixture loaded.
async fn start_echo(options: ServerOptions) -> Server {
    let s = start_with(options).await;
    let admin = admin(&s).await;
    assert_eq!(
        upload(&admin, "echo", fixtures::ECHO, true).await.status,
        201
    );
    s
}

/// `POST /echo/incr/{counter}` under `key`: the plugin adds 1 to the
/// counter and answers its new value, an effect that shows every run.
fn incr(c: &Client, counter: &str, key: &str) -> plateau_testkit::Request {
    c.request(Method::POST, &format!("/echo/incr/{counter}"))
        .idempotency_key(key)
}

async fn a_crash_before_the_record_keeps_nothing(backend: Backend) {
    let mut s = start_echo(ServerOptions::new(backend).env(FAULT, "idempotency-record")).await;
    let c = s.client();
    // Without a key nothing reaches the crash point: a plain commit.
    let r = c.request(Method::POST, "/echo/incr/plain").send().await;
    assert_eq!((r.status, r.text().as_str()), (200, "1"));

    // The plugin runs, and the server dies (SIGKILL) where the response is
    // about to be recorded: where the plugin's writes used to be committed
    // already.
    let died = incr(&c, "sent", "once").try_send().await;
    assert!(died.is_err(), "the server answered: {died:?}");
    let status = s.exited().await;
    assert_eq!(
        status.signal(),
        Some(9),
        "killed at the crash point: {status}"
    );

    s.options.env.remove(FAULT);
    s.restart().await;
    let c = s.client();
    assert_eq!(c.get("/echo/kv/plain").await.text(), "1", "kept");
    assert_eq!(
        c.get("/echo/kv/sent").await.status,
        404,
        "nothing of the interrupted call is kept"
    );
    // The key is still reserved by the dead server until its lease ends.
    let r = incr(&c, "sent", "once").send().await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "idempotency_in_progress")
    );
    expire_lease(&s, "once").await;

    // The retry runs the plugin once; the next one replays it.
    let retried = incr(&c, "sent", "once").send().await;
    assert_eq!((retried.status, retried.text().as_str()), (200, "1"));
    assert_eq!(retried.header("idempotent-replayed"), None);
    let replayed = incr(&c, "sent", "once").send().await;
    assert_eq!(replayed.status, 200);
    assert_eq!(replayed.bytes, retried.bytes, "the replay is byte for byte");
    assert_eq!(replayed.header("idempotent-replayed"), Some("true"));
    assert_eq!(
        replayed.header("content-type"),
        retried.header("content-type")
    );
    assert_eq!(c.get("/echo/kv/sent").await.text(), "1", "one effect");
}

/// Under a key, a plugin's 4xx still commits its writes and frees the key,
/// and its 5xx keeps nothing, as on the plugin path without a key.
async fn client_errors_commit_and_server_errors_roll_back(backend: Backend) {
    let s = start_echo(ServerOptions::new(backend)).await;
    let c = s.client();
    let put = |key: &str, status: u16| {
        c.request(Method::PUT, &format!("/echo/kv/{key}?status={status}"))
            .idempotency_key(key)
            .body("text/plain", "v")
            .send()
    };
    assert_eq!(put("refused", 422).await.status, 422);
    assert_eq!(c.get("/echo/kv/refused").await.text(), "v", "4xx commits");
    let again = put("refused", 422).await;
    assert_eq!(again.status, 422);
    assert_eq!(
        again.header("idempotent-replayed"),
        None,
        "a 4xx frees its key"
    );
    assert_eq!(put("failed", 503).await.status, 503);
    assert_eq!(c.get("/echo/kv/failed").await.status, 404, "5xx discards");
    // A success under a key commits with its record.
    assert_eq!(put("stored", 201).await.status, 201);
    let replayed = put("stored", 201).await;
    assert_eq!(replayed.header("idempotent-replayed"), Some("true"));
    assert_eq!(c.get("/echo/kv/stored").await.text(), "v");
}

/// Ends the lease of the reservation of `key`, as 60 s without its server
/// would (`LOCK_MS`), instead of waiting for it. Fails unless the
/// reservation is still unfinished.
async fn expire_lease(s: &Server, key: &str) {
    sqlx::any::install_default_drivers();
    let url = match &s.database_url {
        Some(url) => url.clone(),
        None => format!(
            "sqlite://{}",
            s.data_dir.path().join("plateau.db").display()
        ),
    };
    let pool = sqlx::AnyPool::connect(&url).await.unwrap();
    let done = sqlx::query(
        "UPDATE idempotency_keys SET locked_until = 0 WHERE key = $1 AND state = 'running'",
    )
    .bind(key)
    .execute(&pool)
    .await
    .unwrap();
    assert_eq!(done.rows_affected(), 1, "the key {key} is unfinished");
    pool.close().await;
}
