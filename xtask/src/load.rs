//! A closed-loop HTTP load generator: N keep-alive connections, each
//! sending its next request when the previous answer arrived, for a fixed
//! time after a warm-up. Reports throughput and latency percentiles.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::server::Server;

pub struct Options {
    pub seconds: u64,
    pub connections: usize,
    /// [`run_table`] runs the scenarios in turn this many times, each for
    /// `seconds / rounds`, so a slow spell of a shared machine weighs on
    /// every scenario alike instead of on whichever ran during it.
    pub rounds: u32,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options {
            seconds: 5,
            connections: 32,
            rounds: 3,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next().with_context(|| format!("{flag} needs a value"))?;
            match *flag {
                "--seconds" => opts.seconds = value.parse()?,
                "--connections" => opts.connections = value.parse()?,
                "--rounds" => opts.rounds = value.parse::<u32>()?.max(1),
                other => bail!("unknown option {other}"),
            }
        }
        Ok(opts)
    }
}

#[derive(Clone, Copy)]
pub enum Keys {
    /// A new Idempotency-Key (and project name) on every request.
    Fresh,
    /// The same key and body every time: served from the idempotency store.
    Replay,
}

/// What each request of a scenario looks like.
pub struct Scenario {
    method: hyper::Method,
    url: String,
    token: Option<String>,
    body: Option<Keys>,
    /// A fixed JSON body, sent on every request.
    json: Option<String>,
    /// A Host header other than the URL's (the apps edge routes by it).
    host: Option<String>,
    /// A query of its own on every request (`?n=<sequence>`), so no two
    /// are the same resource to a cache.
    unique: bool,
}

impl Scenario {
    pub fn get(base: &str, path: &str, token: Option<&str>) -> Scenario {
        Scenario {
            method: hyper::Method::GET,
            url: format!("{base}{path}"),
            token: token.map(str::to_owned),
            body: None,
            json: None,
            host: None,
            unique: false,
        }
    }

    /// The same requests, sent with `Host: host`.
    pub fn with_host(mut self, host: &str) -> Scenario {
        self.host = Some(host.to_owned());
        self
    }

    /// The same requests, each with a query of its own.
    pub fn unique(mut self) -> Scenario {
        self.unique = true;
        self
    }

    pub fn post_json(base: &str, path: &str, token: &str, json: &str) -> Scenario {
        Scenario {
            method: hyper::Method::POST,
            url: format!("{base}{path}"),
            token: Some(token.to_owned()),
            body: None,
            json: Some(json.to_owned()),
            host: None,
            unique: false,
        }
    }

    pub fn post_projects(base: &str, token: &str, keys: Keys) -> Scenario {
        Scenario {
            method: hyper::Method::POST,
            url: format!("{base}/api/v1/projects"),
            token: Some(token.to_owned()),
            body: Some(keys),
            json: None,
            host: None,
            unique: false,
        }
    }

