//! `cargo xtask bench databases`: managed PostgreSQL (issue 16). The time
//! from `POST /databases` to a cluster accepting connections (p50, p99,
//! over create-and-delete rounds), then pgbench's select-only script
//! through the pooler (`uri`) and straight to the leader (`writeUri`) in
//! alternating rounds of the same run, with the pool's share of direct TPS.

use std::process::Command;
use std::time::Instant;

use anyhow::{Context, bail};
use plateau_testkit::Client;
use serde_json::json;

use crate::server::Server;

pub struct Options {
    /// Create-and-delete rounds for the creation time.
    pub creations: usize,
    /// pgbench seconds per round and rounds per target.
    pub seconds: u64,
    pub rounds: usize,
    pub clients: usize,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options {
            creations: 10,
            seconds: 10,
            rounds: 3,
            clients: 8,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next().with_context(|| format!("{flag} needs a value"))?;
            match *flag {
                "--creations" => opts.creations = value.parse()?,
                "--seconds" => opts.seconds = value.parse()?,
                "--rounds" => opts.rounds = value.parse()?,
                "--clients" => opts.clients = value.parse()?,
                other => bail!(
                    "unknown option {other} (use --creations N, --seconds N, --rounds N, --clients N)"
                ),
            }
        }
        Ok(opts)
    }
}

fn pgbench() -> anyhow::Result<String> {
    for v in ["17", "16", "15"] {
        let path = format!("/usr/lib/postgresql/{v}/bin/pgbench");
        if std::path::Path::new(&path).exists() {
            return Ok(path);
        }
    }
    bail!("pgbench not found: install the postgresql package")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

/// Runs pgbench against `uri`; its TPS.
fn tps(bench: &str, uri: &str, opts: &Options) -> anyhow::Result<f64> {
    let out = Command::new(bench)
        .args(["-S", "-M", "simple", "-n", "-j", "2"])
        .args([
            "-c",
            &opts.clients.to_string(),
            "-T",
            &opts.seconds.to_string(),
        ])
        .arg(uri)
        .output()
        .context("running pgbench")?;
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("tps = "))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .with_context(|| {
            format!(
                "pgbench printed no tps: {}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let bench = pgbench()?;
    let server = Server::start_release().await?;
    let c = Client::new(&server.base).with_token(&server.token);
    println!(
        "managed PostgreSQL benchmark: {} creations; pgbench select-only, {} clients, {} s x {} rounds per target; release build\n",
        opts.creations, opts.clients, opts.seconds, opts.rounds
    );
    let mut created = Vec::new();
    for _ in 0..opts.creations {
        let start = Instant::now();
        let r = c.post("/databases", json!({ "name": "bench" })).await;
        if r.status != 201 {
            bail!("creating a database answered {}: {}", r.status, r.text());
        }
        created.push(start.elapsed().as_secs_f64() * 1000.0);
        let id = r.json()["id"].as_str().unwrap_or_default().to_owned();
        c.delete(&format!("/databases/{id}")).await;
    }
    created.sort_by(f64::total_cmp);
    println!(
        "creation (request to accepting connections): p50 {:.0} ms, p99 {:.0} ms (target p50 < 3000 ms)",
        percentile(&created, 0.5),
        percentile(&created, 0.99)
    );

    let r = c.post("/databases", json!({ "name": "bench" })).await;
    if r.status != 201 {
        bail!("creating a database answered {}: {}", r.status, r.text());
    }
    let id = r.json()["id"].as_str().unwrap_or_default().to_owned();
    let conn = c.get(&format!("/databases/{id}/connection")).await.json();
    let pooled = conn["uri"].as_str().context("no uri")?.to_owned();
    let direct = conn["writeUri"].as_str().context("no writeUri")?.to_owned();
    let init = Command::new(&bench)
        .args(["-i", "-q", "-s", "10"])
        .arg(&direct)
        .output()?;
    if !init.status.success() {
        bail!("pgbench -i: {}", String::from_utf8_lossy(&init.stderr));
    }
    let (mut d, mut p) = (Vec::new(), Vec::new());
    for round in 1..=opts.rounds {
        let direct_tps = tps(&bench, &direct, &opts)?;
        let pool_tps = tps(&bench, &pooled, &opts)?;
        println!("round {round}: direct {direct_tps:.0} tps, pool {pool_tps:.0} tps");
        d.push(direct_tps);
        p.push(pool_tps);
    }
    let (direct_sum, pool_sum): (f64, f64) = (d.iter().sum(), p.iter().sum());
    println!(
        "\npool / direct: {:.0}% of direct TPS over {} rounds (target >= 90%)",
        pool_sum / direct_sum * 100.0,
        opts.rounds
    );
    c.delete(&format!("/databases/{id}")).await;
    drop(server);
    Ok(())
}
