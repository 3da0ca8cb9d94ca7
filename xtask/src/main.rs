//! `cargo xtask`: the project's automation, in Rust.
//!
//! - `cargo xtask run [serve flags]`: install what is missing and run the
//!   server on embedded defaults (SQLite in `./data`, port 8080).
//! - `cargo xtask test [cargo test flags]`: install what is missing and run
//!   every test (the black-box suite runs on SQLite and PostgreSQL).
//! - `cargo xtask bench manifest [--rounds N]`: a stack of 5 apps, 2
//!   databases and 1 cache applied from empty, and re-applied unchanged
//!   (p50, p99; each checked to touch nothing) (issue 34).
//! - `cargo xtask bench metrics [--resources N] [--days N] [--requests N]`:
//!   `GET /metrics` p50/p99 over a year of daily points for 1,000
//!   resources, against the 50 ms bound (issue 34).
//! - `cargo xtask bench ingest [--resources N] [--minutes N] [--interval-ms N]`:
//!   usage ingest from 10,000 resources a minute, the lag per minute (issue 34).
//! - `cargo xtask bench databases [--creations N] [--seconds N] [--rounds N] [--clients N] [--failovers N]`:
//!   managed PostgreSQL creation time (p50, p99) and pgbench select-only
//!   through the pooler (pgbouncer 1.24) against straight to the leader and
//!   against Debian's pgbouncer 1.18 (issues 16, 32).
//! - `cargo xtask bench database-backups [--size-mib N] [--small-mib N] [--wal-mib N]
//!   [--rounds N] [--branches N]`: base backup and restore throughput of a
//!   1 GiB database against a plain copy of its data directory, branch
//!   creation (p50) of 100 MiB and 1 GiB, point-in-time restore over 100 MiB
//!   of WAL (issue 32).
//! - `cargo xtask install postgres`: `plateau install postgres` (PostgreSQL
//!   16 and 17, pgbouncer 1.24.1 and pgvector for the managed databases;
//!   also done by `run` and `test`).
//! - `cargo xtask bench core [--seconds N] [--connections N] [--rounds N]`: the core API
//!   benchmark (issue 2): requests per second and p50/p99 latency of
//!   authenticated and idempotent requests, each as a ratio to an
//!   unauthenticated static endpoint measured in the same run.
//! - `cargo xtask bench flags [--seconds N] [--connections N] [--rounds N]`: a flag
//!   evaluation served by the flags plugin against the same evaluation as a
//!   native host handler, in the same run; the floor of the plugin path (a
//!   plugin that does nothing against a native no-op); and, in-process, the
//!   instantiation, whole-call and native-evaluation costs (issue 3).
//! - `cargo xtask bench checks [--checks N] [--seconds N]`: the lateness
//!   (p50, p99) of the checks scheduler running 10,000 URL checks a minute
//!   against a local HTTP server, with the same rate hit directly as the
//!   baseline (issue 5).
//! - `cargo xtask bench cache [--requests N] [--clients N] [--creations N]
//!   [--failovers N]`: managed Redis over TLS against a plain redis-server
//!   (redis-benchmark), creation time and failover time (issue 18).
//! - `cargo xtask bench email [--messages N] [--connections N]`: the email
//!   relay's throughput to a local SMTP sink, ledger included, against a
//!   direct SMTP client and the core's write path in the same run (issue 5).
//! - `cargo xtask bench cron [--jobs N]`: the lateness of 10,000 http cron
//!   jobs all due in the same minute, at a local sink (p50/p99/max).
//! - `cargo xtask bench queues [--messages N] [--connections N]`: messages per
//!   second end to end through the queues plugin, with p50/p99 of send,
//!   receive and ack (issue 19).
//! - `cargo xtask bench errors [--events N] [--connections N]`: Sentry
//!   events per second through the error tracking plugin's envelope
//!   endpoint, with p50/p99, checked against the issues' counts (issue 36).
//! - `cargo xtask bench webhooks [--events N] [--connections N]`: webhook
//!   deliveries per second to a local sink, end to end from `POST
//!   /projects`, against a direct send from tokio in the same run (issue 36).
//! - `cargo xtask bench otel [--spans N] [--rounds N]`: OTLP spans per
//!   second from the Python exporter, against the same exporter sending to
//!   a null receiver in the same run (issue 36).
//! - `cargo xtask bench status-pages [--seconds N] [--connections N]`: a
//!   public status page's requests per second (HTML, summary.json, 304s),
//!   with p50/p99 (issue 36).
//! - `cargo xtask bench workflows [--runs N] [--steps N] [--workers N]`:
//!   completed steps per second through the workflows plugin with 32
//!   workers, with p50/p99 and 409 counts of claim and complete (issue 19).
//! - `cargo xtask bench volumes`: write and fsync inside a Linux replica on
//!   its volume against the host's disk, and backup and restore of a 1 GB
//!   volume against a plain copy (issue 31).
//! - `cargo xtask bench edge [--seconds N] [--connections N] [--rounds N]`:
//!   HTTPS through the apps edge against nginx terminating TLS in front of
//!   the same replicas (kept-alive and new connections apart), an app with
//!   10 rules and the CDN (all misses) against one with neither, a CDN
//!   hit against a miss, the firewall against no filter, and certificate
//!   issuance against pebble, verify to first HTTPS answer, p50 (issue 30).
//!   Each scenario's req/s in each round and the ratio's median follow
//!   its table.

