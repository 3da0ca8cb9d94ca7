//! `cargo xtask bench databases`: managed PostgreSQL (issue 16). The time
//! from `POST /databases` to a cluster accepting connections (p50, p99,
//! over create-and-delete rounds), then pgbench's select-only script
//! through the pooler (`uri`) and straight to the leader (`writeUri`) in
//! alternating rounds of the same run, with the pool's share of direct TPS,
//! with simple queries and with protocol-level prepared statements
//! (`-M prepared`, which pgbouncer 1.21+ carries in transaction mode).
//! A third target in the same rounds is a plain userspace TCP relay to the
//! leader: the least any process in between costs on this machine, so the
//! pool's figure can be read against that bound as well as against direct.
//! A fourth is the old pooler, Debian's pgbouncer 1.18 (`old_pooler`):
//! `-M simple` in transaction mode, and `-M prepared` in session mode, the
//! only mode in which 1.18 carries prepared statements.
//! Last, the failover time of a database with two replicas (pro plan): the
//! leader's postmaster killed with SIGKILL to the pooled URI accepting a
//! write again (p50, p99 over `--failovers` kills).

use std::net::SocketAddr;
use std::time::Instant;

use anyhow::{Context, bail};
use plateau_testkit::Client;
use serde_json::json;
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Command;
use tokio::task::JoinHandle;

use crate::harness::percentile;
use crate::old_pooler::OldPooler;
use crate::server::{Server, debug_profile};

