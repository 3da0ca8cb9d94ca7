//! A restore interrupted by the death of the agent (issue 32): the agent
//! is SIGKILLed while the copy recovers; `plateau serve` starts it again
//! and the restore is made again from nothing, so the copy either runs
//! whole or is not there: it runs with every row of its source and no
//! process of the killed try is left. Prints its figures.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use plateau_testkit::{Backend, Client};
use serde_json::json;

use super::{Processes, connection, create, psql_ok};
use crate::{create_org, start};

/// The processes working in `data` that are neither its postmaster
/// (`postmaster.pid`) nor one of that postmaster's children.
fn strays(data: &Path) -> Vec<i32> {
    let Ok(data) = data.canonicalize() else {
        return Vec::new();
    };
    let postmaster: i32 = std::fs::read_to_string(data.join("postmaster.pid"))
        .ok()
        .and_then(|t| t.lines().next()?.trim().parse().ok())
        .unwrap_or(0);
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<i32>().ok())
        else {
            continue;
        };
        if std::fs::read_link(format!("/proc/{pid}/cwd"))
            .ok()
            .as_deref()
            != Some(&data)
        {
            continue;
        }
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let ppid: i32 = stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(0);
        if pid != postmaster && ppid != postmaster {
            out.push(pid);
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restore_whose_agent_is_killed_completes_whole_or_leaves_nothing() {
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    let token = create_org(&server, "restorekill", "pro").await;
    let c = Client::new(&server.url).with_token(&token);
    let data_dir: PathBuf = server.data_dir.path().to_owned();

    let d = create(&c, json!({ "name": "source" })).await;
    let id = d["id"].as_str().unwrap().to_owned();
    let uri = connection(&c, &id).await["writeUri"]
        .as_str()
        .unwrap()
        .to_owned();
    psql_ok(
        &uri,
        "CREATE TABLE t AS SELECT g AS n, repeat('x', 200) AS pad FROM generate_series(1, 200000) g",
    );
    let rows = psql_ok(&uri, "SELECT count(*) FROM t");
    // A base backup taken now holds the table; its WAL comes with it.
    let r = c.post(&format!("/databases/{id}/backups"), json!({})).await;
    assert_eq!(r.status, 202, "{}", r.text());
    let backup = r.json()["id"].as_str().unwrap().to_owned();
    let began = Instant::now();
    loop {
        let ledger = c.get(&format!("/databases/{id}/backups")).await.json();
        let b = ledger
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["id"] == backup.as_str())
            .cloned()
            .unwrap();
        assert_ne!(b["status"], "failed", "{b}");
        if b["status"] == "completed" {
            eprintln!(
                "base backup of {} bytes in {:.2} s",
                b["sizeBytes"],
                began.elapsed().as_secs_f64()
            );
            break;
        }
        assert!(began.elapsed() < Duration::from_secs(180), "{b}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let r = c
        .post(
            &format!("/databases/{id}/restore"),
            json!({ "name": "copy" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let copy = r.json()["id"].as_str().unwrap().to_owned();
    let cluster = data_dir.join("databases").join(&copy);
    // Killed while the copy recovers (its private socket exists).
    let began = Instant::now();
    while !cluster.join("restore-socket").exists() {
        assert!(
            began.elapsed() < Duration::from_secs(120),
            "the restore never reached recovery"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let agent = std::fs::read_to_string(data_dir.join("agent/pid")).unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", agent.trim()])
        .status()
        .unwrap();
    assert!(killed.success());
    let killed_at = Instant::now();
    eprintln!(
        "agent {} killed {:.2} s into the restore, during recovery",
        agent.trim(),
        began.elapsed().as_secs_f64()
    );

    c.wait_running(&format!("/databases/{copy}")).await;
    let recovered = killed_at.elapsed().as_secs_f64();
    let copy_uri = connection(&c, &copy).await["uri"]
        .as_str()
        .unwrap()
        .to_owned();
    let copied = psql_ok(&copy_uri, "SELECT count(*) FROM t");
    let stray = strays(&cluster.join("node0/data"));
    let lost = rows.parse::<i64>().unwrap() - copied.parse::<i64>().unwrap();
    eprintln!(
        "restore killed mid-recovery: running {recovered:.2} s after the kill, {copied} of {rows} rows ({lost} lost), {} stray processes of the killed try",
        stray.len()
    );
    assert_eq!(copied, rows, "the copy holds every row of its source");
    assert!(stray.is_empty(), "processes of the killed try: {stray:?}");
    assert!(
        !cluster.join("restore-socket").exists() && !cluster.join("restore-wal").exists(),
        "what the restore used is gone"
    );
}