    fn request(&self, n: u64) -> Request<Full<Bytes>> {
        let url = if self.unique {
            let sep = if self.url.contains('?') { '&' } else { '?' };
            format!("{}{sep}n={n}", self.url)
        } else {
            self.url.clone()
        };
        // As every real client does: the firewall's managed set refuses a
        // request with neither a user agent nor a JSON Accept.
        let mut builder = Request::builder()
            .method(self.method.clone())
            .uri(url)
            .header("user-agent", "plateau-bench/1");
        if let Some(host) = &self.host {
            builder = builder.header("host", host);
        }
        if let Some(token) = &self.token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        let body = match self.body {
            None if self.json.is_some() => {
                builder = builder.header("content-type", "application/json");
                Bytes::from(self.json.clone().unwrap_or_default())
            }
            None => Bytes::new(),
            Some(keys) => {
                let (key, name) = match keys {
                    Keys::Fresh => (format!("bench-{n}"), format!("bench-{n}")),
                    Keys::Replay => ("bench-replay".to_owned(), "bench-replay".to_owned()),
                };
                builder = builder
                    .header("content-type", "application/json")
                    .header("idempotency-key", key);
                Bytes::from(format!(r#"{{"name":"{name}"}}"#))
            }
        };
        builder.body(Full::new(body)).expect("a valid request")
    }
}

pub struct Outcome {
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub errors: u64,
    /// Every request answered, the warm-up's included.
    pub answered: u64,
}

static SEQUENCE: AtomicU64 = AtomicU64::new(0);

pub async fn run(scenario: &Scenario, opts: &Options) -> anyhow::Result<Outcome> {
    let window = Duration::from_secs(opts.seconds);
    let sample = measure(scenario, opts.connections, Duration::from_secs(1), window).await?;
    Ok(sample.outcome(window))
}

/// What one or more measuring windows of a scenario saw.
#[derive(Default)]
struct Sample {
    /// Of the requests answered in the windows, in microseconds.
    latencies: Vec<u32>,
    errors: u64,
    /// Every request answered, warm-up included.
    answered: u64,
}

impl Sample {
    fn add(&mut self, other: Sample) {
        self.latencies.extend(other.latencies);
        self.errors += other.errors;
        self.answered += other.answered;
    }

    /// Throughput and latency over `measured`, the windows' total length.
    fn outcome(mut self, measured: Duration) -> Outcome {
        let all = &mut self.latencies;
        all.sort_unstable();
        let pct = |p: f64| {
            all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
                .map_or(0.0, |us| f64::from(*us) / 1000.0)
        };
        Outcome {
            rps: all.len() as f64 / measured.as_secs_f64(),
            p50_ms: pct(0.50),
            p99_ms: pct(0.99),
            errors: self.errors,
            answered: self.answered,
        }
    }
}

/// Drives `scenario` with `connections` clients for `warmup`, then
/// measures for `window`.
async fn measure(
    scenario: &Scenario,
    connections: usize,
    warmup: Duration,
    window: Duration,
) -> anyhow::Result<Sample> {
    let scenario = Arc::new(Scenario {
        method: scenario.method.clone(),
        url: scenario.url.clone(),
        token: scenario.token.clone(),
        body: scenario.body,
        json: scenario.json.clone(),
        host: scenario.host.clone(),
        unique: scenario.unique,
    });
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(connections)
        .build(connector);
    // Warm up (and, for replays, store the first response).
    let warmup_until = Instant::now() + warmup;
    let measure_until = warmup_until + window;
    let errors = Arc::new(AtomicU64::new(0));
    let answered = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let client = client.clone();
        let scenario = scenario.clone();
        let errors = errors.clone();
        let answered = answered.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::with_capacity(64 * 1024);
            loop {
                let started = Instant::now();
                if started >= measure_until {
                    break;
                }
                let n = SEQUENCE.fetch_add(1, Ordering::Relaxed);
                let ok = match client.request(scenario.request(n)).await {
                    Ok(response) => {
                        let ok = response.status().is_success();
                        let _ = response.into_body().collect().await;
                        ok
                    }
                    Err(_) => false,
                };
                answered.fetch_add(1, Ordering::Relaxed);
                if started >= warmup_until {
                    if !ok {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                    latencies.push(started.elapsed().as_micros() as u32);
                }
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await?);
    }
    Ok(Sample {
        latencies,
        errors: errors.load(Ordering::Relaxed),
        answered: answered.load(Ordering::Relaxed),
    })
}

/// Runs the scenarios in turn against `server`, in `opts.rounds` rounds
/// that split `opts.seconds` (each window after a short warm-up), and
/// prints a table: throughput, latency, throughput as a ratio to the first
/// scenario (the baseline of the run), and the server's CPU time per
/// request, which the load generator sharing the machine does not blur as
/// much.
pub async fn run_table(
    server: &Server,
    scenarios: Vec<(&str, Scenario)>,
    opts: &Options,
    baseline: &str,
) -> anyhow::Result<Vec<Outcome>> {
    let pid = server.pid();
    let scenarios = scenarios
        .into_iter()
        .map(|(name, scenario)| (name, scenario, pid))
        .collect();
    run_rounds_against(scenarios, opts, baseline).await
}

/// [`run_table`] for scenarios served by different processes, each
/// scenario with the process (if any) whose CPU time it charges; the first
/// scenario is the baseline.
pub async fn run_rounds(
    scenarios: Vec<(&str, Scenario, Option<u32>)>,
    opts: &Options,
) -> anyhow::Result<Vec<Outcome>> {
    let baseline = scenarios
        .first()
        .map(|s| s.0.to_owned())
        .unwrap_or_default();
    run_rounds_against(scenarios, opts, &baseline).await
}

async fn run_rounds_against(
    scenarios: Vec<(&str, Scenario, Option<u32>)>,
    opts: &Options,
    baseline: &str,
) -> anyhow::Result<Vec<Outcome>> {
    let window = Duration::from_secs(opts.seconds) / opts.rounds;
    let warmup = Duration::from_millis(500);
    let mut samples: Vec<Sample> = scenarios.iter().map(|_| Sample::default()).collect();
    let mut cpu: Vec<Option<Duration>> = vec![Some(Duration::ZERO); scenarios.len()];
    let mut per_round: Vec<Vec<f64>> = vec![Vec::new(); scenarios.len()];
    for _ in 0..opts.rounds {
        for ((_, scenario, pid), ((sample, cpu), rounds)) in scenarios
            .iter()
            .zip(samples.iter_mut().zip(&mut cpu).zip(&mut per_round))
        {
            let before = pid.and_then(cpu_time);
            let round = measure(scenario, opts.connections, warmup, window).await?;
            rounds.push(round.latencies.len() as f64 / window.as_secs_f64());
            sample.add(round);
            let used = pid
                .and_then(cpu_time)
                .zip(before)
                .map(|(after, before)| after - before);
            *cpu = cpu.zip(used).map(|(total, used)| total + used);
        }
    }
    let measured = window * opts.rounds;
    let results: Vec<(&str, Outcome, Option<f64>)> = scenarios
        .iter()
        .zip(samples.into_iter().zip(cpu))
        .map(|((name, _, _), (sample, cpu))| {
            let outcome = sample.outcome(measured);
            let cpu_us = cpu.map(|cpu| cpu.as_secs_f64() * 1e6 / outcome.answered as f64);
            (*name, outcome, cpu_us)
        })
        .collect();
    let base = results[0].1.rps;
    println!(
        "{:<40} {:>10} {:>10} {:>10} {:>10} {:>8} {:>14}",
        "scenario",
        "req/s",
        "p50 ms",
        "p99 ms",
        format!("vs {baseline}"),
        "errors",
        "server us/req"
    );
    for (name, r, cpu_us) in &results {
        let cpu = cpu_us.map_or("-".to_owned(), |us| format!("{us:.0}"));
        println!(
            "{:<40} {:>10.0} {:>10.3} {:>10.3} {:>9.0}% {:>8} {:>14}",
            name,
            r.rps,
            r.p50_ms,
            r.p99_ms,
            100.0 * r.rps / base,
            r.errors,
            cpu
        );
    }
    let rows: Vec<(&str, Vec<f64>, Option<usize>)> = results
        .iter()
        .zip(per_round)
        .enumerate()
        .map(|(i, ((name, _, _), rounds))| (*name, rounds, (i > 0).then_some(0)))
        .collect();
    print_rounds(&rows);
    Ok(results.into_iter().map(|(_, r, _)| r).collect())
}

/// Each scenario's req/s in each round, and for a scenario measured
/// against a peer (the row it names) its ratio in each round and their
/// median: a round spoilt by a busy spell of a shared machine shows.
pub fn print_rounds(rows: &[(&str, Vec<f64>, Option<usize>)]) {
    println!("  req/s in each round (against the peer in the same round; median):");
    for (name, rounds, peer) in rows {
        let list: Vec<String> = rounds.iter().map(|r| format!("{r:.0}")).collect();
        print!("    {:<38} {}", name, list.join(" "));
        if let Some(peer) = peer {
            let mut ratios: Vec<f64> = rounds
                .iter()
                .zip(&rows[*peer].1)
                .map(|(r, p)| r / p)
                .collect();
            let shown: Vec<String> = ratios
                .iter()
                .map(|r| format!("{:.0}%", 100.0 * r))
                .collect();
            ratios.sort_by(f64::total_cmp);
            print!(
                "  | {}; median {:.0}%",
                shown.join(" "),
                100.0 * median(&ratios)
            );
        }
        println!();
    }
}

/// The median of `sorted` (the mean of the middle two when even).
fn median(sorted: &[f64]) -> f64 {
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// A process's CPU time so far (user and system), where `/proc` tells it.
pub fn cpu_time(pid: u32) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // Linux reports clock ticks of 1/100 s (USER_HZ) on every architecture we run on.
    Some(Duration::from_millis(ticks * 10))
}