mod apps_bench;
mod cache_bench;
mod checks_bench;
mod cron_bench;
mod database_backups_bench;
mod databases_bench;
mod edge_acme;
mod edge_bench;
mod edge_peer;
mod email_bench;
mod errors_bench;
mod flags_bench;
mod harness;
#[cfg(feature = "store-benches")]
mod ingest_bench;
mod load;
mod manifest_bench;
#[cfg(feature = "store-benches")]
mod metrics_bench;
mod old_pooler;
mod otel_bench;
mod postgres_bins;
mod queues_bench;
mod server;
mod setup;
mod status_pages_bench;
mod tls_load;
mod volumes_bench;
mod webhooks_bench;
mod workflows_bench;

use anyhow::{Context, bail};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["bench", "core", rest @ ..] => {
            let opts = load::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(bench_core(opts))
        }
        ["bench", "flags", rest @ ..] => {
            let opts = load::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(flags_bench::run(opts))
        }
        ["bench", "checks", rest @ ..] => {
            let opts = checks_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(checks_bench::run(opts))
        }
        ["bench", "cron", rest @ ..] => {
            let opts = cron_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(cron_bench::run(opts))
        }
        ["bench", "webhooks", rest @ ..] => {
            let opts = webhooks_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(webhooks_bench::run(opts))
        }
        ["bench", "otel", rest @ ..] => {
            let opts = otel_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(otel_bench::run(opts))
        }
        ["bench", "status-pages", rest @ ..] => {
            let opts = status_pages_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(status_pages_bench::run(opts))
        }
        ["bench", "errors", rest @ ..] => {
            let opts = errors_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(errors_bench::run(opts))
        }
        ["bench", "queues", rest @ ..] => {
            let opts = queues_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(queues_bench::run(opts))
        }
        ["bench", "workflows", rest @ ..] => {
            let opts = workflows_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(workflows_bench::run(opts))
        }
        ["bench", "email", rest @ ..] => {
            let opts = email_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(email_bench::run(opts))
        }
        ["bench", "manifest", rest @ ..] => {
            let opts = manifest_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(manifest_bench::run(opts))
        }
        ["bench", "apps", rest @ ..] => {
            let opts = apps_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(apps_bench::run(opts))
        }
        ["bench", "volumes"] => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .context("starting tokio")?
            .block_on(volumes_bench::run()),
        ["bench", "edge", rest @ ..] => {
            let mut opts = load::Options::parse(rest)?;
            if !rest.contains(&"--seconds") {
                opts.seconds = 12;
            }
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(edge_bench::run(opts))
        }
        ["bench", "cache", rest @ ..] => {
            let opts = cache_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(cache_bench::run(opts))
        }
        ["bench", "database-backups", rest @ ..] => {
            let opts = database_backups_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(database_backups_bench::run(opts))
        }
        ["bench", "databases", rest @ ..] => {
            let opts = databases_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(databases_bench::run(opts))
        }
        #[cfg(feature = "store-benches")]
        ["bench", "metrics", rest @ ..] => {
            let opts = metrics_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(metrics_bench::run(opts))
        }
        #[cfg(feature = "store-benches")]
        ["bench", "ingest", rest @ ..] => {
            let opts = ingest_bench::Options::parse(rest)?;
            tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .context("starting tokio")?
                .block_on(ingest_bench::run(opts))
        }
        #[cfg(not(feature = "store-benches"))]
        ["bench", "metrics" | "ingest", ..] => with_store_benches(&args),
        ["run", rest @ ..] => setup::run_server(rest),
        ["test", rest @ ..] => setup::test(rest),
        ["install", "postgres"] => postgres_bins::ensure(false),
        _ => bail!(
            "usage: cargo xtask run [serve flags] | test [cargo test flags] | install postgres | bench core|flags [--seconds N] [--connections N] [--rounds N] | bench checks [--checks N] [--seconds N] | bench email [--messages N] [--connections N] | bench apps [--seconds N] [--connections N] [--rounds N] [--deploys N] | bench volumes | bench edge [--seconds N] [--connections N] [--rounds N] | bench cache [--requests N] [--clients N] [--creations N] [--failovers N] | bench cron [--jobs N] | bench queues [--messages N] [--connections N] | bench errors [--events N] [--connections N] | bench webhooks [--events N] [--connections N] | bench otel [--spans N] [--rounds N] | bench status-pages [--seconds N] [--connections N] | bench workflows [--runs N] [--steps N] [--workers N] | bench databases [--creations N] [--seconds N] [--rounds N] [--clients N] [--failovers N] | bench database-backups [--size-mib N] [--small-mib N] [--wal-mib N] [--rounds N] [--branches N] | bench manifest [--rounds N] | bench metrics [--resources N] [--days N] [--requests N] | bench ingest [--resources N] [--minutes N] [--interval-ms N]"
        ),
    }
}

