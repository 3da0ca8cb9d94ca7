//! `cargo xtask bench apps`: the apps figures of issue 15, each against
//! its peer in the same run, with the same load generator.
//!
//! 1. The hello-world `wasi:http` component of the apps tests, deployed
//!    as an app and fetched through the edge by Host name, against
//!    `wasmtime serve` (wasmtime-cli 48, installed here when missing)
//!    serving the same file. Target: the edge at least 90% of its req/s.
//! 2. A Linux app (busybox httpd in runc, the image the apps tests build)
//!    through the edge, against the same replica hit directly on its
//!    address in its network namespace. Target: at least 80%.
//! 3. Deploy time of a prebuilt image, from the request to live (the
//!    deployment's `createdAt` to `liveAt`), p50 and p99, for a Wasm app
//!    (target p50 under 1 s) and a Linux app.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use plateau_testkit::Client;
use plateau_testkit::oci::{ImagePusher, busybox_layer};
use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::harness::percentiles;
use crate::load::{self, Scenario};
use crate::server::{Server, release_binary};

/// The wasmtime-cli the Wasm figure is measured against.
const WASMTIME_VERSION: &str = "48.0.8";

pub struct Options {
    pub load: load::Options,
    /// Deployments timed per kind of app.
    pub deploys: usize,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut deploys = 20;
        let mut rest = Vec::new();
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            if *flag == "--deploys" {
                deploys = it.next().context("--deploys needs a value")?.parse()?;
            } else {
                rest.push(*flag);
            }
        }
        let mut load = load::Options::parse(&rest)?;
        if !rest.contains(&"--seconds") {
            load.seconds = 12;
        }
        Ok(Options { load, deploys })
    }
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let wasmtime = ensure_wasmtime().await?;
    let server = Server::start_release().await?;
    let token = server.create_org("apps-bench", "pro").await?;
    let api = Client::new(&server.base).with_token(&token);
    let org = api.get("/me").await.json()["organization"]["id"]
        .as_str()
        .context("/me names no organisation")?
        .to_owned();
    let host = server.base.trim_start_matches("http://").to_owned();
    let scratch = tempfile::tempdir()?;

    // The Wasm app and its peer.
    let hello = scratch.path().join("hello.wasm");
    std::fs::write(&hello, plateau_plugin_artifacts::apps::HELLO_APP)?;
    let v2 = scratch.path().join("hello-v2.wasm");
    std::fs::write(&v2, plateau_plugin_artifacts::apps::HELLO_APP_V2)?;
    let wasm_v1 = format!("{host}/{org}/hello:v1");
    let wasm_v2 = format!("{host}/{org}/hello:v2");
    push_component(&server, &token, &hello, &wasm_v1).await?;
    push_component(&server, &token, &v2, &wasm_v2).await?;
    let wasm_app = deploy_app(&api, "hello", &wasm_v1).await?;
    let peer = WasmtimeServe::start(&wasmtime, &hello).await?;

    // The Linux app.
    let pusher = ImagePusher::new(&server.base, &token);
    let layer = busybox_layer();
    let repo = format!("{org}/web");
    let linux_v1 = pusher.push_busybox(&repo, "v1", "v1", &layer, false).await;
    let linux_v2 = pusher.push_busybox(&repo, "v2", "v2", &layer, false).await;
    let linux_app = deploy_app(&api, "web", &linux_v1).await?;
    let direct = replica_address(server.data_dir())?;

    let edge = server.edge.clone();
    let on_edge = |app: &App| Scenario::get(&edge, "/", None).with_host(&app.host);
    println!(
        "apps through the edge and their peers: {} connections, {} s in {} rounds, after warm-up",
        opts.load.connections, opts.load.seconds, opts.load.rounds
    );
    let wasm = load::run_rounds(
        vec![
            (
                "wasmtime serve (peer)",
                Scenario::get(&peer.url, "/", None),
                peer.pid(),
            ),
            (
                "wasm app through the edge",
                on_edge(&wasm_app),
                server.pid(),
            ),
        ],
        &opts.load,
    )
    .await?;
    let linux = load::run_rounds(
        vec![
            (
                "linux app, replica direct (peer)",
                Scenario::get(&direct, "/", None),
                None,
            ),
            (
                "linux app through the edge",
                on_edge(&linux_app),
                server.pid(),
            ),
        ],
        &opts.load,
    )
    .await?;
    drop(peer);

    println!(
        "\ndeploy time of a prebuilt image, request to live ({} deploys each)",
        opts.deploys
    );
    println!(
        "{:<24} {:>10} {:>10} {:>10}",
        "app", "p50 ms", "p99 ms", "max ms"
    );
    for (name, app, images) in [
        ("wasm (hello)", &wasm_app, [&wasm_v2, &wasm_v1]),
        ("linux (busybox httpd)", &linux_app, [&linux_v2, &linux_v1]),
    ] {
        let times = deploy_times(&api, app, images, opts.deploys).await?;
        let (p50, p99) = percentiles(&times);
        let max = times.iter().copied().fold(0.0, f64::max);
        println!("{name:<24} {p50:>10.0} {p99:>10.0} {max:>10.0}");
    }
    println!(
        "\ntargets: wasm edge/peer {:.0}% (at least 90%), linux edge/direct {:.0}% (at least 80%), wasm deploy p50 under 1000 ms",
        100.0 * wasm[1].rps / wasm[0].rps,
        100.0 * linux[1].rps / linux[0].rps
    );
    Ok(())
}

