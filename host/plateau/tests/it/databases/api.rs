//! The clusters: create, connect through each URI with psql and sqlx,
//! settings from the spec, plan limits, versions, tenants and scopes,
//! restart adoption, deletion.

use std::time::Duration;

use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::json;
use sqlx::Row;

use super::{Processes, connection, create, psql, psql_ok, sqlx_connect};
use crate::{create_org, mint, on_both_backends, start, start_with};

async fn clusters(backend: Backend) {
    let server = start(backend).await;
    let _processes = Processes::of(&server);
    let c = server.client();

    let d = create(&c, json!({ "name": "main", "memoryMb": 256 })).await;
    let id = d["id"].as_str().unwrap().to_owned();
    assert_eq!(d["version"], "17", "{d}");
    assert_eq!(d["status"], "running", "{d}");
    assert_eq!(d["members"][0]["role"], "leader", "{d}");
    assert_eq!(d["members"][0]["healthy"], true, "{d}");

    let conn = connection(&c, &id).await;
    let uri = conn["uri"].as_str().unwrap();
    let write_uri = conn["writeUri"].as_str().unwrap();
    assert_ne!(uri, write_uri);
    assert_eq!(conn["readUri"], serde_json::Value::Null);
    let user = conn["username"].as_str().unwrap();
    assert!(user.starts_with("app_"), "{conn}");

    // psql, straight to the leader and through the pool.
    psql_ok(
        write_uri,
        "CREATE TABLE notes (id int PRIMARY KEY, body text)",
    );
    psql_ok(uri, "INSERT INTO notes VALUES (1, 'through the pool')");
    assert_eq!(
        psql_ok(write_uri, "SELECT body FROM notes"),
        "through the pool"
    );
    assert_eq!(psql_ok(uri, "SELECT current_user"), user);
    assert_eq!(
        psql_ok(
            uri,
            "SELECT rolsuper FROM pg_roles WHERE rolname = current_user"
        ),
        "f"
    );
    // The settings follow memoryMb.
    assert_eq!(psql_ok(write_uri, "SHOW shared_buffers"), "64MB");
    assert_eq!(psql_ok(write_uri, "SHOW max_connections"), "64");

    // sqlx: bound parameters straight to the leader, the simple protocol
    // through the pool in transaction mode.
    let mut leader = sqlx_connect(write_uri).await.unwrap();
    sqlx::query("INSERT INTO notes VALUES ($1, $2)")
        .bind(2)
        .bind("bound")
        .execute(&mut leader)
        .await
        .unwrap();
    let row = sqlx::query("SELECT body FROM notes WHERE id = $1")
        .bind(2)
        .fetch_one(&mut leader)
        .await
        .unwrap();
    assert_eq!(row.get::<String, _>(0), "bound");
    let mut pooled = sqlx_connect(uri).await.unwrap();
    let rows = sqlx::raw_sql("SELECT count(*)::text FROM notes")
        .fetch_all(&mut pooled)
        .await
        .unwrap();
    assert_eq!(rows[0].get::<String, _>(0), "2");

    // Listing, reading, renaming: the connection does not change.
    let r = c.get("/databases?limit=1").await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["total"], 1);
    assert_eq!(r.json()["items"][0]["id"], id.as_str());
    let r = c
        .patch(
            &format!("/databases/{id}"),
            json!({ "name": "renamed", "backupRetentionDays": 14 }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["name"], "renamed");
    assert_eq!(r.json()["backupRetentionDays"], 14);
    assert_eq!(connection(&c, &id).await["uri"], conn["uri"]);

    // The free plan has one database and 1 GB of database disk.
    let r = c.post("/databases", json!({ "name": "second" })).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["code"], "plan_limit_reached");
    let r = c
        .post("/databases", json!({ "name": "bad", "version": "14" }))
        .await;
    assert_eq!(r.status, 400, "{}", r.text());

    // Scopes and tenants.
    let reader = Client::new(&server.url)
        .with_token(&mint(&server, json!({ "scopes": ["databases:read"] })).await);
    assert_eq!(reader.get(&format!("/databases/{id}")).await.status, 200);
    let r = reader.post("/databases", json!({ "name": "x" })).await;
    assert_eq!(r.status, 403, "{}", r.text());
    assert_eq!(reader.delete(&format!("/databases/{id}")).await.status, 403);
    let other = Client::new(&server.url).with_token(&create_org(&server, "other", "pro").await);
    assert_eq!(other.get(&format!("/databases/{id}")).await.status, 404);
    assert_eq!(
        other
            .get(&format!("/databases/{id}/connection"))
            .await
            .status,
        404
    );
    assert_eq!(other.delete(&format!("/databases/{id}")).await.status, 404);
    // Another organisation's cluster has its own role and password, which
    // get nothing from this one.
    let theirs = create(&other, json!({ "name": "theirs" })).await;
    let their_conn = connection(&other, theirs["id"].as_str().unwrap()).await;
    let their_user = their_conn["username"].as_str().unwrap();
    let their_password = their_conn["password"].as_str().unwrap();
    let crossed = format!(
        "postgresql://{their_user}:{their_password}@{}:{}/{}",
        conn["host"].as_str().unwrap(),
        conn["writePort"],
        conn["database"].as_str().unwrap()
    );
    let out = psql(&crossed, "SELECT 1");
    assert!(!out.status.success(), "another cluster's role got in");
    let crossed_pool = crossed.replace(
        &format!(":{}/", conn["writePort"]),
        &format!(":{}/", conn["port"]),
    );
    assert!(!psql(&crossed_pool, "SELECT 1").status.success());
    assert_eq!(
        psql_ok(
            their_conn["uri"].as_str().unwrap(),
            "SELECT count(*) FROM pg_tables WHERE tablename = 'notes'"
        ),
        "0"
    );

    // Delete: the servers stop and the data goes.
    let dir = server.data_dir.path().join("databases").join(&id);
    assert!(dir.exists());
    super::delete(&c, &id).await;
    assert!(!dir.exists());
    assert!(!psql(write_uri, "SELECT 1").status.success());
    assert!(!psql(uri, "SELECT 1").status.success());
    assert_eq!(c.get(&format!("/databases/{id}")).await.status, 404);
    // The slot is free again.
    create(&c, json!({ "name": "again", "version": "15" })).await;
}

