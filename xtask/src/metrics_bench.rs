//! `cargo xtask bench metrics [--resources N] [--days N] [--requests N]`:
//! `GET /metrics` over a series store holding a year of daily points for
//! 1,000 resources (issue 34; target p99 under 50 ms on SQLite).
//!
//! The store is filled through `plateau_store::usage::add`, the usage
//! writer's own path, on the server's SQLite file: each resource is a
//! cache of one of ten projects with its two daily metrics (compute hours,
//! disk GB-hours), `--days` days back from today. Then each query a
//! dashboard makes is timed `--requests` times in turn (a keep-alive
//! client, one request at a time), and its p50 and p99 printed against
//! the bound with the points it answered.

use std::time::Instant;

use anyhow::{Context, bail};
use plateau_core::time;
use plateau_store::Db;
use plateau_store::usage::{self, Increment};
use plateau_testkit::Client;

use crate::harness::{parse_flags, percentiles};
use crate::server::{Server, debug_profile};

/// The bound of issue 34, in milliseconds.
const BOUND_MS: f64 = 50.0;
const PROJECTS: usize = 10;
const DAY_MS: i64 = 86_400_000;

pub struct Options {
    pub resources: usize,
    pub days: i64,
    pub requests: usize,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options {
            resources: 1_000,
            days: 365,
            requests: 100,
        };
        parse_flags(
            args,
            "--resources N --days N --requests N",
            |flag, value| {
                match flag {
                    "--resources" => opts.resources = value.parse()?,
                    "--days" => opts.days = value.parse()?,
                    "--requests" => opts.requests = value.parse()?,
                    _ => return Ok(false),
                }
                Ok(true)
            },
        )?;
        if opts.days < 1 || opts.days > 366 {
            bail!("--days must be from 1 to 366 (GET /metrics answers at most 366 days)");
        }
        Ok(opts)
    }
}

fn resource(i: usize) -> String {
    format!("cch_bench{i:05}")
}

fn project(i: usize) -> String {
    format!("prj_bench{:02}", i % PROJECTS)
}

/// Fills the series store: one batch per day, every resource's two
/// metrics; answers the points written.
async fn fill(db: &Db, org: &str, opts: &Options, today: i64) -> anyhow::Result<usize> {
    let mut written = 0;
    for back in 0..opts.days {
        let day = time::to_date(today - back * DAY_MS);
        let mut batch = Vec::with_capacity(opts.resources * 2);
        for i in 0..opts.resources {
            for (metric, quantity) in [("compute_hours", 24.0), ("disk_gb_hours", 2.4 + i as f64)] {
                batch.push(Increment {
                    org_id: org.to_owned(),
                    project_id: Some(project(i)),
                    resource_type: "cache",
                    resource_id: resource(i),
                    metric,
                    day: day.clone(),
                    quantity,
                });
            }
        }
        written += batch.len();
        usage::add(db, &batch).await?;
    }
    Ok(written)
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let server = Server::start_release().await?;
    let token = server.create_org("metrics-bench", "pro").await?;
    let api = Client::new(&server.base).with_token(&token);
    let org = api.get("/me").await.json()["organization"]["id"]
        .as_str()
        .context("/me names no organisation")?
        .to_owned();
    let db = Db::connect(&Db::sqlite_url(server.data_dir())).await?;
    let today = time::now_ms();
    let started = Instant::now();
    let written = fill(&db, &org, &opts, today).await?;
    let filled_in = started.elapsed();
    let from_year = time::to_date(today - (opts.days - 1) * DAY_MS);
    let from_month = time::to_date(today - 29 * DAY_MS);
    let to = time::to_date(today);
    println!(
        "GET /metrics: {} resources x {} days x 2 metrics = {written} points written in {:.1} s ({}, SQLite)\n",
        opts.resources,
        opts.days,
        filled_in.as_secs_f64(),
        if debug_profile() {
            "debug build"
        } else {
            "release build"
        },
    );
    let scenarios: Vec<(String, String, usize)> = vec![
        (
            "one resource, the year".to_owned(),
            format!(
                "/metrics?resource={}&from={from_year}&to={to}",
                resource(42)
            ),
            opts.requests,
        ),
        (
            "one resource, one metric, the year".to_owned(),
            format!(
                "/metrics?resource={}&metric=compute_hours&from={from_year}&to={to}",
                resource(42)
            ),
            opts.requests,
        ),
        (
            "one project, one metric, 30 days".to_owned(),
            format!(
                "/metrics?project={}&metric=compute_hours&from={from_month}&to={to}",
                project(3)
            ),
            opts.requests,
        ),
        (
            "the organisation, today".to_owned(),
            format!("/metrics?from={to}&to={to}"),
            opts.requests,
        ),
        (
            "the organisation, one metric, 30 days".to_owned(),
            format!("/metrics?metric=compute_hours&from={from_month}&to={to}"),
            opts.requests.div_ceil(10),
        ),
        (
            "the organisation, everything, the year".to_owned(),
            format!("/metrics?from={from_year}&to={to}"),
            1,
        ),
    ];
    println!(
        "{:<42} {:>9} {:>9} {:>10} {:>10}  bound {BOUND_MS} ms",
        "query", "points", "requests", "p50 ms", "p99 ms"
    );
    for (name, path, requests) in scenarios {
        let mut samples = Vec::with_capacity(requests);
        let mut points = 0;
        for _ in 0..requests {
            let started = Instant::now();
            let r = api.get(&path).await;
            samples.push(started.elapsed().as_secs_f64() * 1000.0);
            if r.status != 200 {
                bail!("{path}: {} {}", r.status, r.text());
            }
            points = r.json()["items"].as_array().map_or(0, Vec::len);
        }
        let (p50, p99) = percentiles(&samples);
        let verdict = if p99 < BOUND_MS { "under" } else { "OVER" };
        println!("{name:<42} {points:>9} {requests:>9} {p50:>10.1} {p99:>10.1}  {verdict}");
    }
    db.close().await;
    Ok(())
}
