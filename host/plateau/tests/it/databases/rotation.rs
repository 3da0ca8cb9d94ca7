//! Password rotation (spec 4.6): sessions held open through the pooled
//! `uri` keep querying across two rotations without one failure; after a
//! rotation the new URI logs in at once and the old one still does, until
//! the overlap ends and it is refused; the console (which runs as the
//! owner) works throughout; what the alias login role creates belongs to
//! the owner; bad schedules are refused naming `intervalDays`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::{Value, json};
use sqlx::Connection;

use super::{Processes, connection, create, psql, psql_ok, sqlx_connect};
use crate::{create_org, start_with};

/// Seconds an old password keeps working after a rotation, in this test.
const OVERLAP: &str = "20";

/// Holds `n` sessions open on `uri` and queries each in turn until
/// stopped; (queries, failures and the first failure).
fn hold(
    uri: String,
    n: usize,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<(u64, u64, Option<String>)> {
    tokio::spawn(async move {
        let mut sessions = Vec::new();
        for _ in 0..n {
            sessions.push(sqlx_connect(&uri).await.expect("a pooled session"));
        }
        let (queries, failures) = (AtomicU64::new(0), AtomicU64::new(0));
        let mut first = None;
        while !stop.load(Ordering::SeqCst) {
            for s in &mut sessions {
                queries.fetch_add(1, Ordering::SeqCst);
                if let Err(e) = sqlx::query("SELECT count(*) FROM t").execute(&mut *s).await {
                    failures.fetch_add(1, Ordering::SeqCst);
                    first.get_or_insert(e.to_string());
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for s in sessions {
            let _ = s.close().await;
        }
        (queries.into_inner(), failures.into_inner(), first)
    })
}

/// Whether a new session on `uri` logs in.
fn logs_in(uri: &str) -> bool {
    psql(uri, "SELECT 1").status.success()
}

/// Rotates and checks the new URI and the old one both log in; the new
/// connection details.
async fn rotate(c: &Client, id: &str, old: &Value) -> Value {
    let r = c
        .post(&format!("/databases/{id}/rotation/rotate"), json!({}))
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let rotation = r.json();
    let new = connection(c, id).await;
    assert_ne!(new["password"], old["password"]);
    assert_ne!(new["uri"], old["uri"], "the URI names the new password");
    assert_eq!(rotation["loginRole"], new["username"], "{rotation}");
    assert_eq!(rotation["previousRole"], old["username"], "{rotation}");
    let (new_uri, old_uri) = (new["uri"].as_str().unwrap(), old["uri"].as_str().unwrap());
    assert!(logs_in(new_uri), "the new password works at once");
    assert!(
        logs_in(old_uri),
        "the old password works during the overlap"
    );
    new
}

/// Polls until a new session on `uri` is refused; the seconds it took.
async fn until_refused(uri: &str) -> f64 {
    let start = Instant::now();
    loop {
        let out = psql(uri, "SELECT 1");
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("authentication failed"), "{err}");
            return start.elapsed().as_secs_f64();
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "the old password still works"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_sessions_see_no_failure_and_the_old_password_stops_after_the_overlap() {
    let server = start_with(
        ServerOptions::new(Backend::Sqlite)
            .env("PLATEAU_DATABASE_ROTATION_OVERLAP_SECONDS", OVERLAP)
            .env("PLATEAU_DATABASE_SUPERVISE_MS", "500"),
    )
    .await;
    let _processes = Processes::of(&server);
    let c = Client::new(&server.url).with_token(&create_org(&server, "rot", "pro").await);
    let d = create(&c, json!({ "name": "rot" })).await;
    let id = d["id"].as_str().unwrap();

    // Bad schedules, named.
    for bad in [
        json!({ "intervalDays": -1 }),
        json!({ "intervalDays": 366 }),
    ] {
        let r = c.put(&format!("/databases/{id}/rotation"), bad).await;
        assert_eq!(r.status, 400, "{}", r.text());
        assert!(r.text().contains("intervalDays"), "{}", r.text());
    }
    let r = c
        .put(
            &format!("/databases/{id}/rotation"),
            json!({ "intervalDays": 30 }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["intervalDays"], 30);
    assert!(r.json()["nextRotationAt"].is_string(), "{}", r.text());

    let first = connection(&c, id).await;
    let owner = first["username"].as_str().unwrap().to_owned();
    psql_ok(first["uri"].as_str().unwrap(), "CREATE TABLE t (x int)");
    let stop = Arc::new(AtomicBool::new(false));
    let held = hold(first["uri"].as_str().unwrap().to_owned(), 4, stop.clone());
    tokio::time::sleep(Duration::from_millis(300)).await;

    // First rotation: the alias login role, which acts as the owner.
    let second = rotate(&c, id, &first).await;
    assert_ne!(second["username"], owner);
    let new_uri = second["uri"].as_str().unwrap();
    psql_ok(new_uri, "CREATE TABLE made_by_alias (x int)");
    assert_eq!(
        psql_ok(
            new_uri,
            "SELECT current_user || ' ' || tableowner FROM pg_tables WHERE tablename = 'made_by_alias'"
        ),
        format!("{owner} {owner}")
    );
    let console = c
        .post(
            &format!("/databases/{id}/query"),
            json!({ "sql": "SELECT current_user AS u", "write": false }),
        )
        .await;
    assert_eq!(console.status, 200, "{}", console.text());
    assert!(console.text().contains(&owner), "{}", console.text());

    let retired = until_refused(first["uri"].as_str().unwrap()).await;
    let events = c.get("/events").await.text();
    assert!(events.contains("database.password_retired"), "{events}");
    // The held sessions of the retired password go on querying.
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Second rotation: back to the owner role, with another new password.
    let third = rotate(&c, id, &second).await;
    assert_eq!(third["username"], owner);
    assert_ne!(third["password"], first["password"]);
    let held_new = hold(third["uri"].as_str().unwrap().to_owned(), 2, stop.clone());
    let retired_again = until_refused(second["uri"].as_str().unwrap()).await;
    assert!(logs_in(third["uri"].as_str().unwrap()));
    tokio::time::sleep(Duration::from_millis(500)).await;

    stop.store(true, Ordering::SeqCst);
    let (queries, failures, error) = held.await.unwrap();
    let (queries_new, failures_new, error_new) = held_new.await.unwrap();
    eprintln!(
        "rotation: {queries} queries on 4 sessions held across two rotations, {failures} failed; \
         {queries_new} on 2 sessions of the newest password, {failures_new} failed; the old password \
         refused {retired:.1} s and {retired_again:.1} s after the checks (overlap {OVERLAP} s)"
    );
    assert_eq!(failures, 0, "{error:?}");
    assert_eq!(failures_new, 0, "{error_new:?}");
    assert!(queries > 0);
}
