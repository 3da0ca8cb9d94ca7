//! `cargo xtask bench ingest [--resources N] [--minutes N] [--interval-ms N]`:
//! usage ingest from 10,000 resources a minute (issue 34): whether the
//! series store keeps up, with no lag growth.
//!
//! Each interval (a minute by default; `--interval-ms` compresses it) the
//! usage writer's path, `plateau_store::usage::add`, takes one batch as a
//! host's sampler sends it: every resource's compute hours and disk
//! GB-hours. A tenth of the resources were created by a token with a
//! ceiling, so each batch is also charged to it (`token_spend`), as in
//! production. Per interval it prints the write's duration and the lag
//! (from when the batch was due to its commit); a store that keeps up
//! shows a flat lag. The token's spend read back at the end shows the
//! charges landed.

use std::time::{Duration, Instant};

use anyhow::Context;
use plateau_core::time;
use plateau_store::usage::{self, Increment};
use plateau_store::{Db, token_spend};
use plateau_testkit::Client;
use serde_json::json;

use crate::harness::{parse_flags, percentiles};
use crate::server::{Server, debug_profile};

pub struct Options {
    pub resources: usize,
    pub minutes: usize,
    pub interval_ms: u64,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options {
            resources: 10_000,
            minutes: 5,
            interval_ms: 60_000,
        };
        parse_flags(
            args,
            "--resources N --minutes N --interval-ms N",
            |flag, value| {
                match flag {
                    "--resources" => opts.resources = value.parse()?,
                    "--minutes" => opts.minutes = value.parse()?,
                    "--interval-ms" => opts.interval_ms = value.parse()?,
                    _ => return Ok(false),
                }
                Ok(true)
            },
        )?;
        Ok(opts)
    }
}

fn resource(i: usize) -> String {
    format!("cch_ingest{i:05}")
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let server = Server::start_release().await?;
    let owner = server.create_org("ingest-bench", "pro").await?;
    let api = Client::new(&server.base).with_token(&owner);
    let org = api.get("/me").await.json()["organization"]["id"]
        .as_str()
        .context("/me names no organisation")?
        .to_owned();
    let r = api
        .post(
            "/tokens",
            json!({ "name": "ceilinged", "maxCostCents": 1_000_000 }),
        )
        .await;
    let token_id = r.json()["id"]
        .as_str()
        .with_context(|| format!("POST /tokens: {} {}", r.status, r.text()))?
        .to_owned();
    let db = Db::connect(&Db::sqlite_url(server.data_dir())).await?;
    let mut tx = db.begin().await?;
    for i in (0..opts.resources).step_by(10) {
        token_spend::record_creator(&mut tx, &org, &resource(i), &token_id).await?;
    }
    tx.commit().await?;

    let interval = Duration::from_millis(opts.interval_ms);
    let hours = interval.as_secs_f64() / 3600.0;
    println!(
        "usage ingest: {} resources x 2 metrics per batch, one batch every {} ms, {} batches ({}, SQLite)\n",
        opts.resources,
        opts.interval_ms,
        opts.minutes,
        if debug_profile() {
            "debug build"
        } else {
            "release build"
        },
    );
    println!(
        "{:>6} {:>12} {:>10} {:>10}",
        "minute", "increments", "write ms", "lag ms"
    );
    let start = Instant::now();
    let mut writes = Vec::with_capacity(opts.minutes);
    let mut lags = Vec::with_capacity(opts.minutes);
    for minute in 0..opts.minutes {
        let due = start + interval * minute as u32;
        tokio::time::sleep_until(due.into()).await;
        let day = time::to_date(time::now_ms());
        let mut batch = Vec::with_capacity(opts.resources * 2);
        for i in 0..opts.resources {
            for (metric, quantity) in [("compute_hours", hours), ("disk_gb_hours", 1.5 * hours)] {
                batch.push(Increment {
                    org_id: org.clone(),
                    project_id: None,
                    resource_type: "cache",
                    resource_id: resource(i),
                    metric,
                    day: day.clone(),
                    quantity,
                });
            }
        }
        let began = Instant::now();
        usage::add(&db, &batch).await?;
        let done = Instant::now();
        let write = done.duration_since(began).as_secs_f64() * 1000.0;
        let lag = done.duration_since(due).as_secs_f64() * 1000.0;
        println!(
            "{:>6} {:>12} {write:>10.1} {lag:>10.1}",
            minute + 1,
            batch.len()
        );
        writes.push(write);
        lags.push(lag);
    }
    let (p50, p99) = percentiles(&writes);
    let growth = lags.last().copied().unwrap_or(0.0) - lags.first().copied().unwrap_or(0.0);
    println!(
        "\nwrite p50 {p50:.1} ms, p99 {p99:.1} ms; lag first {:.1} ms, last {:.1} ms (growth {growth:+.1} ms); keeps up: {}",
        lags.first().copied().unwrap_or(0.0),
        lags.last().copied().unwrap_or(0.0),
        writes.iter().all(|w| *w < opts.interval_ms as f64),
    );
    let spent = token_spend::spent(&db, &token_id).await?;
    let tokens = api.get("/tokens").await.json();
    let listed = tokens["items"]
        .as_array()
        .and_then(|items| items.iter().find(|t| t["id"] == token_id.as_str()))
        .map(|t| t["spentCents"].clone())
        .unwrap_or_default();
    println!(
        "the ceilinged token ({} of the resources): spentCents {spent} in the store, {listed} in GET /tokens",
        opts.resources.div_ceil(10)
    );
    db.close().await;
    Ok(())
}