/// A deployed app: its id and the Host name the edge serves it by.
pub(crate) struct App {
    pub(crate) id: String,
    pub(crate) host: String,
}

pub(crate) async fn push_component(
    server: &Server,
    token: &str,
    file: &Path,
    reference: &str,
) -> anyhow::Result<()> {
    let out = Command::new(release_binary())
        .args(["plugin", "push"])
        .arg(file)
        .args([reference, "--insecure"])
        .env("PLATEAU_URL", &server.base)
        .env("PLATEAU_REGISTRY_PASSWORD", token)
        .output()
        .await?;
    if !out.status.success() {
        bail!(
            "plateau plugin push: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

/// Creates an app of `image`, scaled to the plan's maximum of replicas,
/// and waits for it to run.
pub(crate) async fn deploy_app(api: &Client, name: &str, image: &str) -> anyhow::Result<App> {
    let r = api
        .post("/apps", json!({ "name": name, "image": image }))
        .await;
    if r.status != 201 {
        bail!("creating app {name}: {} {}", r.status, r.text());
    }
    let app = r.json();
    let id = app["id"].as_str().context("app id")?.to_owned();
    let max = api.get(&format!("/apps/{id}/scale")).await.json()["maxReplicas"].clone();
    let r = api
        .put(&format!("/apps/{id}/scale"), json!({ "replicas": max }))
        .await;
    if r.status != 200 {
        bail!("scaling app {name}: {} {}", r.status, r.text());
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let app = api.get(&format!("/apps/{id}")).await.json();
        let live = api.get(&format!("/apps/{id}/deployments")).await.json();
        let settled = live["items"]
            .as_array()
            .is_some_and(|d| d.iter().all(|d| d["status"] != "pending"));
        match app["status"].as_str() {
            Some("running") if settled => {
                let url = app["url"].as_str().context("app url")?;
                let host = url.trim_start_matches("http://").split([':', '/']).next();
                return Ok(App {
                    id,
                    host: host.context("app url host")?.to_owned(),
                });
            }
            Some("failed") => bail!("app {name} failed: {live}"),
            _ if Instant::now() > deadline => bail!("app {name} not running after 120 s: {app}"),
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

/// Deploys `images` in turn `count` times; each deployment's request to
/// live, in milliseconds, from its own timestamps.
async fn deploy_times(
    api: &Client,
    app: &App,
    images: [&String; 2],
    count: usize,
) -> anyhow::Result<Vec<f64>> {
    let mut times = Vec::with_capacity(count);
    for n in 0..count {
        let path = format!("/apps/{}/deployments", app.id);
        let r = api.post(&path, json!({ "image": images[n % 2] })).await;
        if !(200..300).contains(&r.status) {
            bail!("deploying: {} {}", r.status, r.text());
        }
        let id = r.json()["id"].as_str().context("deployment id")?.to_owned();
        let done = settled(api, &path, &id).await?;
        if done["status"] != "live" {
            bail!("deployment {id} ended {done}");
        }
        let at = |field: &str| {
            done[field]
                .as_str()
                .and_then(|t| {
                    time::OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339)
                        .ok()
                })
                .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
                .with_context(|| format!("deployment {field}"))
        };
        times.push((at("liveAt")? - at("createdAt")?) as f64);
    }
    Ok(times)
}

/// Waits for deployment `id` (listed under `path`) to leave `pending`.
async fn settled(api: &Client, path: &str, id: &str) -> anyhow::Result<Value> {
    let deadline = Instant::now() + Duration::from_secs(120);
    while Instant::now() < deadline {
        let page = api.get(path).await.json();
        let found = page["items"]
            .as_array()
            .and_then(|d| d.iter().find(|d| d["id"] == id && d["status"] != "pending"));
        if let Some(d) = found {
            return Ok(d.clone());
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    bail!("deployment {id} still pending after 120 s")
}

/// `http://ADDRESS:PORT` of the one running Linux replica, read from its
/// runc bundle (the namespace it joined, the `PORT` it was given) and its
/// namespace's address.
fn replica_address(data_dir: &Path) -> anyhow::Result<String> {
    replica_addresses(data_dir)?
        .into_iter()
        .next()
        .context("no running Linux replica found")
}

/// The addresses (`http://ip:port`) of every running Linux replica under
/// `data_dir`.
pub(crate) fn replica_addresses(data_dir: &Path) -> anyhow::Result<Vec<String>> {
    let bundles = data_dir.join("apps/containers/bundles");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&bundles).with_context(|| bundles.display().to_string())? {
        let config: Value =
            serde_json::from_slice(&std::fs::read(entry?.path().join("config.json"))?)?;
        let port = config["process"]["env"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|v| v.as_str()?.strip_prefix("PORT=").map(str::to_owned));
        let netns = config["linux"]["namespaces"]
            .as_array()
            .into_iter()
            .flatten()
            .find_map(|ns| ns["path"].as_str().map(PathBuf::from));
        if let (Some(port), Some(netns)) = (port, netns) {
            found.push((port, netns));
        }
    }
    let mut addresses = Vec::new();
    for (port, netns) in found {
        let name = netns.file_name().context("namespace name")?;
        let out = std::process::Command::new("ip")
            .arg("-n")
            .arg(name)
            .args(["-o", "-4", "addr", "show", "scope", "global"])
            .output()
            .context("running ip (iproute2)")?;
        let text = String::from_utf8_lossy(&out.stdout);
        let address = text
            .split_whitespace()
            .skip_while(|w| *w != "inet")
            .nth(1)
            .and_then(|a| a.split('/').next())
            .with_context(|| {
                format!("no address in namespace {}: {text}", name.to_string_lossy())
            })?;
        addresses.push(format!("http://{address}:{port}"));
    }
    Ok(addresses)
}

/// The `wasmtime` binary of version [`WASMTIME_VERSION`]: on the PATH or
/// in cargo's bin directory, else installed with `cargo install`.
async fn ensure_wasmtime() -> anyhow::Result<PathBuf> {
    let cargo_bin = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))
        .context("no CARGO_HOME or HOME")?
        .join("bin/wasmtime");
    for candidate in [PathBuf::from("wasmtime"), cargo_bin.clone()] {
        let version = Command::new(&candidate).arg("--version").output().await;
        if let Ok(out) = version
            && String::from_utf8_lossy(&out.stdout).contains(WASMTIME_VERSION)
        {
            return Ok(candidate);
        }
    }
    eprintln!("installing wasmtime-cli {WASMTIME_VERSION} with cargo (a long build, once)");
    let status = Command::new(env!("CARGO"))
        .args([
            "install",
            "wasmtime-cli",
            "--locked",
            "--version",
            WASMTIME_VERSION,
        ])
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("CARGO_BUILD_BUILD_DIR")
        .status()
        .await?;
    if !status.success() {
        bail!("cargo install wasmtime-cli {WASMTIME_VERSION} failed");
    }
    Ok(cargo_bin)
}

/// `wasmtime serve` on a free loopback port, killed when dropped.
struct WasmtimeServe {
    child: Child,
    url: String,
}

impl WasmtimeServe {
    async fn start(wasmtime: &Path, component: &Path) -> anyhow::Result<WasmtimeServe> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let addr = format!("127.0.0.1:{port}");
        let child = Command::new(wasmtime)
            .args(["serve", "-S", "cli", "--addr", &addr])
            .arg(component)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting wasmtime serve")?;
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(&addr).await.is_ok() {
                return Ok(WasmtimeServe {
                    child,
                    url: format!("http://{addr}"),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        bail!("wasmtime serve did not listen on {addr} within 10 s")
    }

    fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}
