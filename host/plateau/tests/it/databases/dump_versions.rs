//! Managed dump restore of pg_dump 14, 16 and 17 (issue 32; Debian's 15
//! is `dump_restore`'s), on one server, the versions in parallel: a
//! custom-format dump made by 16's and 17's own pg_dump (the client tools
//! `plateau install postgres` unpacks) of a database of that version,
//! restored into another database of that version (gzip-compressed for
//! 17); and the committed dump of pg_dump 14 (`fixtures/pg_dump14.dump`,
//! made by `fixtures/make-pg14-dump.sh` from a 14.23 server: no 14 is
//! offered or installed) restored into a 15 and a 17 database. Every row
//! there, owned by the owner role. Then a larger dump streamed from the
//! upload to the restore: the peak memory of `plateau serve` (the upload)
//! and of the agent (the restore) is printed, and stays well under the
//! dump's size (`PLATEAU_TEST_DUMP_MIB`, 64 by default).

use std::path::PathBuf;

use plateau_testkit::{Backend, Client, Server};
use serde_json::json;

use super::dump_restore::{SOURCE, gzip, restored, upload};
use super::{Processes, connection, create, psql_ok};
use crate::{create_org, start};

/// `version`'s own pg_dump.
fn pg_dump_of(version: &str) -> PathBuf {
    let root = plateau_databases::bins::default_root();
    plateau_databases::bins::client_tool(&root, version, "pg_dump")
        .unwrap_or_else(|| panic!("pg_dump {version} is installed (plateau install postgres)"))
}