pub struct Options {
    /// Create-and-delete rounds for the creation time.
    pub creations: usize,
    /// pgbench seconds per round and rounds per target.
    pub seconds: u64,
    pub rounds: usize,
    pub clients: usize,
    /// Leader kills for the failover time.
    pub failovers: usize,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options {
            creations: 10,
            seconds: 10,
            rounds: 3,
            clients: 8,
            failovers: 5,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next().with_context(|| format!("{flag} needs a value"))?;
            match *flag {
                "--creations" => opts.creations = value.parse()?,
                "--seconds" => opts.seconds = value.parse()?,
                "--rounds" => opts.rounds = value.parse()?,
                "--clients" => opts.clients = value.parse()?,
                "--failovers" => opts.failovers = value.parse()?,
                other => bail!(
                    "unknown option {other} (use --creations N, --seconds N, --rounds N, --clients N, --failovers N)"
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

/// Runs pgbench against `uri` with query `mode` (`simple` or
/// `prepared`: protocol-level prepared statements, which the pooler tracks
/// per client with `max_prepared_statements`); its TPS.
async fn tps(bench: &str, uri: &str, mode: &str, opts: &Options) -> anyhow::Result<f64> {
    let out = Command::new(bench)
        .args(["-S", "-M", mode, "-n", "-j", "2"])
        .args([
            "-c",
            &opts.clients.to_string(),
            "-T",
            &opts.seconds.to_string(),
        ])
        .arg(uri)
        .output()
        .await
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
        "managed PostgreSQL benchmark: {} creations; pgbench select-only, {} clients, {} s x {} rounds per target; {} build\n",
        opts.creations,
        opts.clients,
        opts.seconds,
        opts.rounds,
        if debug_profile() { "debug" } else { "release" }
    );
    let mut created = Vec::new();
    for _ in 0..opts.creations {
        let start = Instant::now();
        let r = c.post("/databases", json!({ "name": "bench" })).await;
        if r.status != 201 {
            bail!("creating a database answered {}: {}", r.status, r.text());
        }
        let id = r.json()["id"].as_str().unwrap_or_default().to_owned();
        c.wait_running(&format!("/databases/{id}")).await;
        created.push(start.elapsed().as_secs_f64() * 1000.0);
        c.delete(&format!("/databases/{id}")).await;
        c.wait_gone(&format!("/databases/{id}")).await;
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
    c.wait_running(&format!("/databases/{id}")).await;
    let conn = c.get(&format!("/databases/{id}/connection")).await.json();
    let pooled = conn["uri"].as_str().context("no uri")?.to_owned();
    let direct = conn["writeUri"].as_str().context("no writeUri")?.to_owned();
    let init = Command::new(&bench)
        .args(["-i", "-q", "-s", "10"])
        .arg(&direct)
        .output()
        .await?;
    if !init.status.success() {
        bail!("pgbench -i: {}", String::from_utf8_lossy(&init.stderr));
    }
    let (leader, relayed_uri) = split_leader(&direct)?;
    let relay = relay(leader).await?;
    let relayed = relayed_uri(relay.port);
    let database = database_of(&pooled)?;
    let login = credentials_of(&pooled)?;
    let old = OldPooler::start(server.data_dir(), &id, &database, (&login.0, &login.1)).await?;
    let (_, old_uri) = split_leader(&pooled)?;
    let old_tx = old_uri(old.port);
    // The database after the host: the owner role has the same name.
    let old_session = match old_tx.rsplit_once('@') {
        Some((head, tail)) => format!(
            "{head}@{}",
            tail.replacen(&format!("/{database}"), &format!("/{database}_session"), 1)
        ),
        None => bail!("uri has no host"),
    };
    let (mut d, mut r, mut p, mut o) = (0.0, 0.0, 0.0, 0.0);
    let (mut dp, mut pp, mut op) = (0.0, 0.0, 0.0);
    for round in 1..=opts.rounds {
        let direct_tps = tps(&bench, &direct, "simple", &opts).await?;
        let relay_tps = tps(&bench, &relayed, "simple", &opts).await?;
        let pool_tps = tps(&bench, &pooled, "simple", &opts).await?;
        let old_tps = tps(&bench, &old_tx, "simple", &opts)
            .await
            .with_context(|| format!("pgbouncer 1.18 said:\n{}", old.log_tail()))?;
        let direct_prepared = tps(&bench, &direct, "prepared", &opts).await?;
        let pool_prepared = tps(&bench, &pooled, "prepared", &opts).await?;
        let old_prepared = tps(&bench, &old_session, "prepared", &opts).await?;
        println!(
            "round {round}: direct {direct_tps:.0} tps, relay {relay_tps:.0} tps, pool {pool_tps:.0} tps, \
             old pool {old_tps:.0} tps; -M prepared: direct {direct_prepared:.0} tps, pool {pool_prepared:.0} tps, \
             old pool (session mode) {old_prepared:.0} tps"
        );
        (d, r, p, o) = (d + direct_tps, r + relay_tps, p + pool_tps, o + old_tps);
        (dp, pp, op) = (dp + direct_prepared, pp + pool_prepared, op + old_prepared);
    }
    relay.abort();
    old.stop();
    println!(
        "\npool / direct: {:.0}% of direct TPS over {} rounds (target >= 90%)",
        p / d * 100.0,
        opts.rounds
    );
    println!(
        "pool / direct with -M prepared: {:.0}% of direct TPS over {} rounds (direct {:.0}, pool {:.0} tps on average)",
        pp / dp * 100.0,
        opts.rounds,
        dp / opts.rounds as f64,
        pp / opts.rounds as f64
    );
    println!(
        "bound: a bare TCP relay reaches {:.0}% of direct; the pool reaches {:.0}% of the relay",
        r / d * 100.0,
        p / r * 100.0
    );
    println!(
        "old pooler (pgbouncer 1.18): -M simple in transaction mode {:.0}% of direct ({:.0} tps), the new pool {:.0}% of it; \
         -M prepared in session mode (1.18 cannot carry it in transaction mode) {:.0}% of direct ({:.0} tps), the new pool in transaction mode {:.0}% of it",
        o / d * 100.0,
        o / opts.rounds as f64,
        p / o * 100.0,
        op / dp * 100.0,
        op / opts.rounds as f64,
        pp / op * 100.0
    );
    c.delete(&format!("/databases/{id}")).await;
    c.wait_gone(&format!("/databases/{id}")).await;
    failovers(&server, &opts).await?;
    drop(server);
    Ok(())
}

/// The member that leads, from `GET /databases/{id}`.
async fn leader(c: &Client, id: &str) -> Option<String> {
    let d = c.get(&format!("/databases/{id}")).await.json();
    d["members"]
        .as_array()?
        .iter()
        .find(|m| m["role"] == "leader")
        .and_then(|m| m["name"].as_str())
        .map(str::to_owned)
}

/// Whether all of the database's members answer, replicas streaming.
async fn settled(c: &Client, id: &str) -> bool {
    let d = c.get(&format!("/databases/{id}")).await.json();
    d["members"].as_array().is_some_and(|m| {
        m.len() == 3
            && m.iter().all(|m| {
                m["healthy"] == true && (m["role"] == "leader" || m["state"] == "streaming")
            })
    })
}

/// Kills the leader `opts.failovers` times; the time from each SIGKILL to
/// a write through the pooled URI that commits.
async fn failovers(server: &Server, opts: &Options) -> anyhow::Result<()> {
    if opts.failovers == 0 {
        return Ok(());
    }
    let token = server.create_org("ha-bench", "pro").await?;
    let c = Client::new(&server.base).with_token(&token);
    let r = c
        .post("/databases", json!({ "name": "ha", "replicas": 2 }))
        .await;
    if r.status != 201 {
        bail!("creating a database answered {}: {}", r.status, r.text());
    }
    let id = r.json()["id"].as_str().unwrap_or_default().to_owned();
    c.wait_running(&format!("/databases/{id}")).await;
    let pooled = c.get(&format!("/databases/{id}/connection")).await.json()["uri"]
        .as_str()
        .context("no uri")?
        .to_owned();
    let psql = |sql: &str| {
        std::process::Command::new("psql")
            .arg(&pooled)
            .args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .env("PGCONNECT_TIMEOUT", "2")
            .output()
    };
    psql("CREATE TABLE beats (at timestamptz)")?;
    let mut times = Vec::new();
    for round in 1..=opts.failovers {
        let deadline = Instant::now() + std::time::Duration::from_secs(120);
        while !settled(&c, &id).await {
            if Instant::now() > deadline {
                bail!("the database did not settle before failover {round}");
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
        let name = leader(&c, &id).await.context("no leader")?;
        let pid_file = server
            .data_dir()
            .join(format!("databases/{id}/{name}/data/postmaster.pid"));
        let pid = std::fs::read_to_string(&pid_file)?;
        let pid = pid
            .lines()
            .next()
            .context("empty pid file")?
            .trim()
            .to_owned();
        let start = Instant::now();
        std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status()?;
        loop {
            let out = psql("INSERT INTO beats VALUES (now())")?;
            if out.status.success() {
                break;
            }
            if start.elapsed().as_secs() > 120 {
                bail!("no write through the pool within 120 s of failover {round}");
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        let ms = start.elapsed().as_secs_f64() * 1000.0;
        println!(
            "failover {round}: {ms:.0} ms ({name} -> {})",
            leader(&c, &id).await.unwrap_or_default()
        );
        times.push(ms);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "failover (SIGKILL of the leader to a pooled write): p50 {:.0} ms, p99 {:.0} ms over {} kills (target p50 < 10000 ms)",
        percentile(&times, 0.5),
        percentile(&times, 0.99),
        times.len()
    );
    c.delete(&format!("/databases/{id}")).await;
    c.wait_gone(&format!("/databases/{id}")).await;
    Ok(())
}

/// The user and password `uri` names (percent-decoded).
fn credentials_of(uri: &str) -> anyhow::Result<(String, String)> {
    let (head, _) = uri.rsplit_once('@').context("uri has no host")?;
    let (_, userinfo) = head.split_once("://").context("uri has no scheme")?;
    let (user, password) = userinfo.split_once(':').context("uri has no password")?;
    let decode = |s: &str| -> String {
        let bytes = s.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            match (bytes[i], s.get(i + 1..i + 3)) {
                (b'%', Some(hex)) if u8::from_str_radix(hex, 16).is_ok() => {
                    out.push(u8::from_str_radix(hex, 16).unwrap_or_default());
                    i += 3;
                }
                (b, _) => {
                    out.push(b);
                    i += 1;
                }
            }
        }
        String::from_utf8_lossy(&out).into_owned()
    };
    Ok((decode(user), decode(password)))
}

/// The database `uri` names.
fn database_of(uri: &str) -> anyhow::Result<String> {
    let (_, rest) = uri.rsplit_once('@').context("uri has no host")?;
    let (_, tail) = rest.split_once('/').context("uri has no database")?;
    Ok(tail.split('?').next().unwrap_or_default().to_owned())
}

/// The leader's address in `uri`, and `uri` with another port in its place.
fn split_leader(uri: &str) -> anyhow::Result<(SocketAddr, impl Fn(u16) -> String)> {
    let (head, rest) = uri.rsplit_once('@').context("writeUri has no host")?;
    let (authority, tail) = rest.split_once('/').context("writeUri has no database")?;
    let leader: SocketAddr = authority
        .parse()
        .with_context(|| format!("writeUri's host {authority} is not an address"))?;
    let (head, tail) = (head.to_owned(), tail.to_owned());
    Ok((leader, move |port| {
        format!("{head}@{}:{port}/{tail}", leader.ip())
    }))
}

/// A relay on a free loopback port copying bytes to `target` both ways:
/// one connection upstream per client, no parsing, no pooling.
struct Relay {
    port: u16,
    task: JoinHandle<()>,
}

impl Relay {
    fn abort(self) {
        self.task.abort();
    }
}

async fn relay(target: SocketAddr) -> anyhow::Result<Relay> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let task = tokio::spawn(async move {
        while let Ok((mut client, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(mut server) = TcpStream::connect(target).await else {
                    return;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
            });
        }
    });
    Ok(Relay { port, task })
}
