//! `cargo xtask bench checks`: the lateness of the checks scheduler. The
//! release server (system clock, SQLite) runs 10,000 URL checks every
//! minute, of a paid organisation, against a local HTTP server; their due
//! times are spread over the minute by creating them over one interval.
//! After that warm-up minute the host's lateness samples are reset and the
//! next minutes measured: lateness is how long after its due time each job
//! run started (`GET /admin/jobs`). The baseline of the same run hits the
//! local server directly from a tokio timer at the same rate, on
//! kept-alive connections like the egress guard's.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::harness::{HttpClient, call, http_client, login, parse_flags};
use crate::server::Server;

pub struct Options {
    /// Checks, all every `interval` seconds.
    pub checks: usize,
    pub interval: u64,
    /// Seconds measured after the warm-up interval.
    pub seconds: u64,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options {
            checks: 10_000,
            interval: 60,
            seconds: 120,
        };
        parse_flags(args, "--checks N, --seconds N", |flag, value| {
            match flag {
                "--checks" => opts.checks = value.parse()?,
                "--seconds" => opts.seconds = value.parse()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(opts)
    }

    /// Runs per second when every check runs once per interval.
    fn rate(&self) -> f64 {
        self.checks as f64 / self.interval as f64
    }
}

/// One row of the table.
struct Row {
    name: String,
    runs: u64,
    seconds: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let target = Target::start().await?;
    println!(
        "checks scheduler benchmark: {} URL checks every {} s ({:.1} runs/s), {} s measured after a {} s warm-up, SQLite, release build\n",
        opts.checks,
        opts.interval,
        opts.rate(),
        opts.seconds,
        opts.interval
    );
    let baseline = direct(&target, opts.rate(), opts.seconds.min(30)).await?;

    let server = Server::start_release_with(&[("PLATEAU_EGRESS_ALLOW", "127.0.0.0/8")]).await?;
    let owner = server.create_org("Bench", "pro").await?;
    let client = http_client(true);
    let api = format!("{}/api/v1", server.base);
    let cookie = login(&client, &api).await?;

    let created = create_checks(&client, &api, &owner, &target.url(), &opts).await?;
    println!(
        "created {created} checks over {} s ({:.0}/s), their first runs included",
        opts.interval,
        created as f64 / opts.interval as f64
    );
    let (status, _) = call(
        &client,
        Method::POST,
        &format!("{api}/admin/jobs/lateness/reset"),
        &[("cookie", &cookie)],
        None,
    )
    .await?;
    if status != StatusCode::NO_CONTENT {
        bail!("resetting the lateness answered {status}");
    }
    let hits_before = target.hits();
    let cpu_before = server.cpu_time();
    let started = Instant::now();
    tokio::time::sleep(Duration::from_secs(opts.seconds)).await;
    let (_, jobs) = call(
        &client,
        Method::GET,
        &format!("{api}/admin/jobs"),
        &[("cookie", &cookie)],
        None,
    )
    .await?;
    let seconds = started.elapsed().as_secs_f64();
    let cpu = match (cpu_before, server.cpu_time()) {
        (Some(before), Some(after)) => format!(
            "{:.0}% of one core",
            100.0 * (after - before).as_secs_f64() / seconds
        ),
        _ => "unknown".to_owned(),
    };
    let hits = target.hits() - hits_before;
    let jobs: Value = serde_json::from_slice(&jobs).context("GET /admin/jobs")?;
    let lateness = &jobs["lateness"];
    let ms = |v: &Value| v.as_u64().unwrap_or(0) as f64;
    let plugin = Row {
        name: "checks plugin: job runner -> egress".to_owned(),
        runs: lateness["samples"].as_u64().unwrap_or(0),
        seconds,
        p50_ms: ms(&lateness["p50Ms"]),
        p99_ms: ms(&lateness["p99Ms"]),
        max_ms: ms(&lateness["maxMs"]),
    };
    println!();
    print_table(&[baseline, plugin]);
    println!(
        "\ntarget hits during the measurement: {hits} ({:.1}/s); backlog at the end: {} due, {} running, {} jobs",
        hits as f64 / seconds,
        jobs["due"],
        jobs["running"],
        jobs["total"]
    );
    println!("plateau server CPU during the measurement: {cpu}");
    println!(
        "target: p99 lateness under 1000 ms at {:.1} runs/s",
        opts.rate()
    );
    drop(server);
    Ok(())
}

fn print_table(rows: &[Row]) {
    println!(
        "{:<40} {:>8} {:>8} {:>12} {:>12} {:>12}",
        "scenario", "runs", "runs/s", "p50 late ms", "p99 late ms", "max late ms"
    );
    for r in rows {
        println!(
            "{:<40} {:>8} {:>8.1} {:>12.1} {:>12.1} {:>12.1}",
            r.name,
            r.runs,
            r.runs as f64 / r.seconds,
            r.p50_ms,
            r.p99_ms,
            r.max_ms
        );
    }
}

/// The baseline: `rate` requests per second straight from a tokio timer to
/// the target, open loop, on kept-alive connections (as the egress guard
/// keeps them); lateness is how long after its slot each request started.
async fn direct(target: &Target, rate: f64, seconds: u64) -> anyhow::Result<Row> {
    let client = http_client(true);
    let url = target.url();
    let total = (rate * seconds as f64) as u64;
    let start = tokio::time::Instant::now() + Duration::from_millis(100);
    let mut late = Vec::with_capacity(total as usize);
    let errors = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::with_capacity(total as usize);
    for i in 0..total {
        let slot = start + Duration::from_secs_f64(i as f64 / rate);
        tokio::time::sleep_until(slot).await;
        late.push(slot.elapsed().as_secs_f64() * 1000.0);
        let (client, url, errors) = (client.clone(), url.clone(), errors.clone());
        tasks.push(tokio::spawn(async move {
            match call(&client, Method::GET, &url, &[], None).await {
                Ok((status, _)) if status.is_success() => {}
                _ => {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for task in tasks {
        task.await?;
    }
    if errors.load(Ordering::Relaxed) > 0 {
        bail!("{} direct requests failed", errors.load(Ordering::Relaxed));
    }
    late.sort_by(f64::total_cmp);
    let pct = |p: f64| late[((late.len() - 1) as f64 * p).round() as usize];
    Ok(Row {
        name: "direct: tokio timer -> local server".to_owned(),
        runs: total,
        seconds: seconds as f64,
        p50_ms: pct(0.5),
        p99_ms: pct(0.99),
        max_ms: pct(1.0),
    })
}

/// Creates `opts.checks` checks, the i-th at `i / rate` seconds, so their
/// first runs (due at creation) and every later one spread over the
/// interval. Returns how many were created.
async fn create_checks(
    client: &HttpClient,
    api: &str,
    token: &str,
    url: &str,
    opts: &Options,
) -> anyhow::Result<usize> {
    let next = Arc::new(AtomicUsize::new(0));
    let created = Arc::new(AtomicUsize::new(0));
    let start = tokio::time::Instant::now();
    let rate = opts.rate();
    let mut workers = Vec::new();
    for _ in 0..16 {
        let (client, next, created) = (client.clone(), next.clone(), created.clone());
        let (api, token, url, n) = (
            api.to_owned(),
            format!("Bearer {token}"),
            url.to_owned(),
            opts.checks,
        );
        let interval = opts.interval;
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok::<_, anyhow::Error>(());
                }
                tokio::time::sleep_until(start + Duration::from_secs_f64(i as f64 / rate)).await;
                let body = json!({
                    "name": format!("bench-{i}"), "kind": "url", "url": url,
                    "intervalSeconds": interval, "timeoutMs": 5000,
                });
                let (status, answer) = call(
                    &client,
                    Method::POST,
                    &format!("{api}/checks"),
                    &[
                        ("authorization", &token),
                        ("content-type", "application/json"),
                    ],
                    Some(body.to_string()),
                )
                .await?;
                if status != StatusCode::CREATED {
                    bail!(
                        "creating check {i} answered {status}: {}",
                        String::from_utf8_lossy(&answer)
                    );
                }
                created.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for worker in workers {
        worker.await??;
    }
    // The rest of the warm-up interval, if creating was quicker.
    tokio::time::sleep_until(start + Duration::from_secs(opts.interval)).await;
    Ok(created.load(Ordering::Relaxed))
}

/// The local HTTP server the checks probe: `200 ok` at once, counting hits.
struct Target {
    addr: std::net::SocketAddr,
    hits: Arc<AtomicU64>,
}

impl Target {
    async fn start() -> anyhow::Result<Target> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let hits = Arc::new(AtomicU64::new(0));
        let counter = hits.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let counter = counter.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |_req: Request<_>| {
                        counter.fetch_add(1, Ordering::Relaxed);
                        async { Ok::<_, Infallible>(Response::new(Full::new(Bytes::from("ok")))) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Target { addr, hits })
    }

    fn url(&self) -> String {
        format!("http://{}/health", self.addr)
    }

    fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }
}
