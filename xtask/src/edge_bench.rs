//! `cargo xtask bench edge`: the edge figures of issue 30, each against
//! its peer in the same run, on a Linux app (busybox httpd in runc, its
//! page dated 2020 so that a shared cache may keep it by heuristic).
//!
//! 1. HTTPS through the edge (rustls, the wildcard certificate of the
//!    apps domain) against nginx (Debian's) terminating TLS in front of
//!    the same replicas: kept-alive connections, and a new connection
//!    (a full handshake, no resumption) per request. Target: the edge at
//!    least 90% of nginx's requests per second.
//! 2. The same app with 10 rules and the CDN on (every request a miss: a
//!    query of its own) against an app with neither. Target: 90%.
//! 3. A CDN hit against a miss. Target: at least 3 times the req/s.
//! 4. The same app with the firewall (50 rules and the managed rule set,
//!    blocking; no request matches) against no filter. Target: 70%; and
//!    the firewall's CPU per request as the edge counts it
//!    (`GET /apps/{id}/filters`).
//! 5. Certificate issuance against pebble, from verify to the first HTTPS
//!    answer, p50 (`edge_acme.rs`).
//!
//! The "server us/req" column is the CPU time of `plateau agent` (the
//! edge and the replicas) per request. The machine's load average is
//! printed with the figures: they are only worth the quiet it had.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use plateau_testkit::Client;
use plateau_testkit::oci::{ImagePusher, busybox_layer};
use serde_json::json;

use crate::apps_bench::{deploy_app, replica_addresses};
use crate::edge_acme::Acme;
use crate::edge_peer::{Nginx, certificate};
use crate::load::{self, Scenario};
use crate::server::Server;
use crate::tls_load::TlsLoad;

