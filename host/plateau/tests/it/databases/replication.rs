//! Logical replication (issue 32): a PostgreSQL 15 database (Debian's)
//! replicates into a 17 one (npm's): the rows copied first, then inserts,
//! updates and deletes on the source seen on the target, the lag reported
//! and the cutover verdict ready, the sequences synced; the tenant's
//! trigger that fires in the apply worker runs without superuser; dropping
//! the subscription removes its slot and role on the source; a restored
//! copy of the subscriber keeps no subscription while the original streams
//! on; the tenant
//! can neither re-point nor drop the host's subscription. Each
//! preflight refusal: no replica identity, tables the target lacks, no
//! such publication, a source newer than the target, a source the egress
//! guard refuses, a source with `wal_level=replica` (until `apply-config`
//! restarts it with `logical`); and bad publications.

use std::time::{Duration, Instant};

use plateau_testkit::{Backend, Client, Server};
use serde_json::{Value, json};

use super::{Processes, connection, create, psql_ok};
use crate::{create_org, start};

async fn uri(c: &Client, id: &str) -> String {
    connection(c, id).await["writeUri"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Asks for a subscription of `target`; the answer.
async fn subscribe(c: &Client, target: &str, body: Value) -> plateau_testkit::Response {
    c.post(&format!("/databases/{target}/subscriptions"), body)
        .await
}

/// A subscription the preflight must refuse with `code`, its detail
/// holding `says`.
async fn refused(c: &Client, target: &str, body: Value, code: &str, says: &str) {
    let began = Instant::now();
    let r = subscribe(c, target, body.clone()).await;
    assert_eq!(r.status, 400, "{body}: {}", r.text());
    assert_eq!(r.json()["code"], code, "{body}: {}", r.text());
    assert!(r.text().contains(says), "{body}: {}", r.text());
    eprintln!(
        "refused {code} in {:.2} s: {}",
        began.elapsed().as_secs_f64(),
        r.json()["detail"]
    );
}

/// Sets `wal_level` of database `id`'s leader through its
/// `postgresql.auto.conf` (which outranks the host's settings, as a cluster
/// started before logical replication was offered had it), or removes the
/// line, then restarts it with `apply-config`.
async fn set_wal_level(server: &Server, c: &Client, id: &str, level: Option<&str>) {
    let path = server
        .data_dir
        .path()
        .join("databases")
        .join(id)
        .join("node0/data/postgresql.auto.conf");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut kept: String = text
        .lines()
        .filter(|l| !l.starts_with("wal_level"))
        .map(|l| format!("{l}\n"))
        .collect();
    if let Some(level) = level {
        kept.push_str(&format!("wal_level = '{level}'\n"));
    }
    std::fs::write(&path, kept).unwrap();
    let r = c
        .post(&format!("/databases/{id}/apply-config"), json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
}

const SOURCE: &str = "CREATE TABLE items (id bigserial PRIMARY KEY, name text NOT NULL); \
    INSERT INTO items (name) SELECT 'before ' || g FROM generate_series(1, 100) g; \
    CREATE TABLE notes (body text); \
    CREATE TABLE extra (id int PRIMARY KEY);";

/// The target's table, and a trigger of the tenant's that fires in the
/// apply worker too (`ENABLE ALWAYS`) and writes down who it runs as.
const TARGET: &str = "CREATE TABLE items (id bigserial PRIMARY KEY, name text NOT NULL); \
    CREATE TABLE audit (who text, su text); \
    CREATE FUNCTION log_apply() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN \
      INSERT INTO public.audit VALUES (current_user, current_setting('is_superuser')); \
      RETURN NEW; END $$; \
    CREATE TRIGGER log_apply AFTER INSERT ON items FOR EACH ROW EXECUTE FUNCTION log_apply(); \
    ALTER TABLE items ENABLE ALWAYS TRIGGER log_apply;";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_15_database_replicates_into_a_17_one_after_a_preflight() {
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    let token = create_org(&server, "replication", "pro").await;
    let c = Client::new(&server.url).with_token(&token);
    let src = create(&c, json!({ "name": "src", "version": "15" })).await;
    let dst = create(&c, json!({ "name": "dst", "version": "17" })).await;
    let old = create(&c, json!({ "name": "old", "version": "16" })).await;
    let (src, dst, old) = (
        src["id"].as_str().unwrap(),
        dst["id"].as_str().unwrap(),
        old["id"].as_str().unwrap(),
    );
    let (src_uri, dst_uri) = (uri(&c, src).await, uri(&c, dst).await);
    psql_ok(&src_uri, SOURCE);
    psql_ok(&dst_uri, TARGET);

    // Publications.
    let pubs = format!("/databases/{src}/publications");
    for (body, tables) in [
        (
            json!({ "name": "items_pub", "tables": ["items"] }),
            json!(["public.items"]),
        ),
        (
            json!({ "name": "everything", "allTables": true }),
            json!(["public.extra", "public.items", "public.notes"]),
        ),
        (
            json!({ "name": "extra_pub", "tables": ["public.extra"] }),
            json!(["public.extra"]),
        ),
    ] {
        let r = c.post(&pubs, body.clone()).await;
        assert_eq!(r.status, 201, "{body}: {}", r.text());
        assert_eq!(r.json()["tables"], tables, "{}", r.text());
    }
    for (body, says) in [
        (
            json!({ "name": "both", "allTables": true, "tables": ["items"] }),
            "tables",
        ),
        (json!({ "name": "none" }), "tables"),
        (json!({ "name": "Bad", "allTables": true }), "name"),
        (
            json!({ "name": "ghost", "tables": ["nope"] }),
            "public.nope",
        ),
        (
            json!({ "name": "items_pub", "tables": ["items"] }),
            "already exists",
        ),
    ] {
        let r = c.post(&pubs, body.clone()).await;
        assert_eq!(r.status, 400, "{body}: {}", r.text());
        assert!(r.text().contains(says), "{body}: {}", r.text());
    }
    let listed = c.get(&pubs).await.json();
    assert_eq!(listed.as_array().unwrap().len(), 3, "{listed}");

    // Each preflight refusal.
    let sub = |source: &str, publication: &str| json!({ "name": "from15", "source": source, "publication": publication });
    refused(
        &c,
        dst,
        sub(src, "everything"),
        "replica_identity_missing",
        "public.notes",
    )
    .await;
    refused(
        &c,
        dst,
        sub(src, "extra_pub"),
        "tables_missing",
        "public.extra",
    )
    .await;
    refused(
        &c,
        dst,
        sub(src, "nothing_here"),
        "publication_missing",
        "nothing_here",
    )
    .await;
    refused(
        &c,
        src,
        sub(dst, "items_pub"),
        "unsupported_version_pair",
        "PostgreSQL 17",
    )
    .await;
    let local = "postgresql://someone:secret@127.0.0.1:5432/postgres";
    refused(
        &c,
        dst,
        sub(local, "items_pub"),
        "source_unreachable",
        "loopback",
    )
    .await;
    refused(
        &c,
        dst,
        sub("dbs_nope", "items_pub"),
        "invalid_source",
        "dbs_nope",
    )
    .await;
    set_wal_level(&server, &c, old, Some("replica")).await;
    assert_eq!(psql_ok(&uri(&c, old).await, "SHOW wal_level"), "replica");
    refused(
        &c,
        dst,
        sub(old, "items_pub"),
        "wal_level_not_logical",
        "apply-config",
    )
    .await;
    set_wal_level(&server, &c, old, None).await;
    assert_eq!(psql_ok(&uri(&c, old).await, "SHOW wal_level"), "logical");
    refused(
        &c,
        dst,
        sub(old, "items_pub"),
        "publication_missing",
        "items_pub",
    )
    .await;

    // The subscription: rows copied, then changes streamed.
    let began = Instant::now();
    let r = subscribe(&c, dst, sub(src, "items_pub")).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["sourceDatabaseId"], src, "{}", r.text());
    eprintln!("subscribed in {:.2} s", began.elapsed().as_secs_f64());
    psql_ok(
        &src_uri,
        "INSERT INTO items (name) SELECT 'after ' || g FROM generate_series(1, 5) g; \
         UPDATE items SET name = 'changed' WHERE id = 1; DELETE FROM items WHERE id = 2;",
    );
    let expected = "104|5|1";
    let count = "SELECT count(*), count(*) FILTER (WHERE name LIKE 'after%'), \
                 count(*) FILTER (WHERE name = 'changed') FROM items";
    let mut view;
    loop {
        let r = c.get(&format!("/databases/{dst}/subscriptions")).await;
        assert_eq!(r.status, 200, "{}", r.text());
        view = r.json()[0].clone();
        if view["cutover"]["ready"] == true && psql_ok(&dst_uri, count) == expected {
            break;
        }
        assert!(
            began.elapsed() < Duration::from_secs(120),
            "not caught up: {view} rows {}",
            psql_ok(&dst_uri, count)
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    eprintln!(
        "caught up (rows copied and changes applied, cutover ready) {:.2} s after the subscribe; lag {} bytes",
        began.elapsed().as_secs_f64(),
        view["lagBytes"]
    );
    assert!(view["lagBytes"].as_i64().is_some(), "{view}");
    assert_eq!(view["tablesReady"], 1, "{view}");
    assert_eq!(view["streaming"], true, "{view}");
    let one = c
        .get(&format!("/databases/{dst}/subscriptions/from15"))
        .await;
    assert_eq!(one.status, 200, "{}", one.text());
    let audit = psql_ok(
        &dst_uri,
        "SELECT count(*) > 0, bool_or(su = 'on') FROM audit",
    );
    assert_eq!(
        audit, "t|f",
        "the tenant's trigger ran as a superuser in the apply worker"
    );

    // The tenant does not own the subscription: it cannot point it
    // elsewhere, nor drop it.
    for sql in [
        "ALTER SUBSCRIPTION from15 CONNECTION 'host=169.254.169.254 dbname=x'",
        "DROP SUBSCRIPTION from15",
    ] {
        let out = super::psql(&dst_uri, sql);
        assert!(!out.status.success(), "the owner ran {sql}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("must be owner"), "{sql}: {err}");
    }

    // A restored copy of the subscriber keeps no subscription (its slot is
    // the original's), and the original goes on streaming.
    // The plan allows 3 databases.
    super::delete(&c, old).await;
    super::backups::until_backed_up(&c, dst, "full").await;
    let began = Instant::now();
    let r = c
        .post(
            &format!("/databases/{dst}/restore"),
            json!({ "name": "dst-copy" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let copy = r.json()["id"].as_str().unwrap().to_owned();
    c.wait_running(&format!("/databases/{copy}")).await;
    let copy_uri = uri(&c, &copy).await;
    assert_eq!(
        psql_ok(
            &copy_uri,
            "SELECT (SELECT count(subname) FROM pg_subscription), (SELECT count(*) FROM items)"
        ),
        "0|104"
    );
    eprintln!(
        "subscriber restored without its subscription in {:.2} s",
        began.elapsed().as_secs_f64()
    );
    psql_ok(&src_uri, "INSERT INTO items (name) VALUES ('late')");
    let began = Instant::now();
    while psql_ok(&dst_uri, "SELECT count(*) FROM items WHERE name = 'late'") != "1" {
        assert!(
            began.elapsed() < Duration::from_secs(60),
            "the original stopped streaming"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    eprintln!(
        "a row written after the restore reached the original in {:.2} s",
        began.elapsed().as_secs_f64()
    );

    // Sequences, then a write of the target's own.
    let r = c
        .post(
            &format!("/databases/{dst}/subscriptions/from15/sync-sequences"),
            json!({}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let synced = r.json();
    assert!(
        synced
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["sequence"] == "public.items_id_seq" && s["value"] == 106),
        "{synced}"
    );
    let id = psql_ok(
        &dst_uri,
        "INSERT INTO items (name) VALUES ('on the target') RETURNING id",
    );
    assert_eq!(id.lines().next(), Some("107"), "{id}");

    // Drops: the slot and the role on the source go too.
    let r = c
        .delete(&format!("/databases/{dst}/subscriptions/from15"))
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let listed = c
        .get(&format!("/databases/{dst}/subscriptions"))
        .await
        .json();
    assert_eq!(listed, json!([]));
    let left = psql_ok(
        &src_uri,
        "SELECT (SELECT count(*) FROM pg_replication_slots), \
         (SELECT count(*) FROM pg_roles WHERE rolname LIKE 'plateau\\_sub\\_%')",
    );
    assert_eq!(left, "0|0", "slots and roles left on the source");
    let r = c.delete(&format!("{pubs}/items_pub")).await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = c.delete(&format!("{pubs}/items_pub")).await;
    assert_eq!(r.status, 404, "{}", r.text());
}
