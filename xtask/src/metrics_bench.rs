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
//! the bound with the points it answered. Answers too large for one
//! response (the organisation's month of one metric, its whole year) are
//! asked in pages of 200 (`limit`, `cursor`): the first page, which counts
//! the range's totals, is timed apart from the pages that follow; the
//! year is walked to its end. Statistics are not gathered (no ANALYZE):
//! each filter has its index (migration 0049) and needs none.

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
            "org, one metric, 30 days, first page".to_owned(),
            format!("/metrics?metric=compute_hours&from={from_month}&to={to}&limit=200"),
            opts.requests,
        ),
        (
            "org, everything, the year, first page".to_owned(),
            format!("/metrics?from={from_year}&to={to}&limit=200"),
            opts.requests.div_ceil(5),
        ),
        (
            "org, one metric, 30 days, unpaged".to_owned(),
            format!("/metrics?metric=compute_hours&from={from_month}&to={to}"),
            opts.requests.div_ceil(10),
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
        row(&name, points, &samples);
    }
    for (name, path, pages) in [
        (
            "org, one metric, 30 days, next pages",
            format!("/metrics?metric=compute_hours&from={from_month}&to={to}&limit=200"),
            opts.requests,
        ),
        (
            "org, everything, the year, every page",
            format!("/metrics?from={from_year}&to={to}&limit=200"),
            usize::MAX,
        ),
    ] {
        walk(&api, name, &path, pages).await?;
    }
    db.close().await;
    Ok(())
}

fn row(name: &str, points: usize, samples: &[f64]) {
    let (p50, p99) = percentiles(samples);
    let verdict = if p99 < BOUND_MS { "under" } else { "OVER" };
    println!(
        "{name:<42} {points:>9} {:>9} {p50:>10.1} {p99:>10.1}  {verdict}",
        samples.len()
    );
}

/// Follows `nextCursor` from the first page of `path` for at most `pages`
/// pages after it, timing each; prints the pages' row (points: all the
/// pages held) and how long the walk took.
async fn walk(api: &Client, name: &str, path: &str, pages: usize) -> anyhow::Result<()> {
    let first = api.get(path).await;
    if first.status != 200 {
        bail!("{path}: {} {}", first.status, first.text());
    }
    let body = first.json();
    let total = body["total"].as_i64().unwrap_or(0);
    let mut cursor = body["nextCursor"].as_str().map(str::to_owned);
    let mut points = body["items"].as_array().map_or(0, Vec::len);
    let mut samples = Vec::new();
    let started = Instant::now();
    while let Some(next) = cursor.take() {
        if samples.len() == pages {
            break;
        }
        let page = format!("{path}&cursor={next}");
        let t = Instant::now();
        let r = api.get(&page).await;
        samples.push(t.elapsed().as_secs_f64() * 1000.0);
        if r.status != 200 {
            bail!("{page}: {} {}", r.status, r.text());
        }
        let body = r.json();
        points += body["items"].as_array().map_or(0, Vec::len);
        cursor = body["nextCursor"].as_str().map(str::to_owned);
    }
    row(name, points, &samples);
    if pages == usize::MAX {
        if points as i64 != total {
            bail!("{path}: the pages held {points} points, total says {total}");
        }
        println!(
            "{:<42} walked {} pages, {points} points (= total) in {:.1} s",
            "",
            samples.len() + 1,
            started.elapsed().as_secs_f64()
        );
    }
    Ok(())
}