pub async fn run(opts: load::Options) -> anyhow::Result<()> {
    let scratch = tempfile::tempdir()?;
    let (ca, cert, key) = certificate(scratch.path())?;
    let (http_port, tls_port) = (plateau_testkit::free_port(), plateau_testkit::free_port());
    let acme = Acme::start(http_port, tls_port).await;
    let mut env = vec![
        ("PLATEAU_EDGE_TLS_LISTEN", format!("127.0.0.1:{tls_port}")),
        ("PLATEAU_EDGE_TLS_CERT", cert.clone()),
        ("PLATEAU_EDGE_TLS_KEY", key.clone()),
    ];
    env.extend(acme.env());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = Server::start_release_with(&env).await?;
    let token = server.create_org("edge-bench", "pro").await?;
    let api = Client::new(&server.base).with_token(&token);
    let org = api.get("/me").await.json()["organization"]["id"]
        .as_str()
        .context("/me names no organisation")?
        .to_owned();
    let config = serde_json::to_vec(&json!({
        "architecture": "amd64",
        "os": "linux",
        "config": { "Cmd": ["/bin/sh", "-c",
            "mkdir /tmp/www && echo hello > /tmp/www/index.html \
             && touch -d '2020-01-01 00:00:00' /tmp/www/index.html \
             && exec httpd -f -p $PORT -h /tmp/www"] },
        "rootfs": { "type": "layers", "diff_ids": [] },
    }))?;
    let pusher = ImagePusher::new(&server.base, &token);
    let image = pusher
        .push_image(
            &format!("{org}/web"),
            "v1",
            &config,
            &busybox_layer(),
            false,
        )
        .await;

    // 1. HTTPS: the edge against nginx in front of the same replicas.
    let plain = deploy_app(&api, "plain", &image).await?;
    let replicas = replica_addresses(server.data_dir())?;
    let nginx_port = plateau_testkit::free_port();
    let nginx = Nginx::start(scratch.path(), nginx_port, &cert, &key, &replicas).await?;
    let tls = TlsLoad::new(&ca)?;
    println!(
        "load average (1, 5, 15 min) at the start: {}",
        load_average()
    );
    println!(
        "HTTPS, GET / of a busybox httpd app ({} replicas): {} connections, {} s in {} rounds",
        replicas.len(),
        opts.connections,
        opts.seconds,
        opts.rounds
    );
    let at = |port: u16| SocketAddr::from(([127, 0, 0, 1], port));
    let rows = tls
        .rounds(
            &[
                ("nginx, kept alive (peer)", at(nginx_port), true),
                ("edge, kept alive", at(tls_port), true),
                ("nginx, new connections (peer)", at(nginx_port), false),
                ("edge, new connections", at(tls_port), false),
            ],
            &plain.host,
            &opts,
        )
        .await?;
    drop(nginx);

    // 2. 10 rules and the CDN (all misses) against neither.
    let edged = deploy_app(&api, "edged", &image).await?;
    for i in 0..8 {
        rule(&api, &edged.id, json!({ "type": "redirect", "source": format!("/old{i}/:rest*"), "destination": "/new/:rest*" })).await?;
    }
    rule(
        &api,
        &edged.id,
        json!({ "type": "rewrite", "source": "/app/:rest*", "destination": "/index.html" }),
    )
    .await?;
    rule(&api, &edged.id, json!({ "type": "header", "source": "/:any*", "headerName": "X-Frame-Options", "headerValue": "DENY" })).await?;
    for (path, body) in [
        ("scale-out", json!({ "enabled": true })),
        ("cdn", json!({ "enabled": true })),
    ] {
        let r = api.put(&format!("/apps/{}/{path}", edged.id), body).await;
        if r.status != 200 {
            bail!("PUT {path}: {} {}", r.status, r.text());
        }
    }
    let edge = server.edge.clone();
    let agent = server.agent_pid();
    let on = |host: &str| Scenario::get(&edge, "/", None).with_host(host);
    println!("\nHTTP through the edge, {} connections", opts.connections);
    let extras = load::run_rounds(
        vec![
            ("neither (peer)", on(&plain.host).unique(), agent),
            (
                "10 rules + CDN, all misses",
                on(&edged.host).unique(),
                agent,
            ),
        ],
        &opts,
    )
    .await?;

    // 3. A hit against a miss.
    let cached = x_cache(&edge, &edged.host).await?;
    if cached != "HIT" {
        bail!("GET / of the edged app is a {cached:?}, not a HIT");
    }
    let hits = load::run_rounds(
        vec![
            ("CDN miss (peer)", on(&edged.host).unique(), agent),
            ("CDN hit", on(&edged.host), agent),
        ],
        &opts,
    )
    .await?;
    let stats = api.get(&format!("/apps/{}/cdn", edged.id)).await.json();
    println!("\nthe edged app's CDN: {}", stats["stats"]);

    // 4. The firewall against no filter, in an organisation of its own
    // (the managed rule set is switched on for a whole organisation).
    let waf = firewalled(&server, &config).await?;
    // The agent follows the rules within a second or so: wait until the
    // firewall blocks what a rule names.
    let mut blocked = 0;
    for _ in 0..300 {
        blocked = status_of(&edge, &waf.1, "/admin0").await?;
        if blocked == 403 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if blocked != 403 {
        bail!("GET /admin0 of the firewalled app answered {blocked}, not 403");
    }
    println!("\nthe firewall (50 rules + the managed set, blocking; nothing matches)");
    let walled = load::run_rounds(
        vec![
            ("no filter (peer)", on(&plain.host).unique(), agent),
            ("WAF: 50 rules + managed set", on(&waf.1).unique(), agent),
        ],
        &opts,
    )
    .await?;
    let filters = waf.0.get(&format!("/apps/{}/filters", waf.2)).await.json();
    let firewall = &filters["firewall"];
    println!(
        "the firewall's CPU per request at the edge: {} µs ({} runs, {} failures)",
        firewall["cpuMicrosPerRequest"], firewall["runs"], firewall["failures"]
    );
    println!(
        "\ntargets: HTTPS edge/nginx kept alive {:.0}%, new connections {:.0}% (at least 90%); \
         rules+CDN/neither {:.0}% (at least 90%); hit/miss {:.1}x (at least 3x); \
         WAF/no filter {:.0}% (at least 70%)",
        100.0 * rows[1] / rows[0],
        100.0 * rows[3] / rows[2],
        100.0 * extras[1].rps / extras[0].rps,
        hits[1].rps / hits[0].rps,
        100.0 * walled[1].rps / walled[0].rps
    );
    println!("load average (1, 5, 15 min) at the end: {}", load_average());

    // 5. Certificate issuance, after the load so that it weighs on none.
    acme.issue(&api, &plain.id, scratch.path()).await?;
    Ok(())
}

/// The machine's load average, as `/proc/loadavg` tells it.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// An organisation of its own with the managed rule set on (blocking) and
/// an app of the bench's image with 50 rules of its own that no request of
/// the bench matches: its API client, the app's host and id.
async fn firewalled(server: &Server, config: &[u8]) -> anyhow::Result<(Client, String, String)> {
    let token = server.create_org("edge-bench-waf", "pro").await?;
    let api = Client::new(&server.base).with_token(&token);
    let org = api.get("/me").await.json()["organization"]["id"]
        .as_str()
        .context("/me names no organisation")?
        .to_owned();
    let image = ImagePusher::new(&server.base, &token)
        .push_image(&format!("{org}/web"), "v1", config, &busybox_layer(), false)
        .await;
    let app = deploy_app(&api, "walled", &image).await?;
    for i in 0..50 {
        let expression = match i % 5 {
            0 => format!(r#"http.request.uri.path eq "/admin{i}""#),
            1 => format!(r#"lower(http.user_agent) contains "badbot{i}""#),
            2 => format!("ip.src in {{203.0.113.{i}/32}}"),
            3 => format!(r#"http.request.uri.path matches "^/wp-content{i}/.*[.]php$""#),
            _ => format!(
                r#"http.request.method eq "TRACE" and http.request.uri.path contains "/x{i}""#
            ),
        };
        let body =
            json!({ "expression": expression, "action": "block", "priority": i, "appId": app.id });
        let r = api.post("/waf/rules", body).await;
        if r.status != 201 {
            bail!("adding firewall rule {i}: {} {}", r.status, r.text());
        }
    }
    let r = api
        .put(
            "/waf/managed",
            json!({ "enabled": true, "action": "block" }),
        )
        .await;
    if r.status != 200 {
        bail!("switching the managed rules on: {} {}", r.status, r.text());
    }
    Ok((api, app.host, app.id))
}

async fn rule(api: &Client, app: &str, body: serde_json::Value) -> anyhow::Result<()> {
    let r = api.post(&format!("/apps/{app}/rules"), body).await;
    if r.status != 201 {
        bail!("adding a rule: {} {}", r.status, r.text());
    }
    Ok(())
}

/// The status of `GET path` at the edge.
async fn status_of(edge: &str, host: &str, path: &str) -> anyhow::Result<u16> {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Empty<Bytes>>();
    let req = hyper::Request::get(format!("{edge}{path}"))
        .header("host", host)
        .body(Empty::new())?;
    let response = client.request(req).await?;
    let status = response.status().as_u16();
    let _ = response.into_body().collect().await;
    Ok(status)
}

/// The `X-Cache` of `GET /` at the edge after a first one.
async fn x_cache(edge: &str, host: &str) -> anyhow::Result<String> {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build_http::<Empty<Bytes>>();
    let mut seen = String::new();
    for _ in 0..2 {
        let req = hyper::Request::get(format!("{edge}/"))
            .header("host", host)
            .body(Empty::new())?;
        let response = client.request(req).await?;
        seen = response
            .headers()
            .get("x-cache")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let _ = response.into_body().collect().await;
    }
    Ok(seen)
}
