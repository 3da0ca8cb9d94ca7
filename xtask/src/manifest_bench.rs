//! `cargo xtask bench manifest [--rounds N]`: the manifest figures of
//! issue 34. A stack of 5 apps (the apps tests' `wasi:http` component), 2
//! databases and 1 cache, every app's environment referring to a database
//! and the cache (and one app to another's url), applied from empty:
//! the time of the apply (it waits for the databases and the cache to run)
//! and until every app's deployment is live. Then the same manifest applied
//! again `--rounds` times (10 by default): p50 and p99 of the re-apply,
//! each checked to have changed nothing (`changed: false`, the same
//! deployments), and what the re-applies touched printed: the resources
//! whose `updatedAt` moved and the events recorded meanwhile.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use plateau_testkit::Client;
use serde_json::{Value, json};

use crate::apps_bench::push_component;
use crate::harness::percentiles;
use crate::server::Server;

pub struct Options {
    pub rounds: usize,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut rounds = 10;
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            match *flag {
                "--rounds" => rounds = it.next().context("--rounds needs a value")?.parse()?,
                other => bail!("unknown flag {other}"),
            }
        }
        Ok(Options { rounds })
    }
}

/// The benchmark's stack, deploying `image`.
fn stack(image: &str) -> Value {
    let apps: Vec<Value> = (0..5)
        .map(|i| {
            let db = if i < 3 { "main" } else { "events" };
            let mut env = json!({
                "DATABASE_URL": format!("${{{{ databases.{db}.uri }}}}"),
                "REDIS_URL": "${{ redis.cache.uri }}",
                "APP_INDEX": i.to_string(),
            });
            if i > 0 {
                env["API_URL"] = json!("${{ apps.app-0.url }}");
            }
            json!({ "name": format!("app-{i}"), "image": image, "env": env })
        })
        .collect();
    json!({
        "project": "bench",
        "databases": [{ "name": "main" }, { "name": "events" }],
        "redis": [{ "name": "cache", "replicas": 0 }],
        "apps": apps,
    })
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let server = Server::start_release().await?;
    if crate::server::debug_profile() {
        println!("debug build: the figures are not the product's");
    }
    let token = server.create_org("manifest-bench", "pro").await?;
    let api = Client::new(&server.base).with_token(&token);
    let org = api.get("/me").await.json()["organization"]["id"]
        .as_str()
        .context("/me names no organisation")?
        .to_owned();
    let scratch = tempfile::tempdir()?;
    let hello = scratch.path().join("hello.wasm");
    std::fs::write(&hello, plateau_plugin_artifacts::apps::HELLO_APP)?;
    let image = format!(
        "{}/{org}/hello:v1",
        server.base.trim_start_matches("http://")
    );
    push_component(&server, &token, &hello, &image).await?;
    let manifest = stack(&image);

    let started = Instant::now();
    let r = api.post("/manifest", manifest.clone()).await;
    if r.status != 200 {
        bail!("apply from empty: {} {}", r.status, r.text());
    }
    let applied_in = started.elapsed();
    let applied = r.json();
    let apps: Vec<(String, String)> = applied["items"]
        .as_array()
        .context("no items")?
        .iter()
        .filter(|i| i["kind"] == "app")
        .map(|i| {
            (
                i["id"].as_str().unwrap_or_default().to_owned(),
                i["deploymentId"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    for (app, deployment) in &apps {
        wait_live(&api, app, deployment).await?;
    }
    let live_in = started.elapsed();
    println!(
        "apply from empty (5 apps, 2 databases, 1 cache): {:.2} s; every app live after {:.2} s",
        applied_in.as_secs_f64(),
        live_in.as_secs_f64()
    );

    println!("apply from empty: {}", applied["summary"]);
    let before = deployments(&api, &apps).await;
    let stamps = updated_stamps(&api).await;
    let seen = event_ids(&api).await;
    let mut summary = Value::Null;
    let mut samples = Vec::with_capacity(opts.rounds);
    for _ in 0..opts.rounds {
        let started = Instant::now();
        let r = api.post("/manifest", manifest.clone()).await;
        samples.push(started.elapsed().as_secs_f64() * 1000.0);
        if r.status != 200 || r.json()["changed"] != false {
            bail!("a re-apply changed something: {} {}", r.status, r.text());
        }
        summary = r.json()["summary"].clone();
    }
    // What the re-applies touched: resources whose updatedAt moved, and
    // the events recorded meanwhile (by type; the data plane's own, such
    // as a status observed, would show here too).
    let moved: Vec<String> = updated_stamps(&api)
        .await
        .into_iter()
        .filter(|s| !stamps.contains(s))
        .map(|(id, _)| id)
        .collect();
    let mut new_events: Vec<String> = Vec::new();
    for (id, kind) in event_ids(&api).await {
        if !seen.iter().any(|(s, _)| *s == id) {
            new_events.push(kind);
        }
    }
    println!(
        "re-apply touched: {} resources with a new updatedAt {moved:?}; {} events {new_events:?}; summary {summary}",
        moved.len(),
        new_events.len()
    );
    if deployments(&api, &apps).await != before {
        bail!("a re-apply made a deployment");
    }
    let (p50, p99) = percentiles(&samples);
    println!(
        "re-apply unchanged, {} rounds: p50 {p50:.1} ms, p99 {p99:.1} ms; no update, no deployment",
        opts.rounds
    );
    Ok(())
}

/// Every app, database and cache of the organisation: `(id, updatedAt)`.
async fn updated_stamps(api: &Client) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for path in ["/apps", "/databases", "/caches"] {
        let page = api.get(&format!("{path}?limit=200")).await.json();
        for item in page["items"].as_array().into_iter().flatten() {
            out.push((
                item["id"].as_str().unwrap_or_default().to_owned(),
                item["updatedAt"].to_string(),
            ));
        }
    }
    out
}

/// The organisation's latest events: `(id, type)`.
async fn event_ids(api: &Client) -> Vec<(String, String)> {
    let page = api.get("/events?limit=200").await.json();
    page["items"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            (
                e["id"].as_str().unwrap_or_default().to_owned(),
                e["type"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// Every app's deployment ids, newest first.
async fn deployments(api: &Client, apps: &[(String, String)]) -> Vec<Value> {
    let mut out = Vec::new();
    for (app, _) in apps {
        out.push(api.get(&format!("/apps/{app}/deployments")).await.json()["items"].clone());
    }
    out
}

async fn wait_live(api: &Client, app: &str, deployment: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let page = api.get(&format!("/apps/{app}/deployments")).await.json();
        let status = page["items"]
            .as_array()
            .and_then(|items| items.iter().find(|d| d["id"] == deployment))
            .and_then(|d| d["status"].as_str().map(str::to_owned))
            .unwrap_or_default();
        match status.as_str() {
            "live" => return Ok(()),
            "failed" => bail!("deployment {deployment} of {app} failed: {page}"),
            _ if Instant::now() > deadline => bail!("deployment {deployment} of {app} is {status}"),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}
