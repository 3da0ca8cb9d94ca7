//! Tenant isolation inside the host (issue 28): a database's owner who
//! plants functions and settings for the host's superuser sessions to run
//! (a `search_path` before `pg_catalog`, shadowing functions and catalog
//! views, `role`, `standard_conforming_strings = off`) stays a plain role
//! through every host operation and the disk-quota check; and the servers
//! of two organisations' clusters run as different OS users, so even a
//! superuser of one cannot read the other's files.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::{Value, json};
use sqlx::{Connection, Row};

use super::{Processes, connection, create, psql, psql_ok, sqlx_connect};
use crate::{create_org, mint, start_with};

/// Runs one statement through the SQL console, read-write.
async fn console(c: &Client, id: &str, sql: &str) -> Value {
    let r = c
        .post(
            &format!("/databases/{id}/query"),
            json!({ "sql": sql, "write": true }),
        )
        .await;
    assert_eq!(r.status, 200, "{sql}: {}", r.text());
    r.json()
}

/// Whether `role` is a superuser, asked through `uri`.
fn is_superuser(uri: &str, role: &str) -> String {
    psql_ok(
        uri,
        &format!("SELECT rolsuper FROM pg_catalog.pg_roles WHERE rolname = '{role}'"),
    )
}

/// Sessions ever opened to the database, from a session of the test.
async fn sessions(conn: &mut sqlx::PgConnection) -> i64 {
    sqlx::query("SELECT pg_catalog.pg_stat_clear_snapshot()")
        .execute(&mut *conn)
        .await
        .unwrap();
    sqlx::query(
        "SELECT sessions FROM pg_catalog.pg_stat_database \
         WHERE datname OPERATOR(pg_catalog.=) pg_catalog.current_database()",
    )
    .fetch_one(&mut *conn)
    .await
    .unwrap()
    .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_cannot_become_superuser_through_the_hosts_sessions() {
    let server = start_with(
        ServerOptions::new(Backend::Sqlite)
            .env("PLATEAU_DATABASE_SUPERVISE_MS", "100")
            .env("PLATEAU_DATABASE_DISK_CHECK_MS", "100"),
    )
    .await;
    let _processes = Processes::of(&server);
    let c = server.client();
    let d = create(&c, json!({ "name": "evil", "version": "15" })).await;
    let id = d["id"].as_str().unwrap().to_owned();
    let conn = connection(&c, &id).await;
    let owner = conn["username"].as_str().unwrap().to_owned();
    let direct = conn["writeUri"].as_str().unwrap().to_owned();
    let pooled = conn["uri"].as_str().unwrap().to_owned();

    // The trap: whoever runs evil.escalate() as a superuser makes the
    // owner one. It hides behind the names the host's sessions use.
    let trap = [
        "CREATE SCHEMA evil".to_owned(),
        format!(
            "CREATE FUNCTION evil.escalate() RETURNS boolean LANGUAGE plpgsql AS $$ \
             BEGIN EXECUTE 'ALTER ROLE {owner} SUPERUSER'; RETURN true; \
             EXCEPTION WHEN OTHERS THEN RETURN true; END $$"
        ),
        "CREATE FUNCTION evil.pg_database_size(oid) RETURNS bigint LANGUAGE plpgsql AS $$ \
         BEGIN PERFORM evil.escalate(); RETURN 0; END $$"
            .to_owned(),
        "CREATE FUNCTION evil.pg_database_size(name) RETURNS bigint LANGUAGE plpgsql AS $$ \
         BEGIN PERFORM evil.escalate(); RETURN 0; END $$"
            .to_owned(),
        "CREATE FUNCTION evil.current_setting(text) RETURNS text LANGUAGE plpgsql AS $$ \
         BEGIN PERFORM evil.escalate(); RETURN pg_catalog.current_setting($1); END $$"
            .to_owned(),
        "CREATE FUNCTION evil.pg_reload_conf() RETURNS boolean LANGUAGE sql AS \
         $$ SELECT evil.escalate() $$"
            .to_owned(),
    ]
    .into_iter()
    .chain(
        [
            "pg_roles",
            "pg_namespace",
            "pg_extension",
            "pg_database",
            "pg_stat_database",
            "pg_stat_activity",
            "pg_auth_members",
        ]
        .map(|view| {
            format!(
                "CREATE VIEW evil.{view} AS SELECT v.* FROM pg_catalog.{view} v \
                 WHERE evil.escalate()"
            )
        }),
    )
    .chain([
        // pgbouncer's own lookup of a role's password.
        "CREATE VIEW evil.pg_shadow AS SELECT r.rolname AS usename, NULL::text AS passwd \
         FROM pg_catalog.pg_roles r WHERE evil.escalate()"
            .to_owned(),
        "ALTER DATABASE app SET search_path = evil, pg_catalog, public".to_owned(),
        // Backslashes would end the host's quoted literals.
        "ALTER DATABASE app SET standard_conforming_strings = off".to_owned(),
    ]);
    for sql in trap {
        console(&c, &id, &sql).await;
    }
    // Event triggers (which would run in the host's sessions) are a
    // superuser's.
    console(
        &c,
        &id,
        "CREATE FUNCTION evil.on_ddl() RETURNS event_trigger LANGUAGE plpgsql AS $$ \
         BEGIN PERFORM evil.escalate(); END $$",
    )
    .await;
    let r = c
        .post(
            &format!("/databases/{id}/query"),
            json!({ "sql": "CREATE EVENT TRIGGER evil ON ddl_command_start EXECUTE FUNCTION evil.on_ddl()", "write": true }),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("permission denied"), "{}", r.text());
    assert_eq!(is_superuser(&direct, &owner), "f");

    // Every host operation inside the database.
    let base = format!("/databases/{id}");
    let sneaky = format!("x\\'; ALTER ROLE {owner} SUPERUSER; --");
    for (path, body) in [
        ("roles", json!({ "name": "sneaky", "password": sneaky })),
        ("extensions", json!({ "name": "pg_trgm" })),
        ("fix-ownership", json!({})),
        ("roles/sneaky/reset-password", json!({})),
    ] {
        let r = c.post(&format!("{base}/{path}"), body).await;
        assert!(r.status < 300, "{path}: {}", r.text());
    }
    for path in ["roles", "extensions", "metrics"] {
        let r = c.get(&format!("{base}/{path}")).await;
        assert_eq!(r.status, 200, "{path}: {}", r.text());
    }
    assert_eq!(c.delete(&format!("{base}/roles/sneaky")).await.status, 204);
    let reader = Client::new(&server.url)
        .with_token(&mint(&server, json!({ "scopes": ["databases:read"] })).await);
    let read_conn = connection(&reader, &id).await;
    assert_eq!(read_conn["username"], "plateau_reader", "{read_conn}");
    // Through the pooler, whose lookup of the role runs as the host's
    // superuser in the database the client names.
    psql_ok(&pooled, "SELECT 1");
    assert!(
        !psql(&pooled.replacen(&owner, "nobody", 1), "SELECT 1")
            .status
            .success()
    );
    assert_eq!(is_superuser(&direct, &owner), "f");

    // The disk-quota check, which runs every 100 ms: wait until its
    // sessions as the host's superuser opened twice since now, so at
    // least one whole check ran after the trap was set.
    let mut watch = sqlx_connect(&direct).await.unwrap();
    let from = sessions(&mut watch).await;
    let mut checked = false;
    for _ in 0..600 {
        if sessions(&mut watch).await >= from + 2 {
            checked = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    watch.close().await.unwrap();
    assert!(checked, "the disk-quota check never connected");
    assert_eq!(is_superuser(&direct, &owner), "f");
    // The host's work was done as asked, trap and all: the role made with
    // a backslash in its password was dropped, the extension is there.
    assert_eq!(
        psql_ok(
            &direct,
            "SELECT count(*) FROM pg_catalog.pg_extension WHERE extname = 'pg_trgm'"
        ),
        "1"
    );
}

/// The uid running the process whose pid file is `pid_file`.
fn uid_of(pid_file: &Path) -> u32 {
    let text = std::fs::read_to_string(pid_file).unwrap();
    let pid = text.lines().next().unwrap().trim();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// `getent passwd KEY` (a name or a uid): the user's name, if any.
fn user_name(key: &str) -> Option<String> {
    let out = std::process::Command::new("getent")
        .args(["passwd", key])
        .output()
        .unwrap();
    out.status.success().then(|| {
        String::from_utf8_lossy(&out.stdout)
            .split(':')
            .next()
            .unwrap()
            .to_owned()
    })
}

/// The host's password of a cluster, from its pooler's `userlist.txt`
/// (the test runs as root, as the host does).
fn admin_password(dir: &Path) -> String {
    let text = std::fs::read_to_string(dir.join("pooler/userlist.txt")).unwrap();
    text.split('"').nth(3).unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clusters_server_cannot_read_another_clusters_files() {
    if std::fs::metadata("/proc/self").unwrap().uid() != 0 {
        // Per-cluster users need root; otherwise every cluster runs as
        // the host's user (documented in plateau-databases' `local`).
        return;
    }
    let server = start_with(ServerOptions::new(Backend::Sqlite)).await;
    let _processes = Processes::of(&server);
    let c = server.client();
    let other = Client::new(&server.url).with_token(&create_org(&server, "other", "pro").await);
    let mine = create(&c, json!({ "name": "mine", "version": "15" })).await;
    let theirs = create(&other, json!({ "name": "theirs", "version": "15" })).await;
    let root = server.data_dir.path().join("databases");
    let mine_dir = root.join(mine["id"].as_str().unwrap());
    let their_dir = root.join(theirs["id"].as_str().unwrap());
    let conn = connection(&c, mine["id"].as_str().unwrap()).await;

    // Each cluster's postmaster, pooler and write endpoint run as the user
    // that owns its directory, mode 0700; the two users differ, and neither
    // is root or `postgres`.
    let mut uids = Vec::new();
    for dir in [&mine_dir, &their_dir] {
        let meta = std::fs::metadata(dir).unwrap();
        assert_eq!(meta.mode() & 0o777, 0o700, "{}", dir.display());
        let uid = uid_of(&dir.join("node0/data/postmaster.pid"));
        assert_eq!(uid, meta.uid(), "{}", dir.display());
        assert_eq!(uid_of(&dir.join("pooler/pgbouncer.pid")), uid);
        assert_eq!(uid_of(&dir.join("router/haproxy.pid")), uid);
        let name = user_name(&uid.to_string()).unwrap();
        assert!(name.starts_with("pgc_"), "{}: {name}", dir.display());
        uids.push(uid);
    }
    assert_ne!(uids[0], uids[1]);

    // The attack's second half: a superuser of one cluster (here the
    // host's own role, which a tenant would have taken) reads files as
    // its server's OS user. Its own files, yes; the other cluster's, no.
    let superuser = format!(
        "postgresql://plateau_admin:{}@{}:{}/postgres",
        admin_password(&mine_dir),
        conn["host"].as_str().unwrap(),
        conn["writePort"]
    );
    let own = mine_dir.join("pooler/userlist.txt");
    assert!(
        psql_ok(
            &superuser,
            &format!("SELECT pg_read_file('{}')", own.display())
        )
        .contains("plateau_admin")
    );
    for file in ["pooler/userlist.txt", "node0/data/PG_VERSION"] {
        let path = their_dir.join(file);
        let out = psql(
            &superuser,
            &format!("SELECT pg_read_file('{}')", path.display()),
        );
        assert!(!out.status.success(), "read {}", path.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("Permission denied"), "{err}");
        let out = psql(
            &superuser,
            &format!(
                "CREATE TEMP TABLE t (l text); COPY t FROM PROGRAM 'cat {}'",
                path.display()
            ),
        );
        assert!(!out.status.success(), "a program read {}", path.display());
    }

    // Deleting a cluster removes its user.
    let user = user_name(&uids[0].to_string()).unwrap();
    assert!(user.starts_with("pgc_"), "{user}");
    super::delete(&c, mine["id"].as_str().unwrap()).await;
    assert_eq!(user_name(&user), None);
}
