//! `cargo xtask bench cron`: the lateness of cron jobs all due in the same
//! minute. The release server (system clock, SQLite) holds 10,000 http
//! cron jobs on `* * * * *` (50 organisations on the `scale` plan, 200 jobs
//! each, the plan's limit) calling a local HTTP sink. Once they exist, the
//! next whole minute is due for every one of them; the sink records when
//! each request of that minute arrives, and its lateness is the arrival
//! time minus the due minute. The host's own lateness samples (how long
//! after its due time each job run started, `GET /admin/jobs`), reset just
//! before the minute, are printed next to it. The method is the checks
//! bench's (`checks_bench.rs`), with every run due at once instead of
//! spread over the interval. The bound of the machine is measured first:
//! the same requests sent straight from tokio on kept-alive connections,
//! 128 at a time (the egress guard keeps at most 128 connections open to
//! one destination, and keeps them alive between requests).

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::harness::{HttpClient, call, http_client, login, now_ms, parse_flags, percentile};
use crate::server::Server;

pub struct Options {
    /// Cron jobs, all due every minute.
    pub jobs: usize,
}

/// Jobs per organisation: the `scale` plan's limit.
const PER_ORG: usize = 200;
/// How many connections the egress guard keeps open to one destination
/// (`PER_DESTINATION` in `plugin-runtime`'s `egress/gates.rs`): the bound
/// sends as many requests at once.
const AT_ONCE: usize = 128;

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options { jobs: 10_000 };
        parse_flags(args, "--jobs N", |flag, value| {
            match flag {
                "--jobs" => opts.jobs = value.parse()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        Ok(opts)
    }
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let sink = Sink::start().await?;
    println!(
        "cron jobs benchmark: {} http cron jobs on `* * * * *`, all due in the same minute, against a local sink; SQLite, release build\n",
        opts.jobs
    );
    // The bound of this machine: the same requests sent straight from a
    // tokio loop on kept-alive connections (as the egress guard keeps
    // them), as many at once as the guard opens to one destination, all
    // due at once.
    let baseline = direct(&sink, opts.jobs, AT_ONCE).await?;
    let server = Server::start_release_with(&[("PLATEAU_EGRESS_ALLOW", "127.0.0.0/8")]).await?;
    let orgs = opts.jobs.div_ceil(PER_ORG);
    let mut tokens = Vec::with_capacity(orgs);
    for i in 0..orgs {
        let owner = server.create_org(&format!("Cron {i}"), "scale").await?;
        tokens.push(owner);
    }
    let client = http_client(true);
    let api = format!("{}/api/v1", server.base);
    let cookie = login(&client, &api).await?;
    let started = std::time::Instant::now();
    create_jobs(&client, &api, &tokens, &sink.url(), opts.jobs).await?;
    println!(
        "created {} jobs in {} organisations in {:.1} s",
        opts.jobs,
        orgs,
        started.elapsed().as_secs_f64()
    );
    // The first whole minute at least 5 s away: every job is due then, and
    // the runs of the minute before (jobs created earlier) are done.
    let due = (now_ms() + 5_000).div_ceil(60_000) * 60_000;
    tokio::time::sleep(Duration::from_millis(due - 1_000 - now_ms())).await;
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
    sink.clear();
    let cpu_before = server.cpu_time();
    // Until every job of the minute has called, or 55 s.
    let deadline = due + 55_000;
    while now_ms() < deadline && sink.count_since(due) < opts.jobs {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let seconds = (now_ms().saturating_sub(due)) as f64 / 1000.0;
    let cpu = match (cpu_before, server.cpu_time()) {
        (Some(before), Some(after)) => format!(
            "{:.0}% of one core",
            100.0 * (after - before).as_secs_f64() / (seconds + 1.0)
        ),
        _ => "unknown".to_owned(),
    };
    let (_, jobs) = call(
        &client,
        Method::GET,
        &format!("{api}/admin/jobs"),
        &[("cookie", &cookie)],
        None,
    )
    .await?;
    let jobs: Value = serde_json::from_slice(&jobs).context("GET /admin/jobs")?;
    let mut late: Vec<u64> = sink
        .arrivals()
        .into_iter()
        .filter(|at| *at >= due)
        .map(|at| at - due)
        .collect();
    late.sort_unstable();
    let early = sink.arrivals().iter().filter(|at| **at < due).count();
    let pct = |p: f64| {
        if late.is_empty() {
            0
        } else {
            late[((late.len() - 1) as f64 * p).round() as usize]
        }
    };
    let lateness = &jobs["lateness"];
    let ms = |v: &Value| v.as_u64().unwrap_or(0);
    println!();
    println!(
        "{:<44} {:>8} {:>12} {:>12} {:>12}",
        "measure", "runs", "p50 late ms", "p99 late ms", "max late ms"
    );
    println!(
        "{:<44} {:>8} {:>12} {:>12} {:>12}",
        "delivery at the sink (arrival - due minute)",
        late.len(),
        pct(0.5),
        pct(0.99),
        pct(1.0)
    );
    println!(
        "{:<44} {:>8} {:>12} {:>12} {:>12}",
        "job run start (host samples)",
        lateness["samples"].as_u64().unwrap_or(0),
        ms(&lateness["p50Ms"]),
        ms(&lateness["p99Ms"]),
        ms(&lateness["maxMs"])
    );
    println!(
        "{:<44} {:>8} {:>12} {:>12} {:>12}",
        format!("bound: direct from tokio, {AT_ONCE} at a time"),
        baseline.len(),
        percentile(&baseline, 0.5),
        percentile(&baseline, 0.99),
        percentile(&baseline, 1.0)
    );
    println!(
        "\ndelivered {} of {} in {:.1} s ({early} arrived before the minute); backlog at the end: {} due, {} running",
        late.len(),
        opts.jobs,
        seconds,
        jobs["due"],
        jobs["running"]
    );
    println!("plateau server CPU from the minute on: {cpu}");
    match settled(&client, &api, &cookie, deadline).await? {
        Some(ms) => println!(
            "every run of the minute recorded (no job due or running) {:.1} s after it",
            ms as f64 / 1000.0
        ),
        None => println!("runs of the minute still being recorded 55 s after it"),
    }
    println!("target: p99 lateness under 1000 ms");
    Ok(())
}

/// When, after the due minute, the host had no job due or running (ms),
/// polled until `deadline`.
async fn settled(
    client: &HttpClient,
    api: &str,
    cookie: &str,
    deadline: u64,
) -> anyhow::Result<Option<u64>> {
    let due = deadline - 55_000;
    while now_ms() < deadline {
        let (_, jobs) = call(
            client,
            Method::GET,
            &format!("{api}/admin/jobs"),
            &[("cookie", cookie)],
            None,
        )
        .await?;
        let jobs: Value = serde_json::from_slice(&jobs).context("GET /admin/jobs")?;
        if jobs["due"] == 0 && jobs["running"] == 0 {
            return Ok(Some(now_ms() - due));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(None)
}

/// Sends `n` requests to the sink at once, `at_once` in flight, on
/// kept-alive connections; the lateness of each arrival (ms after the
/// start).
async fn direct(sink: &Sink, n: usize, at_once: usize) -> anyhow::Result<Vec<f64>> {
    let client = http_client(true);
    let url = sink.url();
    let next = Arc::new(AtomicUsize::new(0));
    let due = now_ms();
    let mut workers = Vec::new();
    for _ in 0..at_once {
        let (client, next, url) = (client.clone(), next.clone(), url.clone());
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < n {
                call(&client, Method::POST, &url, &[], None).await?;
            }
            Ok::<_, anyhow::Error>(())
        }));
    }
    for worker in workers {
        worker.await??;
    }
    let mut late: Vec<f64> = sink
        .arrivals()
        .into_iter()
        .map(|at| at.saturating_sub(due) as f64)
        .collect();
    late.sort_by(f64::total_cmp);
    Ok(late)
}

/// Creates `n` jobs spread over the organisations, 16 requests at a time.
async fn create_jobs(
    client: &HttpClient,
    api: &str,
    tokens: &[String],
    url: &str,
    n: usize,
) -> anyhow::Result<()> {
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..16 {
        let (client, next, tokens) = (client.clone(), next.clone(), tokens.to_vec());
        let (api, url) = (api.to_owned(), url.to_owned());
        workers.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return Ok::<_, anyhow::Error>(());
                }
                let token = format!("Bearer {}", tokens[i / PER_ORG]);
                let body = json!({
                    "name": format!("bench-{i}"), "schedule": "* * * * *",
                    "type": "http", "url": url, "timeoutSeconds": 10,
                });
                let (status, answer) = call(
                    &client,
                    Method::POST,
                    &format!("{api}/cron-jobs"),
                    &[
                        ("authorization", &token),
                        ("content-type", "application/json"),
                    ],
                    Some(body.to_string()),
                )
                .await?;
                if status != StatusCode::CREATED {
                    bail!(
                        "creating cron job {i} answered {status}: {}",
                        String::from_utf8_lossy(&answer)
                    );
                }
            }
        }));
    }
    for worker in workers {
        worker.await??;
    }
    Ok(())
}

/// The local HTTP sink the jobs call: `200 ok` at once, noting each
/// arrival time (milliseconds).
struct Sink {
    addr: std::net::SocketAddr,
    arrivals: Arc<Mutex<Vec<u64>>>,
}

impl Sink {
    async fn start() -> anyhow::Result<Sink> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let arrivals: Arc<Mutex<Vec<u64>>> = Arc::default();
        let seen = arrivals.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let seen = seen.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |_req: Request<_>| {
                        seen.lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(now_ms());
                        async { Ok::<_, Infallible>(Response::new(Full::new(Bytes::from("ok")))) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Sink { addr, arrivals })
    }

    fn url(&self) -> String {
        format!("http://{}/hook", self.addr)
    }

    fn clear(&self) {
        self.arrivals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
    }

    fn arrivals(&self) -> Vec<u64> {
        self.arrivals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn count_since(&self, at: u64) -> usize {
        self.arrivals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|t| **t >= at)
            .count()
    }
}
