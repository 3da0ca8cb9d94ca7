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

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use plateau_testkit::Client;
use plateau_testkit::oci::{ImagePusher, busybox_layer};
use serde_json::json;
use tokio::process::{Child, Command};

use crate::apps_bench::{deploy_app, replica_addresses};
use crate::load::{self, Scenario};
use crate::server::Server;
use crate::tls_load::TlsLoad;

pub async fn run(opts: load::Options) -> anyhow::Result<()> {
    let scratch = tempfile::tempdir()?;
    let (ca, cert, key) = certificate(scratch.path())?;
    let tls_port = plateau_testkit::free_port();
    let server = Server::start_release_with(&[
        ("PLATEAU_EDGE_TLS_LISTEN", &format!("127.0.0.1:{tls_port}")),
        ("PLATEAU_EDGE_TLS_CERT", &cert),
        ("PLATEAU_EDGE_TLS_KEY", &key),
    ])
    .await?;
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
    let on = |host: &str| Scenario::get(&edge, "/", None).with_host(host);
    println!("\nHTTP through the edge, {} connections", opts.connections);
    let extras = load::run_rounds(
        vec![
            ("neither (peer)", on(&plain.host).unique(), server.pid()),
            (
                "10 rules + CDN, all misses",
                on(&edged.host).unique(),
                server.pid(),
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
            ("CDN miss (peer)", on(&edged.host).unique(), server.pid()),
            ("CDN hit", on(&edged.host), server.pid()),
        ],
        &opts,
    )
    .await?;
    let stats = api.get(&format!("/apps/{}/cdn", edged.id)).await.json();
    println!("\nthe edged app's CDN: {}", stats["stats"]);
    println!(
        "\ntargets: HTTPS edge/nginx kept alive {:.0}%, new connections {:.0}% (at least 90%); \
         rules+CDN/neither {:.0}% (at least 90%); hit/miss {:.1}x (at least 3x)",
        100.0 * rows[1] / rows[0],
        100.0 * rows[3] / rows[2],
        100.0 * extras[1].rps / extras[0].rps,
        hits[1].rps / hits[0].rps
    );
    Ok(())
}

async fn rule(api: &Client, app: &str, body: serde_json::Value) -> anyhow::Result<()> {
    let r = api.post(&format!("/apps/{app}/rules"), body).await;
    if r.status != 201 {
        bail!("adding a rule: {} {}", r.status, r.text());
    }
    Ok(())
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

/// A certificate for `*.apps.localhost` signed by a CA of its own, by
/// openssl: the CA's PEM file (which clients trust), the certificate's and
/// its key's.
fn certificate(dir: &Path) -> anyhow::Result<(String, String, String)> {
    let path = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    std::fs::write(
        dir.join("leaf.ext"),
        "subjectAltName=DNS:*.apps.localhost\n",
    )?;
    let (ca, ca_key, csr) = (path("ca.pem"), path("ca.key"), path("leaf.csr"));
    let (cert, key, ext) = (path("cert.pem"), path("key.pem"), path("leaf.ext"));
    let steps: [Vec<&str>; 3] = [
        [
            &["req", "-x509"][..],
            &ec,
            &["-days", "1", "-subj", "/CN=edge bench CA"],
        ]
        .concat(),
        [&["req"][..], &ec, &["-subj", "/CN=*.apps.localhost"]].concat(),
        vec!["x509", "-req", "-in", csr.as_str(), "-CA", ca.as_str()]
            .into_iter()
            .chain(["-CAkey", ca_key.as_str(), "-CAcreateserial"])
            .collect(),
    ];
    let outputs: [Vec<&str>; 3] = [
        vec!["-keyout", ca_key.as_str(), "-out", ca.as_str()],
        vec!["-keyout", key.as_str(), "-out", csr.as_str()],
        vec![
            "-days",
            "1",
            "-extfile",
            ext.as_str(),
            "-out",
            cert.as_str(),
        ],
    ];
    for (step, output) in steps.iter().zip(&outputs) {
        let out = std::process::Command::new("openssl")
            .args(step)
            .args(output)
            .output()
            .context("running openssl")?;
        if !out.status.success() {
            bail!("openssl {step:?}: {}", String::from_utf8_lossy(&out.stderr));
        }
    }
    Ok((ca, cert, key))
}

/// nginx terminating TLS in front of `replicas`, until dropped.
struct Nginx(Child);

impl Drop for Nginx {
    /// Its master stops its workers on SIGTERM (a SIGKILL would leave them).
    fn drop(&mut self) {
        if let Some(pid) = self.0.id() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &pid.to_string()])
                .status();
        }
    }
}

impl Nginx {
    async fn start(
        dir: &Path,
        port: u16,
        cert: &str,
        key: &str,
        replicas: &[String],
    ) -> anyhow::Result<Nginx> {
        let dir = dir.join("nginx");
        std::fs::create_dir_all(&dir)?;
        let d = dir.display();
        let upstream: String = replicas
            .iter()
            .map(|r| format!("server {};", r.trim_start_matches("http://")))
            .collect();
        let conf = format!(
            "daemon off; worker_processes 2; pid {d}/nginx.pid; error_log {d}/error.log warn;
events {{ worker_connections 4096; }}
http {{
  access_log off;
  client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fastcgi;
  uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;
  upstream app {{ {upstream} }}
  server {{
    listen 127.0.0.1:{port} ssl;
    ssl_certificate {cert}; ssl_certificate_key {key};
    location / {{ proxy_pass http://app; proxy_http_version 1.1; proxy_set_header Host $host; }}
  }}
}}
"
        );
        let file = dir.join("nginx.conf");
        std::fs::write(&file, conf)?;
        let child = Command::new("nginx")
            .arg("-c")
            .arg(&file)
            .arg("-p")
            .arg(&dir)
            .kill_on_drop(true)
            .spawn()
            .context("starting nginx (apt-get install nginx; cargo xtask test installs it)")?;
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Ok(Nginx(child));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("nginx did not listen on {port}: see {d}/error.log")
    }
}
