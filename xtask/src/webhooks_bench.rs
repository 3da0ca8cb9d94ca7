//! `cargo xtask bench webhooks [--events N] [--connections N]`: webhook
//! deliveries per second to a local sink, end to end (issue 36; the
//! target is 70% of a direct send): `N` timeline events made through the
//! API (`POST /projects`, from concurrent connections) each delivered by
//! the webhooks plugin, signed, as a durable job, to a sink on loopback;
//! timed from the first event made to the last delivery received.
//! Against it, in the same run, the same number of signed POSTs of a
//! delivery's size sent straight from tokio to the same sink with the
//! same concurrency. SQLite; release build unless `BENCH_PROFILE=debug`.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::json;

use crate::harness::{Api, call, parse_flags};
use crate::server::{Server, debug_profile};

pub struct Options {
    pub events: u64,
    pub connections: usize,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options {
            events: 2_000,
            connections: 16,
        };
        parse_flags(args, "--events N, --connections N", |flag, value| {
            match flag {
                "--events" => opts.events = value.parse()?,
                "--connections" => opts.connections = value.parse()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        if opts.events == 0 || opts.connections == 0 {
            bail!("--events and --connections must be at least 1");
        }
        Ok(opts)
    }
}

/// A sink on loopback counting the POSTs to `/hook` and `/direct`.
struct Sink {
    addr: std::net::SocketAddr,
    hooks: Arc<AtomicU64>,
    direct: Arc<AtomicU64>,
}

impl Sink {
    async fn start() -> anyhow::Result<Sink> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let (hooks, direct) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
        let (h, d) = (hooks.clone(), direct.clone());
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (h, d) = (h.clone(), d.clone());
                tokio::spawn(async move {
                    let service =
                        hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                            let (h, d) = (h.clone(), d.clone());
                            async move {
                                use http_body_util::BodyExt;
                                let signed = req.headers().contains_key("webhook-signature");
                                let path = req.uri().path().to_owned();
                                let _ = req.into_body().collect().await;
                                if signed && path == "/hook" {
                                    h.fetch_add(1, Ordering::Relaxed);
                                } else if path == "/direct" {
                                    d.fetch_add(1, Ordering::Relaxed);
                                }
                                let mut res = Response::new(Full::new(Bytes::new()));
                                *res.status_mut() = hyper::StatusCode::NO_CONTENT;
                                Ok::<_, Infallible>(res)
                            }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Sink {
            addr,
            hooks,
            direct,
        })
    }
}

/// The direct send: `n` POSTs of `body` with Standard Webhooks headers
/// from `connections` tasks; seconds taken.
async fn direct(api: &Api, url: &str, body: &str, n: u64, connections: usize) -> f64 {
    let next = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..connections {
        let (client, next, url, body) = (
            api.client.clone(),
            next.clone(),
            url.to_owned(),
            body.to_owned(),
        );
        tasks.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < n {
                let id = format!("msg_{}", next.load(Ordering::Relaxed));
                let _ = call(
                    &client,
                    Method::POST,
                    &url,
                    &[
                        ("content-type", "application/json"),
                        ("webhook-id", &id),
                        ("webhook-timestamp", "1700000000"),
                        (
                            "webhook-signature",
                            "v1,c2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXJlc2lnbmF0dXI=",
                        ),
                    ],
                    Some(body.clone()),
                )
                .await;
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    started.elapsed().as_secs_f64()
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let sink = Sink::start().await?;
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("plugins.json");
    let plugins = json!({ "plugins": { "webhooks": {
        "grants": ["kv", "events", "log", "config", "clock", "cursors", "scheduler", "http", "secrets"],
        "outboundHosts": ["*"],
    } } });
    std::fs::write(&config, plugins.to_string())?;
    let config = config.to_string_lossy().into_owned();
    let server = Server::start_release_with(&[
        ("PLATEAU_EGRESS_ALLOW", "127.0.0.0/8"),
        ("PLATEAU_PLUGINS_CONFIG", &config),
    ])
    .await?;
    let owner = server.create_org("hooks", "pro").await?;
    let api = Api {
        token: owner,
        ..Api::new(&server)
    };
    let (status, endpoint) = api
        .post(
            "/webhooks",
            &json!({"url": format!("http://{}/hook", sink.addr), "eventTypes": ["project.created"]}),
        )
        .await?;
    if status != 201 {
        bail!("creating the endpoint answered {status}: {endpoint}");
    }
    // A delivery's body, for the direct send.
    let sample = json!({"type": "project.created", "timestamp": "2026-11-27T09:00:00Z",
        "data": {"id": "prj_01jbenchbenchbenchbenchbench", "name": "bench-0", "organizationId": "org_bench"}})
    .to_string();
    println!(
        "webhooks benchmark: {} events, {} connections, a sink on loopback, SQLite, {} build\n",
        opts.events,
        opts.connections,
        if debug_profile() { "debug" } else { "release" }
    );
    let direct_url = format!("http://{}/direct", sink.addr);
    let direct_secs = direct(&api, &direct_url, &sample, opts.events, opts.connections).await;
    let direct_got = sink.direct.load(Ordering::Relaxed);

    let next = Arc::new(AtomicU64::new(0));
    let made = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..opts.connections {
        let (api, next, made, total) = (api.clone(), next.clone(), made.clone(), opts.events);
        tasks.push(tokio::spawn(async move {
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    break;
                }
                if let Ok((201, _)) = api
                    .post("/projects", &json!({"name": format!("bench-{n}")}))
                    .await
                {
                    made.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    let produced_secs = started.elapsed().as_secs_f64();
    let made = made.load(Ordering::Relaxed);
    // Deliveries still running: wait while they keep arriving.
    let (mut last, mut still) = (0, Instant::now());
    loop {
        let got = sink.hooks.load(Ordering::Relaxed);
        if got >= made {
            break;
        }
        if got != last {
            (last, still) = (got, Instant::now());
        } else if still.elapsed() > Duration::from_secs(60) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let e2e_secs = started.elapsed().as_secs_f64();
    let delivered = sink.hooks.load(Ordering::Relaxed);
    let direct_rate = direct_got as f64 / direct_secs;
    let e2e_rate = delivered as f64 / e2e_secs;
    println!(
        "{:<44} {:>9} {:>9} {:>10}",
        "path", "requests", "seconds", "per second"
    );
    println!(
        "{:<44} {:>9} {:>9.2} {:>10.0}",
        "direct send from tokio to the sink", direct_got, direct_secs, direct_rate
    );
    println!(
        "{:<44} {:>9} {:>9.2} {:>10.0}",
        "events made (POST /projects)",
        made,
        produced_secs,
        made as f64 / produced_secs
    );
    println!(
        "{:<44} {:>9} {:>9.2} {:>10.0}",
        "webhook deliveries received, end to end", delivered, e2e_secs, e2e_rate
    );
    println!(
        "\nend to end at {:.0}% of the direct send (target 70%): {}; {} of {made} events delivered",
        100.0 * e2e_rate / direct_rate,
        if e2e_rate >= 0.7 * direct_rate {
            "met"
        } else {
            "NOT met"
        },
        delivered
    );
    Ok(())
}
