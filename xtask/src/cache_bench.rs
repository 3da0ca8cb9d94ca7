//! `cargo xtask bench cache`: managed Redis (issue 18's targets).
//! - Throughput: `redis-benchmark` GET and SET against a managed cache over
//!   TLS (its `app` user, its CA), and in the same run against a plain
//!   `redis-server` the bench starts without TLS (the baseline). Target:
//!   managed TLS at least 60% of plain.
//! - Creation: `POST /caches` to the first TLS `PING` answered, p50 (target
//!   under 2 s).
//! - Failover: leader SIGKILLed to the first `SET` accepted by the master
//!   the sentinels name, p50 and p99.

use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use plateau_testkit::Client;
use serde_json::{Value, json};

use crate::harness::percentiles;
use crate::server::Server;

pub struct Options {
    pub requests: u64,
    pub clients: usize,
    pub creations: usize,
    pub failovers: usize,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options {
            requests: 200_000,
            clients: 32,
            creations: 10,
            failovers: 5,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next().with_context(|| format!("{flag} needs a value"))?;
            match *flag {
                "--requests" => opts.requests = value.parse()?,
                "--clients" => opts.clients = value.parse()?,
                "--creations" => opts.creations = value.parse()?,
                "--failovers" => opts.failovers = value.parse()?,
                other => bail!("unknown option {other}"),
            }
        }
        Ok(opts)
    }
}

/// How to reach one managed cache with `redis-cli`.
struct Conn {
    port: u16,
    password: String,
    master_name: String,
    sentinel_port: u16,
    ca_file: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Conn {
    async fn of(api: &Client, id: &str) -> anyhow::Result<Conn> {
        let r = api.get(&format!("/caches/{id}/connection")).await;
        if r.status != 200 {
            bail!("connection of {id} answered {}: {}", r.status, r.text());
        }
        let v = r.json();
        let dir = tempfile::tempdir()?;
        let ca_file = dir.path().join("ca.crt");
        std::fs::write(
            &ca_file,
            v["caCertificate"].as_str().context("caCertificate")?,
        )?;
        let sentinel = v["sentinels"][0].as_str().context("sentinels")?;
        Ok(Conn {
            port: v["port"].as_u64().context("port")? as u16,
            password: v["password"].as_str().context("password")?.to_owned(),
            master_name: v["masterName"].as_str().context("masterName")?.to_owned(),
            sentinel_port: sentinel.rsplit_once(':').context("host:port")?.1.parse()?,
            ca_file,
            _dir: dir,
        })
    }

    /// `redis-cli --tls` on `port` as the cache's user.
    fn cli(&self, port: u16, args: &[&str]) -> std::io::Result<Output> {
        Command::new("redis-cli")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &port.to_string(),
                "--tls",
                "--cacert",
            ])
            .arg(&self.ca_file)
            .args([
                "--user",
                "app",
                "--pass",
                &self.password,
                "--no-auth-warning",
            ])
            .args(args)
            .stderr(Stdio::null())
            .output()
    }

    fn answers(&self, port: u16, args: &[&str], expected: &str) -> bool {
        self.cli(port, args)
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == expected)
    }

    /// The leader's port as the sentinels name it.
    fn leader_port(&self) -> Option<u16> {
        let out = self
            .cli(
                self.sentinel_port,
                &["SENTINEL", "GET-MASTER-ADDR-BY-NAME", &self.master_name],
            )
            .ok()?;
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .nth(1)?
            .trim()
            .parse()
            .ok()
    }
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    for tool in ["redis-server", "redis-benchmark", "redis-cli"] {
        if Command::new(tool).arg("--version").output().is_err() {
            bail!(
                "{tool} is missing: run `cargo xtask test` once, or apt-get install redis-server redis-tools"
            );
        }
    }
    let server = Server::start_release().await?;
    let api = Client::new(&server.base).with_token(&server.token);
    println!(
        "cache benchmark: redis-benchmark -n {} -c {} (GET, SET), {} creations, {} failovers, release build\n",
        opts.requests, opts.clients, opts.creations, opts.failovers
    );

    let creation = creations(&api, opts.creations).await?;
    let cache = create(&api, json!({ "name": "bench", "replicas": 1 })).await?;
    let id = cache["id"].as_str().context("id")?.to_owned();
    let conn = Conn::of(&api, &id).await?;
    wait_for(Duration::from_secs(30), || {
        conn.answers(conn.port, &["PING"], "PONG")
    })?;

    let plain = PlainRedis::start()?;
    let baseline = benchmark(&opts, &["-p", &plain.port.to_string()])?;
    let ca = conn.ca_file.to_str().context("utf-8 path")?.to_owned();
    let managed = benchmark(
        &opts,
        &[
            "-p",
            &conn.port.to_string(),
            "--tls",
            "--cacert",
            &ca,
            "--user",
            "app",
            "-a",
            &conn.password,
        ],
    )?;
    drop(plain);
    let failover = failovers(&conn, opts.failovers)?;
    api.delete(&format!("/caches/{id}")).await;
    api.wait_gone(&format!("/caches/{id}")).await;

    println!("| measurement | value |\n|---|---|");
    for (name, plain_rps, tls_rps) in [
        ("SET", baseline.set, managed.set),
        ("GET", baseline.get, managed.get),
    ] {
        println!("| {name} plain redis-server, no TLS (baseline) | {plain_rps:.0} req/s |");
        println!(
            "| {name} managed cache over TLS | {tls_rps:.0} req/s ({:.0}% of plain; target 60%) |",
            100.0 * tls_rps / plain_rps
        );
    }
    let (p50, p99) = percentiles(&creation);
    println!(
        "| creation, request to TLS PING | p50 {p50:.2} s, p99 {p99:.2} s (target p50 < 2 s) |"
    );
    let (p50, p99) = percentiles(&failover);
    println!("| failover, leader killed to SET accepted | p50 {p50:.2} s, p99 {p99:.2} s |");
    Ok(())
}

