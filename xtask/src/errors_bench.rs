//! `cargo xtask bench errors`: Sentry events per second through the error
//! tracking plugin's envelope endpoint (issue 36), as the SDKs send them
//! (an envelope with one event of about 3 KiB: an exception with 12 frames,
//! 10 breadcrumbs, a user), spread over 20 issues and 200 users, from
//! concurrent keep-alive connections; with p50 and p99, and a check that
//! the issues' counts add up to the events answered 200. SQLite, release
//! build. Bodies go plain: the SDKs' gzip costs the plugin one inflate.
//! The server's organisation is on the free plan, whose projects take
//! 10,000 events a day: the default run sends 8,000.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use anyhow::bail;
use hyper::Method;
use serde_json::{Value, json};

use crate::harness::{Api, Samples, call, parse_flags, print_samples};
use crate::server::Server;

pub struct Options {
    pub events: u64,
    pub connections: usize,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options {
            events: 8_000,
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
        if opts.connections == 0 {
            bail!("--connections must be at least 1");
        }
        Ok(opts)
    }
}

/// The `n`th event's envelope: issue `n % 20`, user `n % 200`.
fn envelope(n: u64) -> String {
    let issue = n % 20;
    let frames: Vec<Value> = (0..12)
        .map(|f| {
            json!({
                "filename": format!("app/module_{f}.py"), "module": format!("app.module_{f}"),
                "function": format!("step_{issue}_{f}"), "lineno": 10 + f, "in_app": f > 3,
                "context_line": "    return handler(request, *args, **kwargs)",
                "pre_context": ["def wrapped(request):", "    try:"], "post_context": ["    except Exception:"],
            })
        })
        .collect();
    let crumbs: Vec<Value> = (0..10)
        .map(|b| json!({"category": "http", "message": format!("GET /items/{b}"), "level": "info", "timestamp": 1_700_000_000 + b}))
        .collect();
    let event = json!({
        "event_id": format!("{n:032x}"), "platform": "python", "level": "error",
        "release": "bench@1.0", "environment": "bench", "timestamp": 1_700_000_000.5,
        "user": {"id": format!("user-{}", n % 200)},
        "exception": {"values": [{"type": "KeyError", "value": format!("'item {n}'"),
            "stacktrace": {"frames": frames}}]},
        "breadcrumbs": {"values": crumbs},
        "sdk": {"name": "sentry.python", "version": "2.0.0"},
    })
    .to_string();
    format!(
        "{{\"event_id\":\"{n:032x}\"}}\n{{\"type\":\"event\",\"length\":{}}}\n{event}\n",
        event.len()
    )
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let server = Server::start_release().await?;
    let api = Api::new(&server);
    let (status, project) = api
        .post("/errors/projects", &json!({ "name": "bench" }))
        .await?;
    if status != 201 {
        bail!("creating the project answered {status}: {project}");
    }
    let id = project["id"].as_str().unwrap_or_default().to_owned();
    let key = project["publicKey"].as_str().unwrap_or_default().to_owned();
    let url = Arc::new(format!(
        "{}/errors/ingest/api/{id}/envelope/?sentry_key={key}",
        api.base
    ));
    println!(
        "errors benchmark: {} events (20 issues, 200 users, ~{} bytes each), {} connections, SQLite, release build\n",
        opts.events,
        envelope(0).len(),
        opts.connections
    );
    let next = Arc::new(AtomicU64::new(0));
    let accepted = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..opts.connections {
        let (api, next, accepted, url) = (api.clone(), next.clone(), accepted.clone(), url.clone());
        let total = opts.events;
        tasks.push(tokio::spawn(async move {
            let mut s = Samples::default();
            loop {
                let n = next.fetch_add(1, Ordering::Relaxed);
                if n >= total {
                    break;
                }
                let at = Instant::now();
                let r = call(
                    &api.client,
                    Method::POST,
                    &url,
                    &[("content-type", "application/x-sentry-envelope")],
                    Some(envelope(n)),
                )
                .await;
                s.latencies.push(at.elapsed());
                match r {
                    Ok((status, _)) if status.as_u16() == 200 => {
                        accepted.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok((status, _)) if status.as_u16() == 409 => s.conflicts += 1,
                    _ => s.errors += 1,
                }
            }
            s
        }));
    }
    let mut samples = Samples::default();
    for task in tasks {
        samples.merge(task.await?);
    }
    let seconds = started.elapsed().as_secs_f64();
    let accepted = accepted.load(Ordering::Relaxed);
    print_samples(&[("envelope (one event)", &samples)]);
    println!(
        "\n{accepted} of {} events answered 200 in {seconds:.2} s: {:.0} events/s",
        opts.events,
        accepted as f64 / seconds
    );
    let auth = format!("Bearer {}", api.token);
    let (status, body) = call(
        &api.client,
        Method::GET,
        &format!("{}/errors/projects/{id}/issues", api.base),
        &[("authorization", &auth)],
        None,
    )
    .await?;
    let issues: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let counted: u64 = issues["items"]
        .as_array()
        .map_or(0, |i| i.iter().filter_map(|i| i["count"].as_u64()).sum());
    println!(
        "issues: {} (listing answered {status}), their counts add up to {counted}: {}",
        issues["total"],
        if counted == accepted {
            "every accepted event counted once"
        } else {
            "MISMATCH"
        }
    );
    if counted != accepted {
        bail!("{accepted} events accepted but the issues count {counted}");
    }
    Ok(())
}
