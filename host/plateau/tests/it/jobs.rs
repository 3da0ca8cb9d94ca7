//! Durable ticks and jobs: schedules from a plugin's description run on the
//! host clock (moved by `/admin/clock` on a `PLATEAU_CLOCK=manual` server),
//! survive restarts, and with two hosts on one database run once. And the
//! delivery of subscribed events to `on-event`.

use std::time::Duration;

use plateau_plugin_artifacts::fixtures;
use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::json;

use crate::plugins::{admin, upload};
use crate::{advance, start_with};

crate::on_both_backends!(
    ticks_follow_the_host_clock_and_survive_restarts,
    two_hosts_run_each_tick_once,
    subscribed_events_reach_the_plugin,
);

fn manual(backend: Backend) -> ServerOptions {
    ServerOptions::new(backend).env("PLATEAU_CLOCK", "manual")
}

/// The echo fixture counts its `count` ticks (every 60 s) in global data.
async fn ticks(c: &Client) -> u64 {
    let listed = c.get("/echo/list?ns=global&prefix=ticks/").await;
    assert_eq!(listed.status, 200, "{}", listed.text());
    listed
        .text()
        .lines()
        .find_map(|l| l.strip_prefix("ticks/count="))
        .map_or(0, |n| n.parse().unwrap())
}

/// Polls until the tick count is `want` (runs are asynchronous).
async fn wait_for_ticks(c: &Client, want: u64) {
    for _ in 0..100 {
        if ticks(c).await == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("expected {want} ticks, saw {}", ticks(c).await);
}

async fn ticks_follow_the_host_clock_and_survive_restarts(backend: Backend) {
    let mut server = start_with(manual(backend)).await;
    let admin_c = admin(&server).await;
    assert_eq!(
        upload(&admin_c, "echo", fixtures::ECHO, true).await.status,
        201
    );
    let c = server.client();
    // Nothing is due until the clock moves a whole interval.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(ticks(&c).await, 0);
    advance(&admin_c, 61_000).await;
    wait_for_ticks(&c, 1).await;
    // Missed intervals are skipped, not bunched: 5 minutes later, one run.
    advance(&admin_c, 300_000).await;
    wait_for_ticks(&c, 2).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(ticks(&c).await, 2);

    let status = admin_c.get("/admin/jobs").await.json();
    assert_eq!(status["total"], 1, "{status}");
    assert_eq!(status["lateness"]["samples"], 2, "{status}");

    // The system clock refuses to be moved.
    let plain = start_with(ServerOptions::new(backend)).await;
    let r = admin(&plain)
        .await
        .post("/admin/clock", json!({ "advanceMs": 1000 }))
        .await;
    assert_eq!(r.status, 409, "{}", r.text());
    let r = admin_c
        .post("/admin/clock", json!({ "advanceMs": 0 }))
        .await;
    assert_eq!(r.status, 400, "{}", r.text());

    // After a restart the tick is still scheduled, on the same grid. The
    // manual clock starts again from the system's, so catch up first.
    server.restart().await;
    let admin_c = admin(&server).await;
    advance(&admin_c, 300_000).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(ticks(&server.client()).await, 2);
    advance(&admin_c, 130_000).await;
    let c = server.client();
    wait_for_ticks(&c, 3).await;
}

async fn two_hosts_run_each_tick_once(backend: Backend) {
    if backend == Backend::Sqlite {
        // Two hosts share a database only on PostgreSQL.
        return;
    }
    let first = start_with(manual(backend)).await;
    let second = start_with(ServerOptions::joining(&first)).await;
    let admin_1 = admin(&first).await;
    let admin_2 = admin(&second).await;
    assert_eq!(
        upload(&admin_1, "echo", fixtures::ECHO, true).await.status,
        201
    );
    let c = first.client();
    // Let the second host pick up the plugin, then move both clocks.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    for round in 1..=3 {
        advance(&admin_1, 60_000).await;
        advance(&admin_2, 60_000).await;
        wait_for_ticks(&c, round).await;
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(ticks(&c).await, 3);
}

async fn subscribed_events_reach_the_plugin(backend: Backend) {
    let server = start_with(ServerOptions::new(backend)).await;
    let admin_c = admin(&server).await;
    assert_eq!(
        upload(&admin_c, "echo", fixtures::ECHO, true).await.status,
        201
    );
    let c = server.client();
    let other = server
        .anonymous()
        .with_token(&crate::create_org(&server, "other", "free").await);
    // echo subscribes to `echo.*` and records each event it receives in the
    // event's organisation.
    let r = c.post("/echo/event?id=t1", json!({ "n": 1 })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let received = |c: Client| async move {
        c.get("/echo/count?prefix=events/")
            .await
            .text()
            .parse::<u64>()
            .unwrap()
    };
    let mut seen = 0;
    for _ in 0..60 {
        seen = received(c.clone()).await;
        if seen == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(seen, 1, "the event was not delivered");
    // Delivered once, and only to its own organisation's data.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(received(c.clone()).await, 1);
    assert_eq!(received(other).await, 0);
    let listed = c.get("/echo/list?prefix=events/").await.text();
    assert!(listed.contains("echo.thing.created"), "{listed}");
}
