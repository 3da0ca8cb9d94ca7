//! `cargo xtask bench workflows`: completed steps per second through the
//! workflows plugin with 32 workers (issue 19's target: at least 500
//! steps/s), with p50 and p99 of claim and complete and their 409 counts.
//! The runs are started first; then every worker loops: claim the next
//! step, complete it (naming the next step until the run's last), and
//! claim again on 409. SQLite, release build.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use serde_json::{Value, json};

use crate::harness::{Api, Samples, parse_flags, print_samples};
use crate::server::Server;

pub struct Options {
    pub runs: u64,
    pub steps: u64,
    pub workers: usize,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options {
            runs: 2000,
            steps: 5,
            workers: 32,
        };
        parse_flags(args, "--runs N, --steps N, --workers N", |flag, value| {
            match flag {
                "--runs" => opts.runs = value.parse()?,
                "--steps" => opts.steps = value.parse()?,
                "--workers" => opts.workers = value.parse()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        if opts.workers == 0 || opts.runs == 0 || opts.steps == 0 {
            bail!("--runs, --steps and --workers must be at least 1");
        }
        Ok(opts)
    }
}

/// Starts `runs` runs with `workers` concurrent clients.
async fn start_runs(api: &Api, runs: u64, workers: usize) -> anyhow::Result<Samples> {
    let next = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..workers {
        let (api, next) = (api.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut s = Samples::default();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= runs {
                    return s;
                }
                let body = json!({ "workflow": "bench", "input": { "n": n, "payload": "0123456789abcdef" } });
                loop {
                    let at = Instant::now();
                    let r = api.post("/workflows/runs", &body).await;
                    s.latencies.push(at.elapsed());
                    match r {
                        Ok((201, _)) => break,
                        Ok((409, _)) => s.conflicts += 1,
                        _ => s.errors += 1,
                    }
                }
            }
        }));
    }
    let mut all = Samples::default();
    for task in tasks {
        all.merge(task.await?);
    }
    Ok(all)
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let server = Server::start_release().await?;
    let api = Api::new(&server);
    let total = opts.runs * opts.steps;
    println!(
        "workflows benchmark: {} runs of {} steps ({total} steps), {} workers (claim, complete, claim again on 409), SQLite, release build\n",
        opts.runs, opts.steps, opts.workers
    );
    let started = Instant::now();
    let starts = start_runs(&api, opts.runs, opts.workers).await?;
    let start_seconds = started.elapsed().as_secs_f64();

    let completed = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..opts.workers {
        let (api, completed) = (api.clone(), completed.clone());
        let last_step = opts.steps - 1;
        tasks.push(tokio::spawn(async move {
            let mut claim = Samples::default();
            let mut complete = Samples::default();
            while completed.load(Ordering::Relaxed) < total {
                let at = Instant::now();
                let r = api
                    .post("/workflows/next", &json!({ "leaseSeconds": 300 }))
                    .await;
                claim.latencies.push(at.elapsed());
                let step = match r {
                    Ok((200, step)) => step,
                    Ok((204, _)) => {
                        claim.empty += 1;
                        tokio::time::sleep(Duration::from_millis(5)).await;
                        continue;
                    }
                    Ok((409, _)) => {
                        claim.conflicts += 1;
                        continue;
                    }
                    _ => {
                        claim.errors += 1;
                        continue;
                    }
                };
                let seq = step["seq"].as_u64().unwrap_or(0);
                let mut body =
                    json!({ "leaseToken": step["leaseToken"], "output": { "seq": seq } });
                if seq < last_step {
                    body["nextStep"] = json!(format!("step-{}", seq + 1));
                }
                let path = format!(
                    "/workflows/runs/{}/complete",
                    step["runId"].as_str().unwrap_or_default()
                );
                loop {
                    let at = Instant::now();
                    let r = api.post(&path, &body).await;
                    complete.latencies.push(at.elapsed());
                    match r {
                        Ok((200, _)) => {
                            completed.fetch_add(1, Ordering::Relaxed);
                            break;
                        }
                        // A lost commit race keeps nothing: report again.
                        Ok((409, body)) if lost_commit(&body) => {
                            complete.conflicts += 1;
                        }
                        Ok((409, _)) => {
                            complete.conflicts += 1;
                            break;
                        }
                        _ => {
                            complete.errors += 1;
                            break;
                        }
                    }
                }
            }
            (claim, complete)
        }));
    }
    let mut claim = Samples::default();
    let mut complete = Samples::default();
    for task in tasks {
        let (a, b) = task.await?;
        claim.merge(a);
        complete.merge(b);
    }
    let seconds = started.elapsed().as_secs_f64();
    print_samples(&[
        ("start run", &starts),
        ("claim (next)", &claim),
        ("complete", &complete),
    ]);
    println!(
        "\nstarted {} runs in {start_seconds:.2} s; completed {total} steps in {seconds:.2} s: {:.0} steps/s",
        opts.runs,
        total as f64 / seconds
    );
    println!("target: >= 500 steps/s with 32 workers");
    Ok(())
}

/// A 409 that kept nothing of the request: the host's commit lost a race
/// (`plugin_write_conflict`) or the plugin's own swap did.
fn lost_commit(problem: &Value) -> bool {
    problem["code"] == "plugin_write_conflict"
        || problem["detail"]
            .as_str()
            .is_some_and(|d| d.contains("concurrently"))
}
