//! The kernel's reconciler converges after its process dies mid-change:
//! the agent (`plateau agent`) is killed with SIGKILL while it creates a
//! database with a replica; the database stays `creating` (never
//! `running` half-made), `plateau serve` starts a new agent, and that one
//! removes what the killed one left and brings the database up. Nothing
//! the killed create started is left running.

use std::time::Instant;

use plateau_testkit::{Backend, Client, Server};
use serde_json::json;

use super::{Processes, connection, psql_ok};
use crate::{create_org, start};

/// The pid of the live agent of the server's data directory.
fn agent_pid(s: &Server) -> Option<i32> {
    let pid = std::fs::read_to_string(s.data_dir.path().join("agent/pid")).ok()?;
    let pid: i32 = pid.trim().parse().ok()?;
    std::path::Path::new(&format!("/proc/{pid}"))
        .exists()
        .then_some(pid)
}

/// The pids of the servers (postgres, pgbouncer) whose command line names
/// `dir` (the postmasters run with `-D <dir>/nodeN/data`, the pooler with
/// its configuration there).
fn processes_under(dir: &std::path::Path) -> Vec<i32> {
    let needle = dir.to_string_lossy().into_owned();
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let comm = std::fs::read_to_string(entry.path().join("comm")).unwrap_or_default();
        if !matches!(comm.trim(), "postgres" | "pgbouncer") {
            continue;
        }
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmdline)
            .replace('\0', " ")
            .contains(&needle)
        {
            out.push(pid);
        }
    }
    out
}

crate::on_both_backends!(a_create_interrupted_by_a_killed_agent_converges);

async fn a_create_interrupted_by_a_killed_agent_converges(backend: Backend) {
    let server = start(backend).await;
    let _processes = Processes::of(&server);
    let token = create_org(&server, "converge", "pro").await;
    let c = Client::new(&server.url).with_token(&token);
    let agent = agent_pid(&server).expect("serve started its agent");

    let r = c
        .post(
            "/databases",
            json!({ "name": "interrupted", "replicas": 1 }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["status"], "creating", "{}", r.text());
    let id = r.json()["id"].as_str().unwrap().to_owned();
    let path = format!("/databases/{id}");
    let dir = server.data_dir.path().join("databases").join(&id);

    // Kill the agent once the create has started processes of the cluster
    // (its leader is up, its replica or pooler not yet, or just).
    let asked = Instant::now();
    while processes_under(&dir).is_empty() {
        assert!(
            asked.elapsed().as_secs() < 120,
            "the agent never started the cluster"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let started = asked.elapsed().as_secs_f64();
    let half_made = processes_under(&dir);
    let killed_at = Instant::now();
    std::process::Command::new("kill")
        .args(["-KILL", &agent.to_string()])
        .status()
        .expect("kill runs");
    let status = c.get(&path).await.json()["status"].clone();
    eprintln!(
        "agent {agent} killed {started:.2} s into the create, {} processes of the cluster up, status {status}",
        half_made.len()
    );
    assert_eq!(status, "creating", "a half-made cluster is never running");

    // serve starts a new agent; it removes the half-made cluster and makes
    // it again.
    let d = c.wait_running(&path).await;
    let recovered = killed_at.elapsed().as_secs_f64();
    let again = agent_pid(&server).expect("a new agent runs");
    assert_ne!(again, agent, "serve started a new agent");
    assert_eq!(d["members"].as_array().unwrap().len(), 2, "{d}");
    let left: Vec<i32> = half_made
        .iter()
        .copied()
        .filter(|pid| processes_under(&dir).contains(pid))
        .collect();
    eprintln!(
        "converged {recovered:.2} s after the kill; {} of {} processes of the killed create left",
        left.len(),
        half_made.len()
    );
    assert!(left.is_empty(), "the killed create left {left:?} running");

    // It works, and a delete removes everything.
    let conn = connection(&c, &id).await;
    let uri = conn["uri"].as_str().unwrap();
    psql_ok(uri, "CREATE TABLE t (n int); INSERT INTO t VALUES (1)");
    assert_eq!(psql_ok(uri, "SELECT count(*) FROM t"), "1");
    super::delete(&c, &id).await;
    assert!(
        processes_under(&dir).is_empty(),
        "a deleted cluster's processes run on"
    );
    assert!(!dir.exists());
}
