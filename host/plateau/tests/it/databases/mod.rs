//! Managed PostgreSQL (spec sections 4.5, 4.6 and 8): real clusters driven
//! through the API and reached with `psql` and with sqlx, through the
//! pooler (`uri`) and through the write endpoint to the leader
//! (`writeUri`).

mod api;
mod backups;
mod branch_reset;
mod converge;
mod drivers;
mod dump_restore;
mod dump_versions;
mod ha;
mod inside;
mod isolation;
mod outage;
mod quota;
mod replication;
mod restore_kill;
mod rotation;
mod secrets;
mod tls;

use std::path::{Path, PathBuf};
use std::process::Output;

use plateau_testkit::{Client, Server};
use serde_json::Value;
use sqlx::Connection;
use sqlx::postgres::PgConnection;

/// Creates a database with `body` and waits until it runs; its JSON. The
/// create answers first, with the database `creating`.
pub async fn create(c: &Client, body: Value) -> Value {
    let r = c.post("/databases", body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let created = r.json();
    assert_eq!(created["status"], "creating", "{created}");
    let id = created["id"].as_str().unwrap();
    c.wait_running(&format!("/databases/{id}")).await
}

/// Deletes database `id` and waits until it is gone.
pub async fn delete(c: &Client, id: &str) {
    let r = c.delete(&format!("/databases/{id}")).await;
    assert_eq!(r.status, 202, "{}", r.text());
    assert_eq!(r.json()["status"], "deleting", "{}", r.text());
    c.wait_gone(&format!("/databases/{id}")).await;
}

/// A database's connection details.
pub async fn connection(c: &Client, id: &str) -> Value {
    let r = c.get(&format!("/databases/{id}/connection")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

/// `psql URI -Atc SQL`.
pub fn psql(uri: &str, sql: &str) -> Output {
    std::process::Command::new("psql")
        .arg(uri)
        .args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .expect("psql runs (install postgresql-client)")
}

/// The trimmed output of a [`psql`] that must succeed.
pub fn psql_ok(uri: &str, sql: &str) -> String {
    let out = psql(uri, sql);
    assert!(
        out.status.success(),
        "psql {sql:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A sqlx connection to `uri`. The workspace builds sqlx without TLS, so
/// the URIs' `sslmode=require` becomes `prefer`, a plain session (the
/// servers take those for the host's own sessions); TLS itself is tested
/// with libpq and the drivers (`drivers`, `tls`).
pub async fn sqlx_connect(uri: &str) -> Result<PgConnection, sqlx::Error> {
    PgConnection::connect(&uri.replace("sslmode=require", "sslmode=prefer")).await
}

/// Kills the database processes of a test's server when the test ends
/// (they outlive `plateau serve` on purpose, to be adopted by its next
/// start). Declare it after the server, so it runs before the server's
/// data directory goes.
pub struct Processes(PathBuf);

impl Processes {
    pub fn of(server: &Server) -> Processes {
        Processes(server.data_dir.path().join("databases"))
    }
}

/// The pids of the postmasters, poolers and write endpoints under `root`.
pub fn pids(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for cluster in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let dir = cluster.path();
        // Every member's postmaster (`nodeN/data`), the pooler and the
        // write endpoint's master.
        let mut files = vec![
            dir.join("pooler/pgbouncer.pid"),
            dir.join("router/haproxy.pid"),
        ];
        for member in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            files.push(member.path().join("data/postmaster.pid"));
        }
        for file in files {
            if let Some(pid) = std::fs::read_to_string(file)
                .ok()
                .and_then(|t| t.lines().next().map(|l| l.trim().to_owned()))
            {
                out.push(pid);
            }
        }
    }
    out
}

/// The OS users of the clusters under `root` (the host makes one per
/// cluster when it runs as root): the owners of their directories.
fn cluster_users(root: &Path) -> Vec<String> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    for cluster in std::fs::read_dir(root).into_iter().flatten().flatten() {
        let Ok(meta) = cluster.metadata() else {
            continue;
        };
        let Ok(found) = std::process::Command::new("getent")
            .args(["passwd", &meta.uid().to_string()])
            .output()
        else {
            continue;
        };
        let name = String::from_utf8_lossy(&found.stdout)
            .split(':')
            .next()
            .unwrap_or_default()
            .to_owned();
        if name.starts_with("pgc_") {
            out.push(name);
        }
    }
    out
}

impl Drop for Processes {
    fn drop(&mut self) {
        let pids = pids(&self.0);
        let users = cluster_users(&self.0);
        // Without their files the supervisor cannot start them again.
        let _ = std::fs::remove_dir_all(&self.0);
        if !pids.is_empty() {
            let _ = std::process::Command::new("kill")
                .arg("-KILL")
                .args(&pids)
                .status();
        }
        for user in users {
            let _ = std::process::Command::new("userdel")
                .args(["-f", &user])
                .output();
        }
    }
}