async fn bench_core(opts: load::Options) -> anyhow::Result<()> {
    let server = server::Server::start_release().await?;
    let token = server.token.clone();
    let base = server.base.clone();
    println!(
        "core API benchmark: {} connections, {} s per scenario in {} alternating rounds, SQLite, release build\n",
        opts.connections, opts.seconds, opts.rounds
    );
    let scenarios: Vec<(&str, load::Scenario)> = vec![
        (
            "GET /health (static, no auth)",
            load::Scenario::get(&base, "/api/v1/health", None),
        ),
        (
            "GET /me (authenticated)",
            load::Scenario::get(&base, "/api/v1/me", Some(&token)),
        ),
        (
            "POST /projects, fresh Idempotency-Key",
            load::Scenario::post_projects(&base, &token, load::Keys::Fresh),
        ),
        (
            "POST /projects, replayed key",
            load::Scenario::post_projects(&base, &token, load::Keys::Replay),
        ),
    ];
    load::run_table(&server, scenarios, &opts, "static").await?;
    println!("\ntargets: GET /me >= 60% of static; fresh idempotent POST >= 3000 req/s");
    drop(server);
    Ok(())
}

/// Runs xtask again with the `store-benches` feature, which the benches
/// that write the series store directly need.
#[cfg(not(feature = "store-benches"))]
fn with_store_benches(args: &[String]) -> anyhow::Result<()> {
    let status = std::process::Command::new(std::env::var("CARGO").unwrap_or("cargo".into()))
        .args([
            "run",
            "--quiet",
            "--package",
            "xtask",
            "--features",
            "store-benches",
            "--",
        ])
        .args(args)
        .status()
        .context("running xtask with the store-benches feature")?;
    if !status.success() {
        bail!("xtask bench exited with {status}");
    }
    Ok(())
}