/// Creates a cache and waits until it runs (the create answers first).
async fn create(api: &Client, body: Value) -> anyhow::Result<Value> {
    let r = api.post("/caches", body).await;
    if r.status != 201 {
        bail!("creating a cache answered {}: {}", r.status, r.text());
    }
    let id = r.json()["id"].as_str().unwrap_or_default().to_owned();
    Ok(api.wait_running(&format!("/caches/{id}")).await)
}

/// Seconds from `POST /caches` to the first answered TLS `PING`, one cache
/// at a time (each deleted before the next, within the plan's count).
async fn creations(api: &Client, count: usize) -> anyhow::Result<Vec<f64>> {
    let mut out = Vec::with_capacity(count);
    for i in 0..count {
        let start = Instant::now();
        let cache = create(api, json!({ "name": format!("create-{i}"), "replicas": 0 })).await?;
        let id = cache["id"].as_str().context("id")?;
        let conn = Conn::of(api, id).await?;
        wait_for(Duration::from_secs(30), || {
            conn.answers(conn.port, &["PING"], "PONG")
        })?;
        out.push(start.elapsed().as_secs_f64());
        api.delete(&format!("/caches/{id}")).await;
        api.wait_gone(&format!("/caches/{id}")).await;
    }
    Ok(out)
}

/// Seconds from SIGKILL of the leader to the first `SET` the master named
/// by the sentinels accepts; between rounds the host brings the old leader
/// back as a replica, and the sentinels must see it before the next kill.
fn failovers(conn: &Conn, count: usize) -> anyhow::Result<Vec<f64>> {
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        wait_for(Duration::from_secs(60), || {
            conn.cli(
                conn.sentinel_port,
                &["SENTINEL", "REPLICAS", &conn.master_name],
            )
            .is_ok_and(|o| {
                let text = String::from_utf8_lossy(&o.stdout).to_string();
                text.lines().any(|l| l.trim() == "slave") && !text.contains("s_down")
            })
        })?;
        let leader = conn.leader_port().context("the sentinels name no leader")?;
        let info = conn.cli(leader, &["INFO", "server"])?;
        let pid = String::from_utf8_lossy(&info.stdout)
            .lines()
            .find_map(|l| l.strip_prefix("process_id:").map(|p| p.trim().to_owned()))
            .context("the leader's process id")?;
        let start = Instant::now();
        if !Command::new("kill")
            .args(["-KILL", &pid])
            .status()?
            .success()
        {
            bail!("could not kill the leader {pid}");
        }
        wait_for(Duration::from_secs(60), || {
            conn.leader_port()
                .filter(|port| *port != leader)
                .is_some_and(|port| conn.answers(port, &["SET", "failover", "1"], "OK"))
        })?;
        out.push(start.elapsed().as_secs_f64());
    }
    Ok(out)
}

/// Polls `ready` every 20 ms until it holds or `limit` passes.
fn wait_for(limit: Duration, mut ready: impl FnMut() -> bool) -> anyhow::Result<()> {
    let start = Instant::now();
    while !ready() {
        if start.elapsed() > limit {
            bail!("gave up after {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

struct Throughput {
    set: f64,
    get: f64,
}

/// `redis-benchmark` SET and GET with `target` arguments; requests/s.
fn benchmark(opts: &Options, target: &[&str]) -> anyhow::Result<Throughput> {
    let out = Command::new("redis-benchmark")
        .args(["-h", "127.0.0.1"])
        .args(target)
        .args(["-t", "set,get", "--csv", "-r", "100000", "-d", "64"])
        .args([
            "-n",
            &opts.requests.to_string(),
            "-c",
            &opts.clients.to_string(),
        ])
        .output()
        .context("running redis-benchmark")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let rate = |name: &str| -> anyhow::Result<f64> {
        text.lines()
            .find(|l| l.starts_with(&format!("\"{name}\"")))
            .and_then(|l| l.split(',').nth(1))
            .map(|v| v.trim_matches('"').parse())
            .transpose()?
            .with_context(|| format!("redis-benchmark printed no {name}: {text}"))
    };
    Ok(Throughput {
        set: rate("SET")?,
        get: rate("GET")?,
    })
}

/// A plain `redis-server` without TLS, persistence or ACL: the baseline.
struct PlainRedis {
    child: std::process::Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl PlainRedis {
    fn start() -> anyhow::Result<PlainRedis> {
        let dir = tempfile::tempdir()?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(["--appendonly", "no", "--dir"])
            .arg(dir.path())
            .stdout(Stdio::null())
            .spawn()
            .context("starting redis-server")?;
        let plain = PlainRedis {
            child,
            port,
            _dir: dir,
        };
        wait_for(Duration::from_secs(10), || {
            Command::new("redis-cli")
                .args(["-p", &port.to_string(), "PING"])
                .output()
                .is_ok_and(|o| o.stdout.starts_with(b"PONG"))
        })?;
        Ok(plain)
    }
}

impl Drop for PlainRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
