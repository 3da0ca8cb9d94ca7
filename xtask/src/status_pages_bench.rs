//! `cargo xtask bench status-pages [--seconds N] [--connections N]`: a
//! public status page served to anonymous visitors (issue 36; the target
//! is 2,000 requests per second): a page of 8 components (two with a day
//! of outage in their 90-day bars) and an open incident, fetched as HTML
//! and as `summary.json` from concurrent keep-alive connections for the
//! given seconds each, with p50 and p99; then the same with
//! `If-None-Match` (304s). SQLite; release build unless
//! `BENCH_PROFILE=debug`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::bail;
use hyper::Method;
use serde_json::json;

use crate::harness::{Api, Samples, call, parse_flags, print_samples};
use crate::server::{Server, debug_profile};

pub struct Options {
    pub seconds: u64,
    pub connections: usize,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options {
            seconds: 10,
            connections: 32,
        };
        parse_flags(args, "--seconds N, --connections N", |flag, value| {
            match flag {
                "--seconds" => opts.seconds = value.parse()?,
                "--connections" => opts.connections = value.parse()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        if opts.connections == 0 || opts.seconds == 0 {
            bail!("--seconds and --connections must be at least 1");
        }
        Ok(opts)
    }
}

/// Fetches `url` from `connections` tasks for `seconds`; the samples.
async fn hammer(api: &Api, url: &str, etag: Option<&str>, opts: &Options) -> Samples {
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..opts.connections {
        let (client, url, stop) = (api.client.clone(), url.to_owned(), stop.clone());
        let etag = etag.map(str::to_owned);
        tasks.push(tokio::spawn(async move {
            let mut s = Samples::default();
            while !stop.load(Ordering::Relaxed) {
                let at = Instant::now();
                let headers: Vec<(&str, &str)> = etag
                    .as_deref()
                    .map(|e| vec![("if-none-match", e)])
                    .unwrap_or_default();
                let r = call(&client, Method::GET, &url, &headers, None).await;
                s.latencies.push(at.elapsed());
                match r {
                    Ok((status, _)) if status.as_u16() == 200 => {}
                    Ok((status, _)) if status.as_u16() == 304 => s.empty += 1,
                    _ => s.errors += 1,
                }
            }
            s
        }));
    }
    tokio::time::sleep(Duration::from_secs(opts.seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let mut samples = Samples::default();
    for task in tasks {
        if let Ok(s) = task.await {
            samples.merge(s);
        }
    }
    samples
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let server = Server::start_release().await?;
    let api = Api::new(&server);
    let put = call(
        &api.client,
        Method::PUT,
        &format!("{}/status-pages/page", api.base),
        &[
            ("authorization", &format!("Bearer {}", api.token)),
            ("content-type", "application/json"),
        ],
        Some(
            json!({"name": "Bench", "slug": "bench", "description": "The bench's page"})
                .to_string(),
        ),
    )
    .await?;
    if put.0.as_u16() != 201 {
        bail!("creating the page answered {}", put.0);
    }
    let mut ids = Vec::new();
    for i in 0..8 {
        let (status, c) = api
            .post(
                "/status-pages/components",
                &json!({"name": format!("Service {i}"), "position": i}),
            )
            .await?;
        if status != 201 {
            bail!("creating a component answered {status}: {c}");
        }
        ids.push(c["id"].as_str().unwrap_or_default().to_owned());
    }
    let (status, body) = api
        .post(
            "/status-pages/incidents",
            &json!({"name": "Elevated errors", "body": "We are looking into it.", "impact": "minor",
                    "components": [{"id": ids[0], "status": "partial_outage"}, {"id": ids[1], "status": "major_outage"}]}),
        )
        .await?;
    if status != 201 {
        bail!("creating the incident answered {status}: {body}");
    }
    let page = format!("{}/status-pages/public/bench", api.base);
    let summary = format!("{page}/api/v2/summary.json");
    let (status, html) = call(&api.client, Method::GET, &page, &[], None).await?;
    if status.as_u16() != 200 {
        bail!("the page answered {status}");
    }
    let (_, _) = call(&api.client, Method::GET, &summary, &[], None).await?;
    println!(
        "status page benchmark: {} bytes of HTML (8 components, 90-day bars, an open incident), {} connections, {} s per row, SQLite, {} build\n",
        html.len(),
        opts.connections,
        opts.seconds,
        if debug_profile() { "debug" } else { "release" }
    );
    let html_samples = hammer(&api, &page, None, &opts).await;
    let json_samples = hammer(&api, &summary, None, &opts).await;
    // The page's ETag, for the conditional row.
    let etag = {
        let req =
            hyper::Request::get(&page).body(http_body_util::Full::new(bytes::Bytes::new()))?;
        let res = api.client.request(req).await?;
        res.headers()
            .get("etag")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let cond_samples = hammer(&api, &page, Some(&etag), &opts).await;
    print_samples(&[
        ("GET page (HTML)", &html_samples),
        ("GET summary.json", &json_samples),
        ("GET page, If-None-Match", &cond_samples),
    ]);
    println!();
    let rate = |s: &Samples| (s.latencies.len() as u64 - s.errors) as f64 / opts.seconds as f64;
    println!("{:<28} {:>12}", "row", "requests/s");
    for (name, s) in [
        ("HTML", &html_samples),
        ("summary.json", &json_samples),
        ("HTML, 304", &cond_samples),
    ] {
        println!("{name:<28} {:>12.0}", rate(s));
    }
    let html_rate = rate(&html_samples);
    println!(
        "\nthe HTML page at {html_rate:.0} requests/s: the 2,000/s target is {}",
        if html_rate >= 2000.0 {
            "met"
        } else {
            "NOT met"
        }
    );
    Ok(())
}
