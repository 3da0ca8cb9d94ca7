//! Backups and point-in-time restore (issue 32): every database is
//! backed up once it runs (a base backup, then its WAL archived
//! continuously); a restore to a time between two writes makes a new
//! database holding exactly the earlier rows, on every version; bad
//! targets are refused naming `targetTime`; an on-demand backup of the WAL
//! lands in the ledger.

use std::time::{Duration, Instant};

use plateau_testkit::{Backend, Client};
use serde_json::{Value, json};

use super::{Processes, connection, create, psql_ok};
use crate::{create_org, start};

/// Polls the ledger of `id` until an entry of `kind` is completed; the
/// ledger. Panics on a failed entry.
pub(super) async fn until_backed_up(c: &Client, id: &str, kind: &str) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let r = c.get(&format!("/databases/{id}/backups")).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let ledger = r.json().as_array().cloned().unwrap_or_default();
        for b in &ledger {
            assert_ne!(b["status"], "failed", "a backup failed: {b}");
        }
        if ledger
            .iter()
            .any(|b| b["kind"] == kind && b["status"] == "completed")
        {
            eprintln!(
                "{id}: {kind} backup completed after {:.2} s",
                start.elapsed().as_secs_f64()
            );
            return ledger;
        }
        assert!(
            start.elapsed() < Duration::from_secs(180),
            "no {kind} backup: {ledger:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The server's clock now, as RFC 3339 in UTC.
fn server_now(uri: &str) -> String {
    psql_ok(
        uri,
        "SELECT to_char(clock_timestamp() AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')",
    )
}

/// One version: rows written before and after a target time, a restore
/// to it, exactly the earlier rows in the copy; the figures printed.
async fn restores_to_a_time(c: &Client, version: &str) {
    let d = create(
        c,
        json!({ "name": format!("pitr{version}"), "version": version }),
    )
    .await;
    let id = d["id"].as_str().unwrap().to_owned();
    let ledger = until_backed_up(c, &id, "full").await;
    let full = ledger.iter().find(|b| b["kind"] == "full").unwrap();
    for field in ["startedAt", "endedAt", "walStart", "walEnd"] {
        assert!(full[field].is_string(), "{field} in {full}");
    }
    assert!(full["sizeBytes"].as_i64().unwrap() > 0, "{full}");
    let uri = connection(c, &id).await["writeUri"]
        .as_str()
        .unwrap()
        .to_owned();
    psql_ok(
        &uri,
        "CREATE TABLE t (n int, at timestamptz DEFAULT clock_timestamp())",
    );
    psql_ok(&uri, "INSERT INTO t (n) VALUES (1), (2)");
    // Milliseconds apart, so the target falls strictly between commits.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let target = server_now(&uri);
    tokio::time::sleep(Duration::from_millis(20)).await;
    psql_ok(&uri, "INSERT INTO t (n) VALUES (3)");
    psql_ok(&uri, "INSERT INTO t (n) VALUES (4)");

    let began = Instant::now();
    let r = c
        .post(
            &format!("/databases/{id}/restore"),
            json!({ "name": format!("pitr{version}-copy"), "targetTime": target }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let copy = r.json();
    assert_eq!(copy["status"], "creating", "{copy}");
    assert_eq!(copy["version"], version, "{copy}");
    let copy_id = copy["id"].as_str().unwrap().to_owned();
    c.wait_running(&format!("/databases/{copy_id}")).await;
    eprintln!(
        "PostgreSQL {version}: restored to {target} in {:.2} s",
        began.elapsed().as_secs_f64()
    );
    let copy_uri = connection(c, &copy_id).await["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        psql_ok(
            &copy_uri,
            "SELECT string_agg(n::text, ',' ORDER BY n) FROM t"
        ),
        "1,2",
        "PostgreSQL {version}: the copy holds exactly the rows written before {target}"
    );
    // The copy takes writes, and the source still has every row.
    psql_ok(&copy_uri, "INSERT INTO t (n) VALUES (5)");
    assert_eq!(psql_ok(&uri, "SELECT count(*) FROM t"), "4");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_to_a_time_holds_exactly_the_rows_written_before_it_on_every_version() {
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    // Three databases and their three copies: the scale plan's ten.
    let token = create_org(&server, "pitr", "scale").await;
    let c = Client::new(&server.url).with_token(&token);
    futures::future::join_all(["15", "16", "17"].map(|v| restores_to_a_time(&c, v))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_targets_are_refused_and_an_incremental_backup_lands_in_the_ledger() {
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    let c = server.client();
    let d = create(&c, json!({ "name": "ledger" })).await;
    let id = d["id"].as_str().unwrap().to_owned();
    until_backed_up(&c, &id, "full").await;

    for (target, why) in [
        ("yesterday", "not a time"),
        ("2000-01-01T00:00:00Z", "before the first backup"),
        ("2999-01-01T00:00:00Z", "in the future"),
    ] {
        let r = c
            .post(
                &format!("/databases/{id}/restore"),
                json!({ "targetTime": target }),
            )
            .await;
        assert_eq!(r.status, 400, "{why}: {}", r.text());
        assert!(r.text().contains("targetTime"), "{why}: {}", r.text());
    }
    let r = c
        .post(
            &format!("/databases/{id}/restore"),
            json!({ "target": "x" }),
        )
        .await;
    assert_eq!(r.status, 400, "an unknown field: {}", r.text());

    let r = c
        .post(
            &format!("/databases/{id}/backups"),
            json!({ "full": false }),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text());
    assert_eq!(r.json()["status"], "pending");
    let ledger = until_backed_up(&c, &id, "incremental").await;
    let inc = ledger.iter().find(|b| b["kind"] == "incremental").unwrap();
    assert!(inc["walEnd"].is_string(), "{inc}");

    let r = c.get("/databases/dbs_nothere/backups").await;
    assert_eq!(r.status, 404, "{}", r.text());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn branches_copy_whole_or_structure_only_count_against_the_plan_and_protect() {
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    // Three databases on the pro plan: the production one and two branches.
    let token = create_org(&server, "branches", "pro").await;
    let c = Client::new(&server.url).with_token(&token);
    let d = create(&c, json!({ "name": "prod" })).await;
    let id = d["id"].as_str().unwrap().to_owned();
    until_backed_up(&c, &id, "full").await;
    let uri = connection(&c, &id).await["writeUri"]
        .as_str()
        .unwrap()
        .to_owned();
    psql_ok(
        &uri,
        "CREATE TABLE t (n serial, v text); INSERT INTO t (v) VALUES ('a'), ('b')",
    );

    let branches = format!("/databases/{id}/branches");
    for (body, field) in [
        (json!({ "name": "x", "ttlHours": 0 }), "ttlHours"),
        (
            json!({ "name": "x", "fromTimestamp": "soon" }),
            "fromTimestamp",
        ),
        (
            json!({ "name": "x", "fromTimestamp": "2000-01-01T00:00:00Z" }),
            "fromTimestamp",
        ),
    ] {
        let r = c.post(&branches, body).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(r.text().contains(field), "{field}: {}", r.text());
    }
    let r = c.post(&branches, json!({ "name": "full" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let full = r.json()["id"].as_str().unwrap().to_owned();
    let r = c
        .post(
            &branches,
            json!({ "name": "shape", "schemaOnly": true, "protected": true, "ttlHours": 24 }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let shape = r.json();
    assert_eq!(shape["protected"], true, "{shape}");
    assert!(shape["expiresAt"].is_string(), "{shape}");
    let shape = shape["id"].as_str().unwrap().to_owned();
    // A branch counts against the plan as a database.
    let r = c.post(&branches, json!({ "name": "one-too-many" })).await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["code"], "plan_limit_reached");

    c.wait_running(&format!("/databases/{full}")).await;
    c.wait_running(&format!("/databases/{shape}")).await;
    let full_uri = connection(&c, &full).await["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        psql_ok(&full_uri, "SELECT string_agg(v, ',' ORDER BY n) FROM t"),
        "a,b"
    );
    let shape_uri = connection(&c, &shape).await["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(psql_ok(&shape_uri, "SELECT count(*) FROM t"), "0");
    psql_ok(&shape_uri, "INSERT INTO t (v) VALUES ('c')");
    assert_eq!(
        psql_ok(&shape_uri, "SELECT n FROM t"),
        "1",
        "sequences restarted"
    );

    let listed = c.get(&branches).await.json();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 3, "{listed:?}");
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!(listed[0]["production"], true);

    for path in [
        format!("{branches}/{id}"),
        format!("{branches}/{shape}"),
        format!("/databases/{shape}"),
    ] {
        let r = c.delete(&path).await;
        assert_eq!(r.status, 409, "{path}: {}", r.text());
    }
    let r = c
        .patch(
            &format!("{branches}/{shape}"),
            json!({ "protected": false }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["protected"], false);
    let r = c.delete(&format!("{branches}/{shape}")).await;
    assert_eq!(r.status, 202, "{}", r.text());
    c.wait_gone(&format!("/databases/{shape}")).await;
    let r = c.get(&format!("{branches}/{shape}")).await;
    assert_eq!(r.status, 404, "{}", r.text());
}
