//! Passwords and credentials (issue 28): a host statement that fails
//! leaves no password in the log customers read nor in
//! `pg_stat_statements`; a `databases:read` token's connection details
//! cannot write; the pooler answers an unknown role as it answers a wrong
//! password. On SQLite only: the store plays no part.

use plateau_testkit::{Backend, Client};
use serde_json::json;

use super::{Processes, connection, create, psql, psql_ok};
use crate::{mint, start};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn passwords_stay_out_of_logs_and_statistics() {
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    let c = server.client();
    let d = create(&c, json!({ "name": "quiet", "version": "15" })).await;
    let id = d["id"].as_str().unwrap().to_owned();
    let conn = connection(&c, &id).await;
    let direct = conn["writeUri"].as_str().unwrap().to_owned();
    let base = format!("/databases/{id}");

    let first = "first-secret-Qx7Lm2";
    let second = "second-secret-Wp9Zr4";
    let r = c
        .post(
            &format!("{base}/roles"),
            json!({ "name": "reporting", "password": first }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    // The same role again: the host's CREATE ROLE fails in the server.
    let r = c
        .post(
            &format!("{base}/roles"),
            json!({ "name": "reporting", "password": second }),
        )
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    let r = c
        .post(&format!("{base}/roles/reporting/reset-password"), json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let third = r.json()["password"].as_str().unwrap().to_owned();
    // A statement of the customer's, which pg_stat_statements keeps.
    psql_ok(&direct, "SELECT 1 AS customer_marker_hn3");

    let logs = c.get(&format!("{base}/logs?lines=1000")).await.json();
    let logs = logs["lines"].to_string();
    assert!(logs.contains("already exists"), "{logs}");
    let texts = server
        .data_dir
        .path()
        .join("databases")
        .join(&id)
        .join("node0/data/pg_stat_tmp/pgss_query_texts.stat");
    let texts = String::from_utf8_lossy(&std::fs::read(&texts).unwrap()).into_owned();
    assert!(texts.contains("customer_marker_hn3"), "{texts}");
    for password in [first, second, third.as_str()] {
        assert!(!logs.contains(password), "{password} in the log: {logs}");
        assert!(
            !texts.contains(password),
            "{password} in pg_stat_statements"
        );
    }
    // The verifiers the host sent work as the passwords.
    let as_reporting = direct.replacen(
        &format!(
            "{}:{}",
            conn["username"].as_str().unwrap(),
            conn["password"].as_str().unwrap()
        ),
        &format!("reporting:{third}"),
        1,
    );
    assert_eq!(psql_ok(&as_reporting, "SELECT current_user"), "reporting");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_tokens_credentials_cannot_write() {
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    let c = server.client();
    let reader = Client::new(&server.url)
        .with_token(&mint(&server, json!({ "scopes": ["databases:read"] })).await);
    let d = create(
        &c,
        json!({ "name": "shared", "version": "15", "replicas": 0 }),
    )
    .await;
    let id = d["id"].as_str().unwrap().to_owned();
    let owner = connection(&c, &id).await;
    psql_ok(
        owner["writeUri"].as_str().unwrap(),
        "CREATE TABLE notes (t text); INSERT INTO notes VALUES ('kept'); \
         CREATE SEQUENCE counter",
    );

    let read = connection(&reader, &id).await;
    assert_eq!(read["username"], "plateau_reader", "{read}");
    assert_ne!(read["password"], owner["password"]);
    // Asked again, the same credentials.
    assert_eq!(connection(&reader, &id).await["password"], read["password"]);
    for uri in [
        read["uri"].as_str().unwrap(),
        read["writeUri"].as_str().unwrap(),
    ] {
        assert_eq!(psql_ok(uri, "SELECT t FROM notes"), "kept");
        for write in [
            "INSERT INTO notes VALUES ('no')",
            "BEGIN READ WRITE; INSERT INTO notes VALUES ('no'); COMMIT",
            "SET default_transaction_read_only = off; UPDATE notes SET t = 'no'",
            "SET default_transaction_read_only = off; DELETE FROM notes",
            "SET default_transaction_read_only = off; CREATE TABLE mine (x int)",
            "SET default_transaction_read_only = off; SELECT nextval('counter')",
        ] {
            let out = psql(uri, write);
            assert!(!out.status.success(), "{write} succeeded through {uri}");
        }
    }
    assert_eq!(
        psql_ok(
            owner["writeUri"].as_str().unwrap(),
            "SELECT string_agg(t, ',') FROM notes"
        ),
        "kept"
    );
    // The host's role is not the customer's to list, make or drop.
    let roles = c.get(&format!("/databases/{id}/roles")).await.text();
    assert!(!roles.contains("plateau_"), "{roles}");
    for name in ["plateau_reader", "plateau_x"] {
        let r = c
            .post(
                &format!("/databases/{id}/roles"),
                json!({ "name": name, "password": "some-password" }),
            )
            .await;
        assert_eq!(r.status, 400, "{}", r.text());
        let r = c.delete(&format!("/databases/{id}/roles/{name}")).await;
        assert_eq!(r.status, 400, "{}", r.text());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pooler_does_not_tell_which_roles_exist() {
    let server = start(Backend::Sqlite).await;
    let _processes = Processes::of(&server);
    let c = server.client();
    let d = create(&c, json!({ "name": "pool", "version": "15" })).await;
    let id = d["id"].as_str().unwrap().to_owned();
    let conn = connection(&c, &id).await;
    let user = conn["username"].as_str().unwrap();
    let password = conn["password"].as_str().unwrap();
    let pooled = conn["uri"].as_str().unwrap();
    psql_ok(pooled, "SELECT 1");
    let answer = |role: &str, password: &str| {
        let uri = pooled.replacen(
            &format!("{}:{}@", user, conn["password"].as_str().unwrap()),
            &format!("{role}:{password}@"),
            1,
        );
        let out = psql(&uri, "SELECT 1");
        assert!(!out.status.success(), "{role} got in");
        String::from_utf8_lossy(&out.stderr).replace(role, "ROLE")
    };
    let wrong_password = answer(user, "not-the-password");
    let no_such_role = answer("nobody_here", password);
    assert_eq!(wrong_password, no_such_role);
    assert!(!no_such_role.contains("no such user"), "{no_such_role}");
}
