//! Failover without the API process (issue 29): a cluster with two
//! replicas, one writer through the pooled `uri` and one through
//! `writeUri`, each keeping the commits acknowledged to it; `plateau
//! serve` is killed with SIGKILL, then the leader's postmaster. The agent
//! fails over on its own: both URIs take writes again while the API is
//! still down, and no acknowledged commit is lost. `plateau serve` started
//! again adopts everything (the same processes, none twice). The test
//! prints its figures: seconds without a writable leader, failed writes,
//! acknowledged commits lost.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::json;
use sqlx::Row;

use super::ha::{all_streaming, leader, wait_for};
use super::{Processes, connection, create, psql_ok, sqlx_connect};
use crate::{create_org, start_with};

/// One writer's run: the ids whose commit was acknowledged, when, and how
/// many statements failed.
#[derive(Default)]
struct Writer {
    acked: Mutex<Vec<(i64, Instant)>>,
    failed: AtomicU64,
    stop: AtomicBool,
}

impl Writer {
    fn acked_since(&self, t: Instant) -> usize {
        self.acked
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, at)| *at > t)
            .count()
    }

    /// The longest time without an acknowledged commit that ended after
    /// `t`, in seconds (a leader's backends may still commit for a moment
    /// after its postmaster is killed: the outage is the longest silence,
    /// not the time to the first commit after the kill).
    fn longest_silence_after(&self, t: Instant) -> f64 {
        let acked = self.acked.lock().unwrap();
        acked
            .windows(2)
            .filter(|w| w[1].1 > t)
            .map(|w| (w[1].1 - w[0].1).as_secs_f64())
            .fold(0.0, f64::max)
    }
}

/// Inserts `first`, `first + 1`, ... into the ledger through `uri`, one
/// commit at a time, connecting again after any error.
async fn write(uri: String, first: i64, run: Arc<Writer>) {
    let mut next = first;
    let mut conn = None;
    while !run.stop.load(Ordering::Relaxed) {
        if conn.is_none() {
            match tokio::time::timeout(Duration::from_secs(5), sqlx_connect(&uri)).await {
                Ok(Ok(c)) => conn = Some(c),
                _ => {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            }
        }
        let sql = format!("INSERT INTO ledger VALUES ({next})");
        let done = tokio::time::timeout(
            Duration::from_secs(10),
            sqlx::Executor::execute(conn.as_mut().unwrap(), sqlx::raw_sql(&sql)),
        )
        .await;
        match done {
            Ok(Ok(_)) => run.acked.lock().unwrap().push((next, Instant::now())),
            _ => {
                run.failed.fetch_add(1, Ordering::Relaxed);
                conn = None;
            }
        }
        next += 1;
    }
}

/// How many process trees run with `needle` in their command line (a
/// process whose parent has it too is the same tree: a pgbouncer, an
/// HAProxy master and its workers, a postmaster).
fn trees(needle: &str) -> usize {
    let cmdline = |pid: &str| {
        String::from_utf8_lossy(&std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default())
            .into_owned()
    };
    let parent = |pid: &str| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let rest = stat.rsplit_once(')').map(|(_, r)| r.to_owned());
        rest.and_then(|r| r.split_whitespace().nth(1).map(str::to_owned))
            .unwrap_or_default()
    };
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|pid| pid.bytes().all(|b| b.is_ascii_digit()))
        .filter(|pid| cmdline(pid).contains(needle) && !cmdline(&parent(pid)).contains(needle))
        .count()
}

/// The pid in the first line of `file`.
fn pid_in(file: &Path) -> String {
    let text = std::fs::read_to_string(file).unwrap_or_default();
    text.lines().next().unwrap_or_default().trim().to_owned()
}