/// A restart of `plateau serve` adopts the running servers; a leader that
/// dies is started again by the supervisor, with its data.
async fn restart_adopts(backend: Backend) {
    let mut server = start(backend).await;
    let _processes = Processes::of(&server);
    let c = server.client();
    let d = create(&c, json!({ "name": "kept", "version": "16" })).await;
    let id = d["id"].as_str().unwrap().to_owned();
    let conn = connection(&c, &id).await;
    let uri = conn["uri"].as_str().unwrap().to_owned();
    assert!(psql_ok(&uri, "SHOW server_version").starts_with("16."));
    psql_ok(
        &uri,
        "CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)",
    );
    let pid_file = server
        .data_dir
        .path()
        .join("databases")
        .join(&id)
        .join("node0/data/postmaster.pid");
    let pid = || {
        std::fs::read_to_string(&pid_file)
            .unwrap()
            .lines()
            .next()
            .unwrap()
            .to_owned()
    };
    let before = pid();
    server.restart().await;
    let c = server.client();
    assert_eq!(psql_ok(&uri, "SELECT x FROM kept"), "42");
    assert_eq!(
        pid(),
        before,
        "the running leader was adopted, not restarted"
    );
    assert_eq!(connection(&c, &id).await["uri"], conn["uri"]);

    std::process::Command::new("kill")
        .args(["-KILL", &before])
        .status()
        .unwrap();
    // The supervisor starts it again (bounded wait, not a timed assertion).
    let mut back = None;
    for _ in 0..300 {
        if let Ok(x) = std::panic::catch_unwind(|| psql_ok(&uri, "SELECT x FROM kept")) {
            back = Some(x);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        back.as_deref(),
        Some("42"),
        "the leader came back with its data"
    );
    assert_ne!(pid(), before);
    let got = c.get(&format!("/databases/{id}")).await.json();
    assert_eq!(got["members"][0]["healthy"], true, "{got}");
}

/// A version whose binaries are not on the host is refused, naming it.
async fn missing_version(backend: Backend) {
    let empty = tempfile::tempdir().unwrap();
    let root = plateau_databases::bins::default_root();
    let pgbouncer = plateau_databases::bins::pgbouncer(&root);
    let server = start_with(
        ServerOptions::new(backend)
            .env("PLATEAU_POSTGRES_DIR", empty.path().to_str().unwrap())
            .env("PLATEAU_PGBOUNCER", pgbouncer.to_str().unwrap()),
    )
    .await;
    let _processes = Processes::of(&server);
    let c = server.client();
    let r = c
        .post("/databases", json!({ "name": "new", "version": "17" }))
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["code"], "version_not_installed");
    assert!(
        r.text().contains("PostgreSQL 17 is not installed")
            && r.text().contains("plateau install postgres"),
        "{}",
        r.text()
    );
    assert_eq!(c.get("/databases").await.json()["items"], json!([]));
    // Debian's 15 is still there.
    create(&c, json!({ "name": "old", "version": "15" })).await;

    // Without the pooler, nothing is created and the error names the
    // command that installs it.
    let server = start_with(
        ServerOptions::new(backend).env("PLATEAU_POSTGRES_DIR", empty.path().to_str().unwrap()),
    )
    .await;
    let c = server.client();
    let r = c
        .post("/databases", json!({ "name": "pooled", "version": "15" }))
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["code"], "pooler_not_installed");
    assert!(
        r.text().contains("plateau install postgres"),
        "{}",
        r.text()
    );
    assert_eq!(c.get("/databases").await.json()["items"], json!([]));
}

on_both_backends!(clusters, restart_adopts, missing_version);
