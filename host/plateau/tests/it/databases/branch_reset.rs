//! Branch reset (issue 32): a branch written to is reset and holds its
//! parent's data as it is now, on the same URIs, while a client on the
//! pooled URI keeps querying through the swap (its failed queries
//! counted); and a reset whose agent is SIGKILLed while the copy recovers
//! leaves the branch old or new, whole, with no member or process of the
//! killed try left. Both print their figures.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use plateau_testkit::{Backend, Client};
use serde_json::json;

use super::backups::until_backed_up;
use super::{Processes, connection, create, psql, psql_ok, sqlx_connect};
use crate::{create_org, start};

/// A production database with 100 rows in `t` and its branch `dev`,
/// running: their ids.
async fn parent_and_branch(c: &Client) -> (String, String) {
    let d = create(c, json!({ "name": "prod" })).await;
    let id = d["id"].as_str().unwrap().to_owned();
    until_backed_up(c, &id, "full").await;
    let uri = connection(c, &id).await["writeUri"]
        .as_str()
        .unwrap()
        .to_owned();
    psql_ok(
        &uri,
        "CREATE TABLE t (n int PRIMARY KEY); INSERT INTO t SELECT generate_series(1, 100)",
    );
    let r = c
        .post(
            &format!("/databases/{id}/branches"),
            json!({ "name": "dev" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let branch = r.json()["id"].as_str().unwrap().to_owned();
    c.wait_running(&format!("/databases/{branch}")).await;
    // The parent moves on after the branch was made.
    psql_ok(&uri, "INSERT INTO t SELECT generate_series(101, 150)");
    (id, branch)
}

/// The member directories (`nodeN`) of cluster `dir`.
fn members(dir: &Path) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("node"))
        .collect();
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_branch_holds_its_parent_again_on_the_same_uris() {
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    let token = create_org(&server, "branchreset", "pro").await;
    let c = Client::new(&server.url).with_token(&token);
    let (id, branch) = parent_and_branch(&c).await;
    let before = connection(&c, &branch).await;
    let uri = before["uri"].as_str().unwrap().to_owned();
    psql_ok(
        &uri,
        "INSERT INTO t VALUES (1000); CREATE TABLE only_here (x int)",
    );
    assert_eq!(psql_ok(&uri, "SELECT count(*) FROM t"), "101");

    // The production branch has nothing to be reset to.
    let r = c
        .post(&format!("/databases/{id}/branches/{id}/reset"), json!({}))
        .await;
    assert_eq!(r.status, 409, "{}", r.text());
    assert_eq!(r.json()["code"], "production_branch", "{}", r.text());

    // A client on the pooled URI queries all along.
    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let client = {
        let (uri, stop, ok, failed) = (uri.clone(), stop.clone(), ok.clone(), failed.clone());
        tokio::spawn(async move {
            let mut conn = sqlx_connect(&uri).await.ok();
            let mut reconnects = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let answered = match conn.as_mut() {
                    Some(c) => sqlx::query_scalar::<_, i64>("SELECT count(*) FROM t")
                        .fetch_one(c)
                        .await
                        .is_ok(),
                    None => false,
                };
                if answered {
                    ok.fetch_add(1, Ordering::Relaxed);
                } else {
                    failed.fetch_add(1, Ordering::Relaxed);
                    reconnects += 1;
                    conn = sqlx_connect(&uri).await.ok();
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            reconnects
        })
    };

    let began = Instant::now();
    let r = c
        .post(
            &format!("/databases/{id}/branches/{branch}/reset"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text());
    assert_eq!(r.json()["status"], "updating", "{}", r.text());
    c.wait_running(&format!("/databases/{branch}")).await;
    let took = began.elapsed().as_secs_f64();
    // The old server is gone once the branch runs again: a few more
    // queries land on the copy.
    let seen = ok.load(Ordering::Relaxed);
    while ok.load(Ordering::Relaxed) < seen + 5 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let reconnects = client.await.unwrap();
    let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
    eprintln!(
        "branch reset in {took:.2} s; a pooled client meanwhile: {ok} queries answered, {failed} failed, {reconnects} reconnects"
    );

    let after = connection(&c, &branch).await;
    for key in ["uri", "readUri", "writeUri"] {
        assert_eq!(after[key], before[key], "{key} stays the same");
    }
    assert_eq!(
        psql_ok(&uri, "SELECT count(*), max(n) FROM t"),
        "150|150",
        "the parent's rows as they are now, the branch's own gone"
    );
    let gone = psql(&uri, "SELECT 1 FROM only_here");
    assert!(!gone.status.success(), "the branch's own table is gone");
    psql_ok(&uri, "INSERT INTO t VALUES (2000)");
    assert!(
        failed <= 1,
        "a pooled client sees at most one failed query: {failed}"
    );
    let cluster = server.data_dir.path().join("databases").join(&branch);
    assert_eq!(members(&cluster).len(), 1, "{:?}", members(&cluster));
    // The parent is untouched.
    let parent = connection(&c, &id).await["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(psql_ok(&parent, "SELECT count(*) FROM t"), "150");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_whose_agent_is_killed_leaves_the_branch_old_or_new_never_broken() {
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    let token = create_org(&server, "resetkill", "pro").await;
    let c = Client::new(&server.url).with_token(&token);
    let (id, branch) = parent_and_branch(&c).await;
    let uri = connection(&c, &branch).await["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    psql_ok(&uri, "INSERT INTO t VALUES (1000)");
    let cluster = server.data_dir.path().join("databases").join(&branch);

    let r = c
        .post(
            &format!("/databases/{id}/branches/{branch}/reset"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text());
    // Killed while the copy recovers beside the branch.
    let began = Instant::now();
    while !cluster.join("restore-socket").exists() {
        assert!(
            began.elapsed() < Duration::from_secs(120),
            "the reset never reached recovery"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let during = members(&cluster);
    // The branch still answers while the copy recovers.
    let served = psql(&uri, "SELECT count(*) FROM t");
    let agent = std::fs::read_to_string(server.data_dir.path().join("agent/pid")).unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", agent.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    let killed_at = Instant::now();

    c.wait_running(&format!("/databases/{branch}")).await;
    let recovered = killed_at.elapsed().as_secs_f64();
    let rows = psql_ok(&uri, "SELECT count(*) FROM t");
    let state = match rows.as_str() {
        "150" => "new",
        "101" => "old",
        other => panic!("the branch is neither old (101 rows) nor new (150): {other}"),
    };
    let left = members(&cluster);
    eprintln!(
        "reset killed {:.2} s in during recovery (members {during:?}, the branch answering: {}): \
         running again {recovered:.2} s after the kill, {state} ({rows} rows), members {left:?}",
        killed_at.duration_since(began).as_secs_f64(),
        served.status.success()
    );
    assert!(served.status.success(), "the old branch serves meanwhile");
    assert_eq!(during.len(), 2, "the copy is made beside the branch");
    assert_eq!(left.len(), 1, "no member of the killed try is left");
    assert_eq!(state, "new", "the reset asked for is made again");
    assert!(
        !cluster.join("restore-socket").exists() && !cluster.join("restore-wal").exists(),
        "what the reset used is gone"
    );
    psql_ok(&uri, "INSERT INTO t VALUES (2000)");
}
