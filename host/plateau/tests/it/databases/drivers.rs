//! The drivers people use, with their default settings, through the pooled
//! `uri` (pgbouncer in transaction mode): psycopg 3 (prepares a statement
//! run 5 times), asyncpg (prepares every statement) and node-postgres
//! (named statements). Several connections in turn, each reusing its
//! prepared statements, so the pooler's server connections are shared
//! between clients that prepared statements of the same names: without
//! pgbouncer's prepared-statement support this fails with `prepared
//! statement "..." already exists`. Then pgvector on every version.

use std::path::{Path, PathBuf};
use std::process::Command;

use plateau_testkit::{Backend, Client};
use serde_json::{Value, json};

use super::{Processes, connection, create, psql_ok};
use crate::{create_org, start};

const PSYCOPG: &str = r#"
import sys, psycopg
uri = sys.argv[1]
total = 0
for c in range(4):
    with psycopg.connect(uri) as conn:
        conn.execute("CREATE TABLE IF NOT EXISTS seen (driver text, n int)")
        for i in range(12):
            total += conn.execute("SELECT %s::int + 1", (i,)).fetchone()[0]
            conn.execute("INSERT INTO seen VALUES (%s, %s)", ("psycopg", i))
        conn.commit()
print(total)
"#;

const ASYNCPG: &str = r#"
import sys, asyncio, asyncpg
async def main(uri):
    total = 0
    for c in range(4):
        conn = await asyncpg.connect(uri)
        for i in range(12):
            total += await conn.fetchval("SELECT $1::int + 1", i)
            await conn.execute("INSERT INTO seen VALUES ($1, $2)", "asyncpg", i)
        async with conn.transaction():
            await conn.fetchval("SELECT count(*) FROM seen WHERE n = $1", 1)
        await conn.close()
    print(total)
asyncio.run(main(sys.argv[1]))
"#;

const NODE_PG: &str = r#"
const { Client } = require('pg');
(async () => {
  let total = 0;
  for (let c = 0; c < 4; c++) {
    const client = new Client({ connectionString: process.argv[1] });
    await client.connect();
    for (let i = 0; i < 12; i++) {
      const r = await client.query({ name: 'plus-one', text: 'SELECT $1::int + 1 AS n', values: [i] });
      total += r.rows[0].n;
      await client.query({ name: 'insert', text: 'INSERT INTO seen VALUES ($1, $2)', values: ['node-postgres', i] });
    }
    await client.end();
  }
  console.log(total);
})().catch((e) => { console.error(e.message); process.exit(1); });
"#;

/// node-postgres, which `cargo xtask test` installs under
/// `target/npm-clients`.
fn node_modules() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/npm-clients/node_modules")
}

/// `uri` (which asks for TLS) verifying the server against the cluster's
/// CA, which the API hands out: `sslmode=verify-full` and the CA written
/// into `dir`.
pub fn with_ca(conn: &Value, uri: &str, dir: &Path) -> String {
    let ca = conn["caCertificate"].as_str().expect("a CA certificate");
    let path = dir.join("ca.crt");
    std::fs::write(&path, ca).unwrap();
    assert!(uri.ends_with("?sslmode=require"), "{uri}");
    format!(
        "{}?sslmode=verify-full&sslrootcert={}",
        uri.trim_end_matches("?sslmode=require"),
        path.display()
    )
}

fn run(program: &str, args: &[&str], node_path: Option<&Path>) -> String {
    let mut cmd = Command::new(program);
    cmd.args(args);
    if let Some(path) = node_path {
        cmd.env("NODE_PATH", path);
    }
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{program} runs: {e}"));
    assert!(
        out.status.success(),
        "{program} {}: {}{}",
        args.first()
            .copied()
            .unwrap_or_default()
            .lines()
            .nth(1)
            .unwrap_or_default(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drivers_with_default_settings_through_the_pooled_uri() {
    assert!(
        node_modules().join("pg").exists(),
        "node-postgres is required: cargo xtask test installs it under target/npm-clients"
    );
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    let c = server.client();
    let d = create(&c, json!({ "name": "drivers" })).await;
    let id = d["id"].as_str().unwrap();
    let conn = connection(&c, id).await;
    let work = tempfile::tempdir().unwrap();
    let uri = with_ca(&conn, conn["uri"].as_str().unwrap(), work.path());

    // 4 connections in turn, 12 times each: 4 * (1 + ... + 12).
    let expected = (4 * (1..=12).sum::<i32>()).to_string();
    let started = std::time::Instant::now();
    assert_eq!(run("python3", &["-c", PSYCOPG, &uri], None), expected);
    assert_eq!(run("python3", &["-c", ASYNCPG, &uri], None), expected);
    assert_eq!(
        run("node", &["-e", NODE_PG, &uri], Some(&node_modules())),
        expected
    );
    eprintln!(
        "drivers: psycopg 3, asyncpg and node-postgres, 4 connections of 24 prepared executions each, in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(
        psql_ok(
            &uri,
            "SELECT count(*) FROM seen GROUP BY driver ORDER BY driver"
        ),
        "48\n48\n48"
    );
}

/// pgvector on every offered version that has it: created through the API
/// and used (a distance), or refused naming it where the host has no build.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pgvector_on_every_version() {
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    let c = Client::new(&server.url).with_token(&create_org(&server, "vectors", "pro").await);
    let work = tempfile::tempdir().unwrap();
    for version in ["15", "16", "17"] {
        let name = format!("vector{version}");
        let d = create(&c, json!({ "name": name, "version": version })).await;
        let id = d["id"].as_str().unwrap();
        let r = c
            .post(
                &format!("/databases/{id}/extensions"),
                json!({ "name": "pgvector" }),
            )
            .await;
        if version == "16" {
            // No registry this host reaches has PostgreSQL 16's headers.
            assert_eq!(r.status, 400, "{}", r.text());
            assert_eq!(r.json()["code"], "extension_not_installed");
            eprintln!("pgvector: not available on 16 (no server headers to build it)");
            continue;
        }
        assert_eq!(r.status, 201, "{version}: {}", r.text());
        let conn = connection(&c, id).await;
        let uri = with_ca(&conn, conn["writeUri"].as_str().unwrap(), work.path());
        psql_ok(&uri, "CREATE TABLE items (v vector(3))");
        psql_ok(&uri, "INSERT INTO items VALUES ('[1,2,3]'), ('[4,5,6]')");
        assert_eq!(
            psql_ok(&uri, "SELECT v <-> '[1,2,4]' FROM items ORDER BY 1 LIMIT 1"),
            "1",
            "PostgreSQL {version}"
        );
        let version_row = psql_ok(
            &uri,
            "SELECT extversion FROM pg_extension WHERE extname = 'vector'",
        );
        eprintln!("pgvector {version_row} on PostgreSQL {version}");
    }
}
