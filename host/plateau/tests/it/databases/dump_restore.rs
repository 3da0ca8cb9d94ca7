//! Managed dump restore (issue 32): dumps made by Debian's pg_dump 15
//! (`dump_versions` has those of 16 and 17) of a version-15 database, in custom format and as gzip-compressed plain
//! SQL, uploaded through the presigned URL and restored into a 17 and a
//! 15 database with an extension pre-seeded: every row there, owned by
//! the database's owner role, the counts in the job. A dump that fails
//! half-way, and one with a psql meta-command, leave the database as it
//! was, the root cause in the job. Bad fields are named.

use std::io::Write as _;
use std::time::{Duration, Instant};

use plateau_testkit::{Backend, Client};
use serde_json::{Value, json};

use super::{Processes, connection, create, psql_ok};
use crate::{create_org, start};

/// What every dump test dumps (and what `fixtures/pg_dump14.dump` holds).
pub(super) const SOURCE: &str = include_str!("fixtures/source.sql");

/// `pg_dump` (the host's) of `uri` with `args`: the dump's bytes.
fn pg_dump(uri: &str, args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new("pg_dump")
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

pub(super) fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// Uploads `dump` for database `id` through a presigned URL: its key.
pub(super) async fn upload(c: &Client, id: &str, dump: Vec<u8>) -> String {
    let r = c
        .post(
            &format!("/databases/{id}/restore-dump/upload-url"),
            json!({ "gzip": dump.starts_with(&[0x1f, 0x8b]) }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let ticket = r.json();
    // The limit follows the database's disk (`diskGb`, 1 by default).
    let disk_gb = c.get(&format!("/databases/{id}")).await.json()["diskGb"]
        .as_u64()
        .unwrap();
    assert_eq!(ticket["maxBytes"], disk_gb.max(1) << 30, "{ticket}");
    let url = ticket["url"].as_str().unwrap();
    let put = |body: Vec<u8>| async move {
        reqwest::Client::new()
            .put(url)
            .body(body)
            .send()
            .await
            .unwrap()
            .status()
            .as_u16()
    };
    // The token is the credential.
    let forged = url.split("token=").next().unwrap().to_owned() + "token=00";
    let r = reqwest::Client::new()
        .put(forged)
        .body(dump.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 403);
    assert_eq!(put(dump.clone()).await, 200);
    assert_eq!(put(dump).await, 409, "a URL takes one dump");
    ticket["key"].as_str().unwrap().to_owned()
}

/// Asks for a restore of `key` into `id` and waits until it ends: the job.
pub(super) async fn restored(c: &Client, id: &str, key: &str, seeds: &[&str]) -> Value {
    let pre_seed: Vec<Value> = seeds.iter().map(|e| json!({ "extension": e })).collect();
    let r = c
        .post(
            &format!("/databases/{id}/restore-dump"),
            json!({ "dumpKey": key, "preSeed": pre_seed }),
        )
        .await;
    assert_eq!(r.status, 202, "{}", r.text());
    let job = r.json()["id"].as_str().unwrap().to_owned();
    let began = Instant::now();
    loop {
        let j = c
            .get(&format!("/databases/{id}/restore-dump/{job}"))
            .await
            .json();
        if j["status"] == "completed" || j["status"] == "failed" {
            eprintln!(
                "dump {key} into {id}: {} in {:.2} s",
                j["status"],
                began.elapsed().as_secs_f64()
            );
            return j;
        }
        assert!(began.elapsed() < Duration::from_secs(180), "{j}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dumps_restore_whole_as_the_owner_or_leave_the_database_as_it_was() {
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    let token = create_org(&server, "dumps", "pro").await;
    let c = Client::new(&server.url).with_token(&token);
    let source = create(&c, json!({ "name": "source", "version": "15" })).await;
    let target17 = create(&c, json!({ "name": "target17" })).await;
    let target15 = create(&c, json!({ "name": "target15", "version": "15" })).await;
    let (source, target17, target15) = (
        source["id"].as_str().unwrap(),
        target17["id"].as_str().unwrap(),
        target15["id"].as_str().unwrap(),
    );
    let src = connection(&c, source).await["writeUri"]
        .as_str()
        .unwrap()
        .to_owned();
    // The owner may create citext (a trusted extension) in its own database.
    psql_ok(&src, SOURCE);
    let custom = pg_dump(&src, &["-Fc"]);
    let plain = gzip(&pg_dump(&src, &[]));

    for (target, dump, kind) in [(target17, custom, "custom"), (target15, plain, "plain.gz")] {
        let key = upload(&c, target, dump).await;
        let job = restored(&c, target, &key, &["citext"]).await;
        assert_eq!(job["status"], "completed", "{kind}: {job}");
        assert_eq!(job["tableCounts"]["public.people"], 500, "{kind}: {job}");
        assert_eq!(job["tableCounts"]["public.orders"], 1200, "{kind}: {job}");
        let conn = connection(&c, target).await;
        let uri = conn["writeUri"].as_str().unwrap();
        let owner = conn["username"].as_str().unwrap_or_default().to_owned();
        assert_eq!(
            psql_ok(
                uri,
                "SELECT total(), count(*) FROM people WHERE note = E'semi;colon\\ttab ''quote''' AND email = 'P1@X.IO'"
            ),
            "1200|1",
            "{kind}"
        );
        let owners = psql_ok(
            uri,
            "SELECT string_agg(DISTINCT pg_get_userbyid(relowner)::text, ',') FROM pg_class c \
             JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'",
        );
        let login = psql_ok(uri, "SELECT current_user");
        eprintln!("{kind}: restored objects owned by {owners} (login {login}, user {owner})");
        assert!(!owners.contains(','), "one owner: {owners}");
        assert!(!owners.contains("plateau_admin"), "{owners}");
        // fix-ownership finds nothing to move after a restore, twice.
        for _ in 0..2 {
            let r = c
                .post(&format!("/databases/{target}/fix-ownership"), json!({}))
                .await;
            assert_eq!(r.status, 200, "{}", r.text());
            eprintln!("{kind}: fix-ownership after the restore: {}", r.text());
        }
        // Sequences go on where they were.
        psql_ok(uri, "INSERT INTO people (email) VALUES ('new@x.io')");
        assert_eq!(psql_ok(uri, "SELECT max(id) FROM people"), "501", "{kind}");
    }

    // Half a dump is nothing: a dump that fails at its third statement,
    // and one with a psql meta-command, leave the database as it was.
    let uri = connection(&c, target17).await["writeUri"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = psql_ok(&uri, "SELECT count(*) FROM people");
    let broken = "CREATE TABLE fresh (x int);\nINSERT INTO fresh VALUES (1);\n\nSELECT * FROM missing_table;\n";
    let shell = "CREATE TABLE fresh (x int);\n\\! touch /tmp/plateau-dump-pwned\n";
    for (dump, cause) in [(broken, "line 4"), (shell, "meta-command")] {
        let key = upload(&c, target17, gzip(dump.as_bytes())).await;
        let job = restored(&c, target17, &key, &["hstore"]).await;
        assert_eq!(job["status"], "failed", "{job}");
        let error = job["error"].as_str().unwrap_or_default();
        eprintln!("broken dump: {error}");
        assert!(error.contains(cause), "{cause}: {error}");
        assert_eq!(
            psql_ok(
                &uri,
                "SELECT to_regclass('public.fresh') IS NULL, \
                 (SELECT count(*) FROM pg_extension WHERE extname = 'hstore')"
            ),
            "t|0",
            "untouched, the pre-seeded extension gone"
        );
        assert_eq!(psql_ok(&uri, "SELECT count(*) FROM people"), before);
    }
    assert!(!std::path::Path::new("/tmp/plateau-dump-pwned").exists());

    // Bad fields are named.
    let path = format!("/databases/{target17}/restore-dump");
    for (body, field) in [
        (json!({ "dumpKey": "dump_none" }), "dumpKey"),
        (
            json!({ "dumpKey": "x", "preSeed": [{ "extension": "plpython3u" }] }),
            "preSeed[0].extension",
        ),
    ] {
        let r = c.post(&path, body).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(r.text().contains(field), "{field}: {}", r.text());
    }
    let jobs = c.get(&path).await.json();
    assert_eq!(jobs.as_array().map(Vec::len), Some(3), "{jobs}");
}
