//! The disk quota: a database that outgrows its `diskGb` turns read-only
//! for every session, pooled ones included, with an event; a session that
//! turns read-only off for itself frees space, and writes come back.

use plateau_testkit::{Backend, ServerOptions};
use serde_json::json;
use sqlx::Executor as _;

use super::{Processes, connection, create, psql, psql_ok, sqlx_connect};
use crate::start_with;

const WRITE: &str = "INSERT INTO notes VALUES ('hello')";

/// Waits until a write through `uri` fails for being read-only (`full`)
/// or succeeds (`!full`).
async fn until_writes(uri: &str, full: bool) {
    for _ in 0..300 {
        let out = psql(uri, WRITE);
        let refused = String::from_utf8_lossy(&out.stderr).contains("read-only transaction");
        if (full && refused) || (!full && out.status.success()) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    panic!(
        "writes were never {}",
        if full { "refused" } else { "allowed" }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_over_its_disk_quota_turns_read_only() {
    let server = start_with(
        ServerOptions::new(Backend::Sqlite).env("PLATEAU_DATABASE_DISK_CHECK_MS", "300"),
    )
    .await;
    let _processes = Processes::of(&server);
    let c = server.client();
    let d = create(&c, json!({ "name": "quota", "diskGb": 1 })).await;
    let id = d["id"].as_str().unwrap().to_owned();
    let conn = connection(&c, &id).await;
    let pooled = conn["uri"].as_str().unwrap().to_owned();
    let direct = conn["writeUri"].as_str().unwrap().to_owned();
    psql_ok(
        &direct,
        "CREATE UNLOGGED TABLE big (b bytea); \
         ALTER TABLE big ALTER b SET STORAGE EXTERNAL; \
         CREATE TABLE notes (t text)",
    );
    let metrics = c.get(&format!("/databases/{id}/metrics")).await.json();
    assert_eq!(metrics["readOnly"], false, "{metrics}");
    assert_eq!(metrics["diskQuotaBytes"], 1_i64 << 30, "{metrics}");

    // Just over 1 GiB: unlogged (no WAL) and stored as is (no compression).
    psql_ok(
        &direct,
        "INSERT INTO big SELECT convert_to(repeat('x', 1048576), 'UTF8') \
         FROM generate_series(1, 1100)",
    );
    until_writes(&pooled, true).await;
    until_writes(&direct, true).await;
    assert_eq!(psql_ok(&pooled, "SELECT count(*) FROM big"), "1100");
    let metrics = c.get(&format!("/databases/{id}/metrics")).await.json();
    assert_eq!(metrics["readOnly"], true, "{metrics}");
    assert!(
        metrics["diskUsedBytes"].as_i64().unwrap() > 1 << 30,
        "{metrics}"
    );
    // The console's writes are refused alike, with PostgreSQL's reason.
    let r = c
        .post(
            &format!("/databases/{id}/query"),
            json!({ "sql": WRITE, "write": true }),
        )
        .await;
    assert!(r.text().contains("read-only"), "{}", r.text());
    // The host's own work goes on: a role can still be made.
    let r = c
        .post(
            &format!("/databases/{id}/roles"),
            json!({ "name": "cleaner", "password": "cleaner-password" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());

    // A session frees space for itself; then writes come back for all.
    let mut session = sqlx_connect(&direct).await.unwrap();
    session
        .execute("SET default_transaction_read_only = off")
        .await
        .unwrap();
    session.execute("TRUNCATE big").await.unwrap();
    until_writes(&pooled, false).await;
    let metrics = c.get(&format!("/databases/{id}/metrics")).await.json();
    assert_eq!(metrics["readOnly"], false, "{metrics}");

    let events = c.get("/events?limit=200").await.text();
    assert!(events.contains("database.disk_full"), "{events}");
    assert!(events.contains("database.disk_ok"), "{events}");
}
