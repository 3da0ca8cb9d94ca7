//! The built-in cron jobs plugin over HTTP on a manual clock: http jobs
//! reach a local target through the egress guard, daylight saving rules
//! in New York and Berlin (spring forward and fall back), recorded runs,
//! manual triggers, the plan limit and tenant isolation.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::http::HeaderMap;
use axum::routing::any;
use plateau_testkit::{Backend, Client, Server, ServerOptions};
use serde_json::{Value, json};

use crate::plugins::admin;
use crate::{create_org, start_with, until};

crate::on_both_backends!(cron_jobs_follow_daylight_saving_and_record_runs);

/// One request the target received: method, `x-token` header, body.
pub(crate) type Hit = (String, String, String);

/// A local target: `/hook` answers `done` and notes each request; `/big`
/// answers 10,000 bytes.
pub(crate) async fn target() -> (SocketAddr, Arc<Mutex<Vec<Hit>>>) {
    let hits: Arc<Mutex<Vec<Hit>>> = Arc::default();
    let seen = hits.clone();
    let app = Router::new()
        .route(
            "/hook",
            any(
                move |method: axum::http::Method, headers: HeaderMap, body: String| {
                    let seen = seen.clone();
                    async move {
                        let token = headers
                            .get("x-token")
                            .and_then(|v| v.to_str().ok())
                            .unwrap_or_default()
                            .to_owned();
                        seen.lock().unwrap().push((method.to_string(), token, body));
                        "done"
                    }
                },
            ),
        )
        .route("/big", any(|| async { "x".repeat(10_000) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, hits)
}

/// Milliseconds of `YYYY-MM-DDTHH:MM:SSZ` (proleptic Gregorian, UTC).
pub(crate) fn ms(rfc3339: &str) -> u64 {
    let n = |range: std::ops::Range<usize>| rfc3339[range].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19);
    u64::try_from(secs * 1000).unwrap()
}

/// A server on the manual clock whose plugins may call loopback (where
/// [`target`] listens).
pub(crate) async fn manual_server(backend: Backend) -> Server {
    start_with(
        ServerOptions::new(backend)
            .env("PLATEAU_CLOCK", "manual")
            .env("PLATEAU_EGRESS_ALLOW", "127.0.0.0/8"),
    )
    .await
}

/// Moves the manual clock to `to` (forward), in steps the admin API takes.
pub(crate) async fn move_to(admin: &Client, to: &str) {
    let to = ms(to);
    loop {
        let r = admin.post("/admin/clock", json!({ "advanceMs": 1 })).await;
        assert_eq!(r.status, 200, "{}", r.text());
        let now = r.json()["now"].as_u64().unwrap();
        assert!(now <= to, "the clock is already past the target");
        if now == to {
            return;
        }
        let step = (to - now).min(30 * 24 * 3600 * 1000);
        let r = admin
            .post("/admin/clock", json!({ "advanceMs": step }))
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        if r.json()["now"].as_u64().unwrap() == to {
            return;
        }
    }
}

/// Waits until the job's next run is at `at`; the job.
async fn next_run_is(c: &Client, id: &str, at: &str) -> Value {
    let path = format!("/cron-jobs/{id}");
    until(c, &path, &format!("nextRunAt {at}"), |job| {
        job["nextRunAt"] == at
    })
    .await
}

async fn cron_jobs_follow_daylight_saving_and_record_runs(backend: Backend) {
    let (addr, hits) = target().await;
    let s = manual_server(backend).await;
    let c = s.client();
    let admin = admin(&s).await;
    let url = format!("http://{addr}/hook");

    // Validation, all fields at once.
    let r = c
        .post(
            "/cron-jobs",
            json!({ "name": "x", "schedule": "99 * * * *", "timezone": "Nowhere/City", "type": "ftp", "url": url }),
        )
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (400, "validation_failed"),
        "{}",
        r.text()
    );

    // New York: 02:30 does not exist on 2027-03-14; it fires at 03:00 EDT.
    move_to(&admin, "2027-03-13T12:00:00Z").await;
    let r = c
        .post(
            "/cron-jobs",
            json!({
                "name": "nightly", "schedule": "30 2 * * *", "timezone": "America/New_York",
                "type": "http", "url": url, "method": "POST",
                "headers": { "X-Token": "secret-1" }, "body": "{\"run\":true}",
            }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let ny = r.json()["id"].as_str().unwrap().to_owned();
    assert_eq!(r.json()["nextRunAt"], "2027-03-14T07:00:00.000Z");
    move_to(&admin, "2027-03-14T07:00:00Z").await;
    next_run_is(&c, &ny, "2027-03-15T06:30:00.000Z").await;
    let runs = c.get(&format!("/cron-jobs/{ny}/runs")).await.json();
    assert_eq!(runs["total"], 1, "{runs}");
    let run = &runs["items"][0];
    assert_eq!(
        (
            run["trigger"].as_str(),
            run["scheduledAt"].as_str(),
            run["status"].as_str(),
            run["httpStatus"].as_u64(),
            run["responseBody"].as_str()
        ),
        (
            Some("schedule"),
            Some("2027-03-14T07:00:00.000Z"),
            Some("succeeded"),
            Some(200),
            Some("done")
        ),
        "{run}"
    );
    assert_eq!(
        hits.lock().unwrap().clone(),
        [(
            "POST".to_owned(),
            "secret-1".to_owned(),
            "{\"run\":true}".to_owned()
        )]
    );

    // Trigger now: a manual run, newest first.
    let r = c.post(&format!("/cron-jobs/{ny}/trigger"), json!({})).await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["trigger"], "manual");
    let runs = c.get(&format!("/cron-jobs/{ny}/runs?limit=1")).await.json();
    assert_eq!(
        (runs["total"].clone(), runs["items"][0]["trigger"].clone()),
        (json!(2), json!("manual"))
    );
    assert!(runs["nextCursor"].is_string());

    // Berlin, 2027-10-31: 02:30 happens twice; it fires at the first only.
    let r = c
        .post(
            "/cron-jobs",
            json!({ "name": "berlin", "schedule": "30 2 * * *", "timezone": "Europe/Berlin", "type": "http", "url": url }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let berlin = r.json()["id"].as_str().unwrap().to_owned();
    // The free plan allows 2 cron jobs.
    let r = c
        .post(
            "/cron-jobs",
            json!({ "name": "third", "schedule": "* * * * *", "type": "http", "url": url }),
        )
        .await;
    assert_eq!(
        (r.status, r.code().as_str()),
        (409, "plan_limit_reached"),
        "{}",
        r.text()
    );
    // Pause New York so only Berlin runs while the clock moves on.
    let r = c
        .patch(&format!("/cron-jobs/{ny}"), json!({ "paused": true }))
        .await;
    assert_eq!(
        (r.status, r.json()["nextRunAt"].clone()),
        (200, Value::Null),
        "{}",
        r.text()
    );
    move_to(&admin, "2027-10-30T12:00:00Z").await;
    next_run_is(&c, &berlin, "2027-10-31T00:30:00.000Z").await;
    move_to(&admin, "2027-10-31T00:30:00Z").await;
    next_run_is(&c, &berlin, "2027-11-01T01:30:00.000Z").await;
    let runs = c.get(&format!("/cron-jobs/{berlin}/runs")).await.json();
    assert_eq!(
        runs["items"][0]["scheduledAt"], "2027-10-31T00:30:00.000Z",
        "{runs}"
    );
    // Paused New York ran nothing more.
    assert_eq!(
        c.get(&format!("/cron-jobs/{ny}/runs")).await.json()["total"],
        2
    );

    // Another organisation sees none of it; changes are audited.
    let other = s
        .anonymous()
        .with_token(&create_org(&s, "other", "free").await);
    assert_eq!(other.get(&format!("/cron-jobs/{ny}")).await.status, 404);
    assert_eq!(other.get("/cron-jobs").await.json()["total"], 0);
    assert_eq!(c.delete(&format!("/cron-jobs/{ny}")).await.status, 204);
    assert_eq!(c.get(&format!("/cron-jobs/{ny}")).await.status, 404);
    let audit = c.get("/audit?resourceType=cron_job").await.json();
    assert_eq!(audit["total"], 4, "{audit}");
}