/// A dump of `uri` by `version`'s pg_dump with `args`.
fn pg_dump(version: &str, uri: &str, args: &[&str]) -> Vec<u8> {
    let bin = pg_dump_of(version);
    let said = std::process::Command::new(&bin)
        .arg("--version")
        .output()
        .expect("pg_dump runs");
    let said = String::from_utf8_lossy(&said.stdout).trim().to_owned();
    assert!(said.contains(&format!(") {version}.")), "{said}");
    eprintln!("dumping with {said} ({})", bin.display());
    let out = std::process::Command::new(bin)
        .args(args)
        .arg(uri)
        .output()
        .expect("pg_dump runs");
    assert!(
        out.status.success(),
        "pg_dump: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// A source and a target database of `version` named after `tag`.
async fn pair(c: &Client, version: &str, tag: &str) -> (String, String) {
    let source = create(
        c,
        json!({ "name": format!("{tag}-source"), "version": version }),
    )
    .await;
    let target = create(
        c,
        json!({ "name": format!("{tag}-target"), "version": version }),
    )
    .await;
    let src = connection(c, source["id"].as_str().unwrap()).await["writeUri"]
        .as_str()
        .unwrap()
        .to_owned();
    (src, target["id"].as_str().unwrap().to_owned())
}

/// The dump of pg_dump 14, made by `fixtures/make-pg14-dump.sh`.
const PG_DUMP_14: &[u8] = include_bytes!("fixtures/pg_dump14.dump");

/// A dump of [`SOURCE`] by `version`'s own pg_dump (gzip-compressed with
/// `compress`) restored into a database of that version.
async fn own_dump_restores(c: &Client, version: &str, compress: bool) {
    let (src, target) = pair(c, version, &format!("own{version}")).await;
    psql_ok(&src, SOURCE);
    let mut dump = pg_dump(version, &src, &["-Fc"]);
    assert!(dump.starts_with(b"PGDMP"));
    if compress {
        dump = gzip(&dump);
    }
    restores(c, &target, version, dump).await;
}

/// The dump of pg_dump 14 restored into a new database of `version`.
async fn dump_of_14_restores(c: &Client, version: &str) {
    let target = create(
        c,
        json!({ "name": format!("from14to{version}"), "version": version }),
    )
    .await;
    let target = target["id"].as_str().unwrap().to_owned();
    restores(c, &target, version, PG_DUMP_14.to_vec()).await;
}

/// Uploads `dump` (of [`SOURCE`]) into `target` and restores it: every
/// row there, the owner role owning every relation, writes go on.
async fn restores(c: &Client, target: &str, version: &str, dump: Vec<u8>) {
    let key = upload(c, target, dump).await;
    let job = restored(c, target, &key, &["citext"]).await;
    assert_eq!(job["status"], "completed", "{version}: {job}");
    assert_eq!(job["tableCounts"]["public.people"], 500, "{job}");
    assert_eq!(job["tableCounts"]["public.orders"], 1200, "{job}");
    let uri = connection(c, target).await["writeUri"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(
        psql_ok(
            &uri,
            "SELECT current_setting('server_version_num')::int / 10000"
        ),
        version
    );
    assert_eq!(
        psql_ok(
            &uri,
            "SELECT total(), count(*) FROM people WHERE note = E'semi;colon\\ttab ''quote''' AND email = 'P1@X.IO'"
        ),
        "1200|1"
    );
    let owners = psql_ok(
        &uri,
        "SELECT string_agg(DISTINCT pg_get_userbyid(relowner)::text, ',') FROM pg_class c \
         JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'",
    );
    assert!(
        !owners.contains(',') && !owners.contains("plateau_admin"),
        "{owners}"
    );
    psql_ok(&uri, "INSERT INTO people (email) VALUES ('new@x.io')");
    assert_eq!(psql_ok(&uri, "SELECT max(id) FROM people"), "501");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dumps_of_pg_dump_14_16_and_17_restore_and_a_large_one_streams() {
    // The committed dump is pg_dump 14's, as its header says.
    let listed = std::process::Command::new("pg_restore")
        .arg("-l")
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/it/databases/fixtures/pg_dump14.dump"
        ))
        .output()
        .expect("pg_restore runs");
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.contains("Dumped by pg_dump version: 14."),
        "{listed}"
    );
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    // Six databases here, two for the large dump: the scale plan's ten.
    let token = create_org(&server, "dumps", "scale").await;
    let c = Client::new(&server.url).with_token(&token);
    let started = std::time::Instant::now();
    tokio::join!(
        own_dump_restores(&c, "16", false),
        own_dump_restores(&c, "17", true),
        dump_of_14_restores(&c, "15"),
        dump_of_14_restores(&c, "17"),
    );
    eprintln!(
        "dumps of pg_dump 14 (into 15 and 17), 16 and 17 restored in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    large_dump_streams(&server, &c).await;
}

/// `field` of `/proc/<pid>/status`, in KiB.
fn status_kib(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| {
            l.strip_prefix(field)?
                .trim()
                .strip_suffix(" kB")?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// Resets the peak RSS of `pid` to its RSS now; that RSS.
fn reset_peak(pid: u32) -> u64 {
    std::fs::write(format!("/proc/{pid}/clear_refs"), "5").expect("clear_refs (root)");
    status_kib(pid, "VmRSS:")
}

fn agent_pid(s: &Server) -> u32 {
    std::fs::read_to_string(s.data_dir.path().join("agent/pid"))
        .expect("serve started its agent")
        .trim()
        .parse()
        .unwrap()
}

/// A larger dump (`PLATEAU_TEST_DUMP_MIB`) streamed from the upload to
/// the restore, the peak memory of both processes printed.
async fn large_dump_streams(server: &Server, c: &Client) {
    let mib: u64 = std::env::var("PLATEAU_TEST_DUMP_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let (src, target) = pair(c, "17", "large").await;
    // Rows of about 256 bytes; an uncompressed custom dump of `mib` MiB.
    let rows = mib * 1024 * 1024 / 256;
    psql_ok(
        &src,
        &format!(
            "CREATE TABLE big (id int PRIMARY KEY, body text); \
             INSERT INTO big SELECT g, repeat(md5(g::text), 7) FROM generate_series(1, {rows}) g"
        ),
    );
    let dump = pg_dump("17", &src, &["-Fc", "-Z0"]);
    let size = dump.len() as u64;
    eprintln!("dump: {:.1} MiB", size as f64 / 1048576.0);

    let (serve, agent) = (server.pid().unwrap(), agent_pid(server));
    let (serve_before, agent_before) = (reset_peak(serve), reset_peak(agent));
    let r = c
        .post(
            &format!("/databases/{target}/restore-dump/upload-url"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let ticket = r.json();
    let put = reqwest::Client::new()
        .put(ticket["url"].as_str().unwrap())
        .body(dump)
        .send()
        .await
        .unwrap();
    assert_eq!(put.status().as_u16(), 200);
    let key = ticket["key"].as_str().unwrap();
    let job = restored(c, &target, key, &[]).await;
    assert_eq!(job["status"], "completed", "{job}");
    assert_eq!(job["tableCounts"]["public.big"], rows, "{job}");

    let grew = |pid: u32, before: u64| status_kib(pid, "VmHWM:").saturating_sub(before) * 1024;
    let (serve_grew, agent_grew) = (grew(serve, serve_before), grew(agent, agent_before));
    eprintln!(
        "a {:.1} MiB dump: peak RSS above the start {:.1} MiB in plateau serve (the upload), \
         {:.1} MiB in the agent (the restore)",
        size as f64 / 1048576.0,
        serve_grew as f64 / 1048576.0,
        agent_grew as f64 / 1048576.0
    );
    // Neither holds the dump: the old code held all of it in each.
    assert!(serve_grew < size / 2, "serve grew {serve_grew} for {size}");
    assert!(
        agent_grew < size / 2,
        "the agent grew {agent_grew} for {size}"
    );
}
