//! TLS on every endpoint of a database: the pooled `uri`, `readUri`,
//! `writeUri` (TLS end to end through the write endpoint) and each
//! member's own port verify with `sslmode=verify-full` against the CA the
//! API hands out, and fail against another CA.

use std::process::Command;

use plateau_testkit::{Backend, Client};
use serde_json::{Value, json};

use super::drivers::with_ca;
use super::ha::{all_streaming, wait_for};
use super::{Processes, connection, create, psql, psql_ok};
use crate::{create_org, start};

/// `uri` with its port replaced by `port`.
fn at_port(uri: &str, port: &Value) -> String {
    let (head, rest) = uri.rsplit_once('@').unwrap();
    let (authority, tail) = rest.split_once('/').unwrap();
    let host = authority.rsplit_once(':').unwrap().0;
    format!("{head}@{host}:{port}/{tail}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_endpoint_verifies_against_the_databases_ca() {
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    // A plan with replicas and several databases.
    let c = Client::new(&server.url).with_token(&create_org(&server, "tls", "pro").await);
    let d = create(&c, json!({ "name": "tls", "replicas": 1 })).await;
    let id = d["id"].as_str().unwrap();
    let d = wait_for(&c, id, "the replica streaming", |d| all_streaming(d, 1)).await;
    let conn = connection(&c, id).await;
    let ca = conn["caCertificate"].as_str().unwrap();
    assert!(ca.starts_with("-----BEGIN CERTIFICATE-----"), "{ca}");
    let work = tempfile::tempdir().unwrap();
    let uri = conn["uri"].as_str().unwrap();
    let write_uri = conn["writeUri"].as_str().unwrap();
    let read_uri = conn["readUri"].as_str().unwrap();
    for given in [uri, write_uri, read_uri] {
        assert!(given.ends_with("?sslmode=require"), "{given}");
    }

    let mut endpoints = vec![
        ("uri", with_ca(&conn, uri, work.path()), "f"),
        ("readUri", with_ca(&conn, read_uri, work.path()), "t"),
        ("writeUri", with_ca(&conn, write_uri, work.path()), "f"),
    ];
    for m in d["members"].as_array().unwrap() {
        let in_recovery = if m["role"] == "leader" { "f" } else { "t" };
        endpoints.push((
            "a member's port",
            with_ca(&conn, &at_port(write_uri, &m["port"]), work.path()),
            in_recovery,
        ));
    }
    for (name, verified, in_recovery) in &endpoints {
        assert_eq!(
            psql_ok(verified, "SELECT pg_is_in_recovery()"),
            *in_recovery,
            "{name}"
        );
    }
    // Straight to a server, the session itself is TLS (through the
    // pooler it is the client's side of pgbouncer that is).
    assert_eq!(
        psql_ok(
            &endpoints[2].1,
            "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"
        ),
        "t"
    );

    // Another CA: every endpoint refuses to be verified by it.
    let other = work.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let made = Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "1", "-subj", "/CN=another CA"])
        .arg("-keyout")
        .arg(other.join("ca.key"))
        .arg("-out")
        .arg(other.join("ca.crt"))
        .output()
        .expect("openssl runs");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let mut refused = 0;
    for (name, verified, _) in &endpoints {
        let wrong = verified.replace(
            &work.path().join("ca.crt").display().to_string(),
            &other.join("ca.crt").display().to_string(),
        );
        let out = psql(&wrong, "SELECT 1");
        assert!(!out.status.success(), "{name} verified by another CA");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("certificate verify failed"), "{name}: {err}");
        refused += 1;
    }
    eprintln!(
        "tls: {} endpoints verified with verify-full against the database's CA, {refused} refused another CA",
        endpoints.len()
    );
}