fn kill(pid: &str) {
    let killed = std::process::Command::new("kill")
        .args(["-KILL", pid])
        .status()
        .unwrap();
    assert!(killed.success(), "kill -KILL {pid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_agent_fails_over_while_the_api_process_is_down() {
    let mut server = start_with(ServerOptions::new(Backend::Sqlite)).await;
    let _processes = Processes::of(&server);
    let token = create_org(&server, "outage", "pro").await;
    let c = Client::new(&server.url).with_token(&token);
    let d = create(&c, json!({ "name": "outage", "replicas": 2 })).await;
    let id = d["id"].as_str().unwrap().to_owned();
    let d = wait_for(&c, &id, "replicas streaming", |d| all_streaming(d, 2)).await;
    let first_leader = leader(&d);
    let conn = connection(&c, &id).await;
    let uri = conn["uri"].as_str().unwrap().to_owned();
    let write_uri = conn["writeUri"].as_str().unwrap().to_owned();
    psql_ok(&write_uri, "CREATE TABLE ledger (id bigint PRIMARY KEY)");

    let pooled = Arc::new(Writer::default());
    let direct = Arc::new(Writer::default());
    let tasks = [
        tokio::spawn(write(uri.clone(), 1, pooled.clone())),
        tokio::spawn(write(write_uri.clone(), 1_000_000_000, direct.clone())),
    ];
    let start = Instant::now();
    while pooled.acked_since(start) < 50 || direct.acked_since(start) < 50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The API process dies; the agent it started lives on.
    let data = server.data_dir.path().to_owned();
    let agent = pid_in(&data.join("agent/pid"));
    assert!(
        Path::new(&format!("/proc/{agent}")).exists(),
        "the agent runs"
    );
    kill(&server.pid().expect("the server runs").to_string());
    server.exited().await;

    // Then the leader's postmaster.
    let cluster = data.join("databases").join(&id);
    let failed_before = (
        pooled.failed.load(Ordering::Relaxed),
        direct.failed.load(Ordering::Relaxed),
    );
    let killed_at = Instant::now();
    kill(&pid_in(
        &cluster.join(&first_leader).join("data/postmaster.pid"),
    ));

    // Both URIs take writes again, with the API still down.
    for _ in 0..1200 {
        if pooled.acked_since(killed_at) >= 50 && direct.acked_since(killed_at) >= 50 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for w in [&pooled, &direct] {
        w.stop.store(true, Ordering::Relaxed);
    }
    for t in tasks {
        t.await.unwrap();
    }
    let resumed = (pooled.acked_since(killed_at), direct.acked_since(killed_at));
    assert!(
        resumed.0 >= 50 && resumed.1 >= 50,
        "writes did not resume without the API process (pooled {}, writeUri {})",
        resumed.0,
        resumed.1
    );
    assert_eq!(psql_ok(&write_uri, "SELECT pg_is_in_recovery()"), "f");

    // No acknowledged commit is lost.
    let mut leader_conn = sqlx_connect(&write_uri).await.unwrap();
    let present: std::collections::HashSet<i64> = sqlx::query("SELECT id FROM ledger")
        .fetch_all(&mut leader_conn)
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let mut acked = 0;
    let mut lost = Vec::new();
    for w in [&pooled, &direct] {
        for (id, _) in w.acked.lock().unwrap().iter() {
            acked += 1;
            if !present.contains(id) {
                lost.push(*id);
            }
        }
    }
    let gaps = (
        pooled.longest_silence_after(killed_at),
        direct.longest_silence_after(killed_at),
    );
    eprintln!(
        "postgres failover without the API process: {:.2} s without a writable leader \
         (pooled uri {:.2} s, writeUri {:.2} s); failed writes: pooled {}, writeUri {}; \
         {acked} commits acknowledged, {} lost",
        gaps.0.max(gaps.1),
        gaps.0,
        gaps.1,
        pooled.failed.load(Ordering::Relaxed) - failed_before.0,
        direct.failed.load(Ordering::Relaxed) - failed_before.1,
        lost.len()
    );
    assert!(lost.is_empty(), "acknowledged commits lost: {lost:?}");

    // The agent makes the dead member again as a replica, still without
    // the API: two replicas connected to the leader (the owner role sees
    // their rows, not their state).
    let mut streaming = 0;
    for _ in 0..1200 {
        streaming = sqlx::query_scalar::<_, i64>("SELECT count(*) FROM pg_stat_replication")
            .fetch_one(&mut leader_conn)
            .await
            .unwrap_or(0);
        if streaming == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(streaming, 2, "the old leader was not made a replica again");

    // `plateau serve` again: it adopts the agent and every process, the
    // same pids and none twice, and shows what the agent did.
    let root = data.join("databases");
    let mut before = super::pids(&root);
    before.sort();
    server.restart().await;
    assert_eq!(
        pid_in(&data.join("agent/pid")),
        agent,
        "the agent was adopted"
    );
    let c = Client::new(&server.url).with_token(&token);
    let d = wait_for(&c, &id, "members adopted", |d| all_streaming(d, 2)).await;
    assert_ne!(leader(&d), first_leader);
    let mut after = super::pids(&root);
    after.sort();
    assert_eq!(before, after, "the running processes were adopted");
    let dir = cluster.display().to_string();
    assert_eq!(trees(&format!("{dir}/pooler/")), 1, "one pgbouncer");
    assert_eq!(trees(&format!("{dir}/router/")), 1, "one write endpoint");
    for member in ["node0", "node1", "node2"] {
        assert_eq!(trees(&format!("{dir}/{member}/data")), 1, "one {member}");
    }
    let events = c.get("/events?limit=200").await;
    assert!(
        events.text().contains("database.failed_over"),
        "{}",
        events.text()
    );
    assert_eq!(connection(&c, &id).await["writeUri"], json!(write_uri));
    psql_ok(&write_uri, "INSERT INTO ledger VALUES (0)");
    super::delete(&c, &id).await;
}
