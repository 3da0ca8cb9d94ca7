//! Managed caches (spec sections 1 and 8): real Redis 7 clusters driven
//! through the API and reached with `redis-cli` over TLS and with the
//! `redis` crate, directly and through the sentinels.

mod api;
mod failover;
mod isolation;
mod kill_loop;
mod retention;
mod snapshots;

use std::path::{Path, PathBuf};
use std::process::Output;

use plateau_testkit::{Client, Server};
use redis::aio::MultiplexedConnection;
use redis::sentinel::{SentinelClientBuilder, SentinelServerType};
use redis::{ConnectionAddr, TlsCertificates, TlsMode};
use serde_json::Value;

/// Creates a cache with `body` and waits until it runs; its JSON. The
/// create answers first, with the cache `creating`.
pub async fn create(c: &Client, body: Value) -> Value {
    let r = c.post("/caches", body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let created = r.json();
    assert_eq!(created["status"], "creating", "{created}");
    let id = created["id"].as_str().unwrap();
    c.wait_running(&format!("/caches/{id}")).await
}

/// Changes cache `id` with `body` and waits until the change is applied;
/// its JSON.
pub async fn change(c: &Client, id: &str, body: Value) -> Value {
    let r = c.patch(&format!("/caches/{id}"), body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    c.wait_running(&format!("/caches/{id}")).await
}

/// Deletes cache `id` and waits until it is gone.
pub async fn delete(c: &Client, id: &str) {
    let r = c.delete(&format!("/caches/{id}")).await;
    assert_eq!(r.status, 202, "{}", r.text());
    assert_eq!(r.json()["status"], "deleting", "{}", r.text());
    c.wait_gone(&format!("/caches/{id}")).await;
}

/// A cache's connection details, with its CA written to a file.
pub struct Conn {
    /// The host and port of `uri`: the stable endpoint of a cache with
    /// replicas, the leader of one without.
    pub host: String,
    pub port: u16,
    /// The leader's own address, as the connection was read.
    pub leader: (String, u16),
    pub password: String,
    pub master_name: String,
    pub sentinels: Vec<(String, u16)>,
    pub ca_pem: String,
    pub ca_file: PathBuf,
    _dir: tempfile::TempDir,
}

fn split(address: &str) -> (String, u16) {
    let (h, p) = address.rsplit_once(':').unwrap();
    (h.to_owned(), p.parse().unwrap())
}

pub async fn connection(c: &Client, id: &str) -> Conn {
    let r = c.get(&format!("/caches/{id}/connection")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert_eq!(v["tls"], true, "{v}");
    let dir = tempfile::tempdir().unwrap();
    let ca_pem = v["caCertificate"].as_str().unwrap().to_owned();
    let ca_file = dir.path().join("ca.crt");
    std::fs::write(&ca_file, &ca_pem).unwrap();
    let uri = v["uri"].as_str().unwrap();
    let password = v["password"].as_str().unwrap().to_owned();
    assert_eq!(
        uri,
        format!(
            "rediss://app:{password}@{}:{}",
            v["host"].as_str().unwrap(),
            v["port"]
        )
    );
    Conn {
        host: v["host"].as_str().unwrap().to_owned(),
        port: v["port"].as_u64().unwrap() as u16,
        leader: split(v["leader"].as_str().unwrap()),
        password,
        master_name: v["masterName"].as_str().unwrap().to_owned(),
        sentinels: v["sentinels"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| split(s.as_str().unwrap()))
            .collect(),
        ca_pem,
        ca_file,
        _dir: dir,
    }
}

/// `redis-cli --tls` against `port` as the cache's user with `password`.
pub fn cli(conn: &Conn, port: u16, password: &str, args: &[&str]) -> Output {
    std::process::Command::new("redis-cli")
        .args(["--tls", "--cacert"])
        .arg(&conn.ca_file)
        .args(["-h", &conn.host, "-p", &port.to_string()])
        .args(["--user", "app", "--pass", password, "--no-auth-warning"])
        .args(args)
        .output()
        .expect("redis-cli runs (install redis-tools)")
}

/// `redis-cli --tls` against the leader as `user`; its trimmed output.
pub fn cli_as(conn: &Conn, user: &str, password: &str, args: &[&str]) -> String {
    let out = std::process::Command::new("redis-cli")
        .args(["--tls", "--cacert"])
        .arg(&conn.ca_file)
        .args(["-h", &conn.host, "-p", &conn.port.to_string()])
        .args(["--user", user, "--pass", password, "--no-auth-warning"])
        .args(args)
        .output()
        .expect("redis-cli runs (install redis-tools)");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// The trimmed standard output of [`cli`].
pub fn cli_out(conn: &Conn, args: &[&str]) -> String {
    let out = cli(conn, conn.port, &conn.password, args);
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A TLS connection with the `redis` crate to `port`, trusting the CA.
pub async fn direct(conn: &Conn, port: u16) -> redis::RedisResult<MultiplexedConnection> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = format!("rediss://app:{}@{}:{port}/", conn.password, conn.host);
    let client = redis::Client::build_with_tls(
        url,
        TlsCertificates {
            client_tls: None,
            root_cert: Some(conn.ca_pem.as_bytes().to_vec()),
        },
    )?;
    client.get_multiplexed_async_connection().await
}

/// A connection to the leader the sentinels name, found with the `redis`
/// crate's sentinel client over TLS.
pub async fn through_sentinels(conn: &Conn) -> redis::RedisResult<MultiplexedConnection> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let certs = || TlsCertificates {
        client_tls: None,
        root_cert: Some(conn.ca_pem.as_bytes().to_vec()),
    };
    let sentinels = conn
        .sentinels
        .iter()
        .map(|(host, port)| ConnectionAddr::TcpTls {
            host: host.clone(),
            port: *port,
            insecure: false,
            tls_params: None,
        });
    let mut client =
        SentinelClientBuilder::new(sentinels, &conn.master_name, SentinelServerType::Master)?
            .set_client_to_sentinel_tls_mode(TlsMode::Secure)
            .set_client_to_sentinel_certificates(certs())
            .set_client_to_sentinel_username("app")
            .set_client_to_sentinel_password(&conn.password)
            .set_client_to_redis_tls_mode(TlsMode::Secure)
            .set_client_to_redis_certificates(certs())
            .set_client_to_redis_username("app")
            .set_client_to_redis_password(&conn.password)
            .build()?;
    client.get_async_connection().await
}

pub use crate::{eventually, eventually_or};

/// Kills the cache processes of a test's server when the test ends (they
/// outlive `plateau serve` on purpose, to be adopted by its next start).
/// Declare it after the server, so it runs before the server's data
/// directory goes.
pub struct Processes(PathBuf);

impl Processes {
    pub fn of(server: &Server) -> Processes {
        Processes(server.data_dir.path().join("caches"))
    }
}

fn pid_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for cluster in std::fs::read_dir(root).into_iter().flatten().flatten() {
        for process in std::fs::read_dir(cluster.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            for name in ["redis.pid", "haproxy.pid"] {
                let pid = process.path().join(name);
                if pid.exists() {
                    out.push(pid);
                }
            }
        }
    }
    out
}

impl Drop for Processes {
    fn drop(&mut self) {
        let pids: Vec<String> = pid_files(&self.0)
            .iter()
            .filter_map(|p| std::fs::read_to_string(p).ok())
            .map(|p| p.trim().to_owned())
            .collect();
        // The clusters' users, named like the clusters (under root).
        let users: Vec<String> = std::fs::read_dir(&self.0)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|name| name.starts_with("cch_"))
            .collect();
        // Without their files the supervisor cannot start them again.
        let _ = std::fs::remove_dir_all(&self.0);
        if !pids.is_empty() {
            let _ = std::process::Command::new("kill")
                .arg("-KILL")
                .args(&pids)
                .status();
        }
        for user in users {
            // --force: a killed process may not have ended yet.
            let _ = std::process::Command::new("userdel")
                .args(["--force", &user])
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

/// SIGKILLs the redis process that an `INFO server` answer describes.
pub fn kill_described(info: &str) {
    let pid = info
        .lines()
        .find_map(|l| l.strip_prefix("process_id:"))
        .expect("INFO server names the process")
        .trim()
        .to_owned();
    let status = std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .unwrap();
    assert!(status.success());
}
