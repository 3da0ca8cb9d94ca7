//! High availability: a cluster with streaming replicas (synchronous
//! commit to any one of them), reads through `readUri`, a failover after
//! the leader's postmaster is killed with SIGKILL under a write load (a
//! replica promoted, the pooled URI working again, no acknowledged commit
//! lost, the dead member made again as a replica, the same `writeUri`
//! leading to the new leader), hot scaling within the plan's maximum, and
//! `apply-config` (whose switchover `writeUri` follows too). A
//! subscription to a PostgreSQL 17 database with replicas goes on
//! streaming after its source's leader is killed (failover slots).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use plateau_testkit::{Backend, Client};
use serde_json::{Value, json};
use sqlx::Row;

use super::{Processes, connection, create, psql, psql_ok, sqlx_connect};
use crate::{create_org, on_both_backends, start};

/// Polls `GET /databases/{id}` until `done` holds for it (at most a
/// minute); the database.
pub(super) async fn wait_for(
    c: &Client,
    id: &str,
    what: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    let mut last = Value::Null;
    for _ in 0..600 {
        let r = c.get(&format!("/databases/{id}")).await;
        assert_eq!(r.status, 200, "{}", r.text());
        last = r.json();
        if done(&last) {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} never happened: {last}");
}

pub(super) fn all_streaming(d: &Value, replicas: usize) -> bool {
    let members = d["members"].as_array().unwrap();
    members.len() == replicas + 1
        && members
            .iter()
            .filter(|m| m["role"] == "replica")
            .all(|m| m["state"] == "streaming")
        && members.iter().filter(|m| m["role"] == "leader").count() == 1
        && members.iter().all(|m| m["healthy"] == true)
}

pub(super) fn leader(d: &Value) -> String {
    d["members"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "leader")
        .map(|m| m["name"].as_str().unwrap().to_owned())
        .unwrap_or_default()
}

/// What `sql` answers on `read_uri` once it answers `want` (replication
/// is asynchronous to the reader), or its last answer after 10 s.
async fn replica_answers(read_uri: &str, sql: &str, want: &str) -> String {
    let mut seen = String::new();
    for _ in 0..100 {
        seen = String::from_utf8_lossy(&psql(read_uri, sql).stdout)
            .trim()
            .to_owned();
        if seen == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    seen
}

/// One commit of `id` into the ledger, in the simple protocol (the pool
/// is in transaction mode).
async fn insert(conn: &mut sqlx::PgConnection, id: i32) -> Result<(), sqlx::Error> {
    let sql = format!("INSERT INTO ledger VALUES ({id})");
    sqlx::Executor::execute(conn, sqlx::raw_sql(&sql)).await?;
    Ok(())
}

async fn failover(backend: Backend) {
    let mut server = start(backend).await;
    let _processes = Processes::of(&server);
    let token = create_org(&server, "ha", "pro").await;
    let c = Client::new(&server.url).with_token(&token);

    // The pro plan allows 2 replicas per database.
    let r = c
        .post("/databases", json!({ "name": "too-many", "replicas": 3 }))
        .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["code"], "plan_limit_reached");

    let d = create(&c, json!({ "name": "ha", "replicas": 2 })).await;
    let id = d["id"].as_str().unwrap().to_owned();
    assert_eq!(d["replicas"], 2, "{d}");
    assert_eq!(d["members"].as_array().unwrap().len(), 3, "{d}");
    let d = wait_for(&c, &id, "replicas streaming", |d| all_streaming(d, 2)).await;
    let first_leader = leader(&d);

    let conn = connection(&c, &id).await;
    let uri = conn["uri"].as_str().unwrap().to_owned();
    let write_uri = conn["writeUri"].as_str().unwrap().to_owned();
    let read_uri = conn["readUri"].as_str().unwrap().to_owned();
    assert_eq!(
        psql_ok(&write_uri, "SHOW synchronous_standby_names"),
        "ANY 1 (\"node1\", \"node2\")"
    );

    // A write on writeUri shows on readUri, which is a replica.
    psql_ok(&write_uri, "CREATE TABLE ledger (id int PRIMARY KEY)");
    psql_ok(&write_uri, "INSERT INTO ledger VALUES (0)");
    assert_eq!(
        replica_answers(&read_uri, "SELECT count(*) FROM ledger", "1").await,
        "1"
    );
    assert_eq!(psql_ok(&read_uri, "SELECT pg_is_in_recovery()"), "t");
    assert!(
        !psql(&read_uri, "INSERT INTO ledger VALUES (-1)")
            .status
            .success()
    );

    // A client writes through the pool, one commit at a time, and keeps
    // the ids whose commit was acknowledged.
    let acknowledged = Arc::new(Mutex::new(Vec::<i32>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = write_load(uri.clone(), acknowledged.clone(), stop.clone());
    while acknowledged.lock().unwrap().len() < 50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // SIGKILL the leader's postmaster.
    let pid_file = server
        .data_dir
        .path()
        .join(format!("databases/{id}/{first_leader}/data/postmaster.pid"));
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let pid = pid.lines().next().unwrap().trim().to_owned();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let before = acknowledged.lock().unwrap().len();

    // A replica is promoted, and the pooled URI takes writes again.
    let d = wait_for(&c, &id, "a promotion", |d| {
        let l = leader(d);
        !l.is_empty() && l != first_leader
    })
    .await;
    let new_leader = leader(&d);
    for _ in 0..600 {
        if acknowledged.lock().unwrap().len() > before + 50 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    load.await.unwrap();
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(
        acknowledged.len() > before + 50,
        "the pooled URI took no writes after the failover ({} before, {} in all)",
        before,
        acknowledged.len()
    );

    // No acknowledged commit is lost, on the new leader.
    let conn = connection(&c, &id).await;
    assert_eq!(conn["uri"].as_str().unwrap(), uri, "the pooled URI stays");
    let new_write = conn["writeUri"].as_str().unwrap().to_owned();
    assert_eq!(new_write, write_uri, "writeUri stays");
    let mut leader_conn = sqlx_connect(&write_uri).await.unwrap();
    let rows = sqlx::query("SELECT id FROM ledger")
        .fetch_all(&mut leader_conn)
        .await
        .unwrap();
    let present: std::collections::HashSet<i32> = rows.iter().map(|r| r.get(0)).collect();
    let lost: Vec<&i32> = acknowledged
        .iter()
        .filter(|i| !present.contains(i))
        .collect();
    assert!(lost.is_empty(), "acknowledged commits lost: {lost:?}");
    // The kept writeUri leads to the new leader.
    assert_eq!(psql_ok(&write_uri, "SELECT pg_is_in_recovery()"), "f");

    // The dead member comes back as a replica of the new leader.
    let d = wait_for(&c, &id, "the old leader rebuilt", |d| all_streaming(d, 2)).await;
    assert_eq!(leader(&d), new_leader);
    let r = c.get("/events?limit=200").await;
    assert!(r.text().contains("database.failed_over"), "{}", r.text());

    // Hot scaling within the plan's maximum.
    let r = c.get(&format!("/databases/{id}/replicas")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["replicas"], 2);
    assert_eq!(r.json()["max"], 2);
    let r = c
        .post(
            &format!("/databases/{id}/replicas"),
            json!({ "replicas": 3 }),
        )
        .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["code"], "plan_limit_reached");
    let r = c
        .post(
            &format!("/databases/{id}/replicas"),
            json!({ "replicas": 1 }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["replicas"], 1);
    let scaled = c.wait_running(&format!("/databases/{id}")).await;
    assert_eq!(scaled["members"].as_array().unwrap().len(), 2, "{scaled}");
    let r = c
        .post(
            &format!("/databases/{id}/replicas"),
            json!({ "replicas": 2 }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    c.wait_running(&format!("/databases/{id}")).await;
    wait_for(&c, &id, "scaled back to 2", |d| all_streaming(d, 2)).await;
    psql_ok(&uri, "INSERT INTO ledger VALUES (1000000)");

    // apply-config recreates every member, the leader last after a
    // switchover; the data stays.
    let r = c
        .post(&format!("/databases/{id}/apply-config"), json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_ne!(leader(&r.json()), new_leader, "{}", r.text());
    wait_for(&c, &id, "members back", |d| all_streaming(d, 2)).await;
    // After the switchover too, the same writeUri writes.
    psql_ok(&write_uri, "INSERT INTO ledger VALUES (1500000)");
    assert_eq!(
        psql_ok(&uri, "SELECT count(*) FROM ledger WHERE id = 1000000"),
        "1"
    );

    // A restart of `plateau serve` adopts the whole cluster: the same
    // processes, the replicas still streaming, every URI working.
    let root = server.data_dir.path().join("databases");
    let mut before = super::pids(&root);
    before.sort();
    server.restart().await;
    let c = Client::new(&server.url).with_token(&token);
    wait_for(&c, &id, "members adopted", |d| all_streaming(d, 2)).await;
    let mut after = super::pids(&root);
    after.sort();
    assert_eq!(before, after, "the running processes were adopted");
    psql_ok(&uri, "INSERT INTO ledger VALUES (2000000)");
    psql_ok(&write_uri, "INSERT INTO ledger VALUES (2000001)");
    let sql = "SELECT count(*) FROM ledger WHERE id = 2000000";
    assert_eq!(replica_answers(&read_uri, sql, "1").await, "1");

    super::delete(&c, &id).await;
}

on_both_backends!(failover);

/// Writes `ledger` rows one commit at a time through `uri` until `stop`,
/// keeping the ids whose commit was acknowledged.
fn write_load(
    uri: String,
    acknowledged: Arc<Mutex<Vec<i32>>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let (mut next, mut conn) = (1, None);
        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
            if conn.is_none() {
                conn = sqlx_connect(&uri).await.ok();
                if conn.is_none() {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            }
            match insert(conn.as_mut().unwrap(), next).await {
                Ok(_) => acknowledged.lock().unwrap().push(next),
                Err(_) => conn = None,
            }
            next += 1;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
}

/// The ids in `ledger` at `uri`.
async fn ledger_ids(uri: &str) -> std::collections::HashSet<i32> {
    let Ok(mut conn) = sqlx_connect(uri).await else {
        return Default::default();
    };
    let rows = sqlx::query("SELECT id FROM ledger")
        .fetch_all(&mut conn)
        .await
        .unwrap_or_default();
    rows.iter().map(|r| r.get(0)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_follows_a_failover_of_its_17_source() {
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    let token = create_org(&server, "hasub", "pro").await;
    let c = Client::new(&server.url).with_token(&token);
    let src = create(&c, json!({ "name": "src", "replicas": 2 })).await;
    let dst = create(&c, json!({ "name": "dst" })).await;
    let (src, dst) = (src["id"].as_str().unwrap(), dst["id"].as_str().unwrap());
    let d = wait_for(&c, src, "replicas streaming", |d| all_streaming(d, 2)).await;
    let first_leader = leader(&d);
    let src_conn = connection(&c, src).await;
    let (src_uri, src_write) = (
        src_conn["uri"].as_str().unwrap().to_owned(),
        src_conn["writeUri"].as_str().unwrap().to_owned(),
    );
    let dst_uri = connection(&c, dst).await["writeUri"]
        .as_str()
        .unwrap()
        .to_owned();
    for uri in [&src_write, &dst_uri] {
        psql_ok(uri, "CREATE TABLE ledger (id int PRIMARY KEY)");
    }
    let r = c
        .post(
            &format!("/databases/{src}/publications"),
            json!({ "name": "ledger_pub", "tables": ["ledger"] }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let body = json!({ "name": "fromsrc", "source": src, "publication": "ledger_pub" });
    let r = c
        .post(&format!("/databases/{dst}/subscriptions"), body)
        .await;
    assert_eq!(r.status, 201, "{}", r.text());

    // Writes go on throughout; the slot is kept by both replicas first.
    let acknowledged = Arc::new(Mutex::new(Vec::<i32>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = write_load(src_uri, acknowledged.clone(), stop.clone());
    let sub = format!("/databases/{dst}/subscriptions/fromsrc");
    let began = std::time::Instant::now();
    let mut view = Value::Null;
    while view["failoverReady"] != true || view["streaming"] != true {
        assert!(began.elapsed() < Duration::from_secs(120), "{view}");
        tokio::time::sleep(Duration::from_millis(200)).await;
        view = c.get(&sub).await.json();
    }
    eprintln!(
        "the slot is kept by both replicas {:.1} s after the subscribe",
        began.elapsed().as_secs_f64()
    );

    // SIGKILL the source's leader.
    let pid_file = server.data_dir.path().join(format!(
        "databases/{src}/{first_leader}/data/postmaster.pid"
    ));
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let pid = pid.lines().next().unwrap().trim().to_owned();
    let killed = std::time::Instant::now();
    assert!(
        std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .unwrap()
            .success()
    );
    let before = acknowledged.lock().unwrap().len();
    wait_for(&c, src, "a promotion", |d| {
        let l = leader(d);
        !l.is_empty() && l != first_leader
    })
    .await;
    // The subscriber receives what is written after the failover.
    let mut resumed = None;
    while resumed.is_none() {
        assert!(killed.elapsed() < Duration::from_secs(180), "never resumed");
        let first_after = acknowledged.lock().unwrap().get(before).copied();
        if let Some(id) = first_after
            && ledger_ids(&dst_uri).await.contains(&id)
        {
            resumed = Some(killed.elapsed());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    load.await.unwrap();

    // Every acknowledged row reaches the subscriber, and nothing the new
    // leader lacks.
    let acknowledged = acknowledged.lock().unwrap().clone();
    let mut lost = acknowledged.len();
    let mut on_dst = Default::default();
    for _ in 0..600 {
        on_dst = ledger_ids(&dst_uri).await;
        lost = acknowledged.iter().filter(|i| !on_dst.contains(i)).count();
        if lost == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let on_src = ledger_ids(&src_write).await;
    let extra = on_dst.iter().filter(|i| !on_src.contains(i)).count();
    eprintln!(
        "subscription across a failover of its source: {} rows acknowledged ({} before the kill), \
         rows lost = {lost}, rows the new leader lacks = {extra}, {:.1} s from the kill to \
         the first row written after it on the subscriber",
        acknowledged.len(),
        before,
        resumed.unwrap().as_secs_f64()
    );
    assert_eq!(lost, 0, "acknowledged rows never reached the subscriber");
    assert_eq!(extra, 0, "the subscriber got rows the new leader lacks");
    let view = c.get(&sub).await.json();
    assert_eq!(view["streaming"], true, "{view}");
}
