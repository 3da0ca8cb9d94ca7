//! `cargo xtask bench email`: the relay's throughput to a local SMTP sink,
//! ledger included (issue 5's target: at least 500 messages/s). Many
//! clients `POST /email/send`; the run ends when every message is `sent`
//! in the ledger. Measured in the same run, as baselines: the sink's own
//! throughput with a minimal direct SMTP client (one connection per
//! message, like the relay's), and the core's write path (`POST /projects`).

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use plateau_testkit::SmtpSink;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use crate::harness;
use crate::load::{self, Scenario};
use crate::server::{ADMIN_PASSWORD, Server};

pub struct Options {
    pub messages: u64,
    pub connections: usize,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options {
            messages: 5_000,
            connections: 32,
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            let value = it.next().with_context(|| format!("{flag} needs a value"))?;
            match *flag {
                "--messages" => opts.messages = value.parse()?,
                "--connections" => opts.connections = value.parse()?,
                other => bail!("unknown option {other}"),
            }
        }
        Ok(opts)
    }
}

/// What one row of the table reports.
struct Row {
    name: &'static str,
    count: u64,
    seconds: f64,
    p50_ms: Option<f64>,
    p99_ms: Option<f64>,
    errors: u64,
}

impl Row {
    fn rate(&self) -> f64 {
        self.count as f64 / self.seconds
    }
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let sink = SmtpSink::plain().await;
    let dir = tempfile::tempdir()?;
    let plugins_config = dir.path().join("plugins.json");
    // The built-in grants of `email`, and no rate limit in the way: the
    // benchmark measures capacity, not the free plan's policy.
    std::fs::write(
        &plugins_config,
        serde_json::json!({ "plugins": { "email": {
            "grants": ["kv", "events", "log", "config", "clock", "cursors", "scheduler", "smtp", "secrets"],
            "outboundHosts": ["*"],
            "config": { "limits.free.perMinute": "100000000", "limits.free.perDay": "100000000" },
        } } })
        .to_string(),
    )?;
    let server = Server::start_release_with(&[
        ("PLATEAU_EGRESS_ALLOW", "127.0.0.0/8"),
        (
            "PLATEAU_PLUGINS_CONFIG",
            plugins_config.to_str().context("utf-8 path")?,
        ),
    ])
    .await?;
    let api = Api::new(&server).await?;
    let status = api
        .send(
            hyper::Method::PUT,
            "/email/config",
            &serde_json::json!({
                "host": "127.0.0.1", "port": sink.port(), "tlsMode": "none",
                "allowedSenders": ["bench@example.com"],
            })
            .to_string(),
        )
        .await?
        .0;
    if status != 201 {
        bail!("configuring the relay answered {status}");
    }
    println!(
        "email relay benchmark: {} messages, {} concurrent clients, plain SMTP to a local sink, SQLite, release build\n",
        opts.messages, opts.connections
    );

    let direct = direct_smtp(&sink, &opts).await?;
    sink.clear();
    let projects = load::run(
        &Scenario::post_projects(&server.base, &server.token, load::Keys::Fresh),
        &load::Options {
            seconds: 3,
            connections: opts.connections,
            rounds: 1,
        },
    )
    .await?;
    let core = Row {
        name: "POST /projects (core write path)",
        count: (projects.rps * 3.0) as u64,
        seconds: 3.0,
        p50_ms: Some(projects.p50_ms),
        p99_ms: Some(projects.p99_ms),
        errors: projects.errors,
    };
    api.admin(hyper::Method::POST, "/admin/jobs/lateness/reset")
        .await?;
    let cpu_before = server.cpu_time();
    let (accepted, relayed, sink_done) = relay(&api, &sink, &opts).await?;
    let cpu = server
        .cpu_time()
        .zip(cpu_before)
        .map(|(after, before)| after - before);
    let jobs = api.admin(hyper::Method::GET, "/admin/jobs").await?;

    println!(
        "{:<46} {:>9} {:>9} {:>10} {:>9} {:>9} {:>7}",
        "scenario", "messages", "seconds", "msg/s", "p50 ms", "p99 ms", "errors"
    );
    let ms = |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
    for row in [&direct, &core, &accepted, &relayed] {
        println!(
            "{:<46} {:>9} {:>9.2} {:>10.0} {:>9} {:>9} {:>7}",
            row.name,
            row.count,
            row.seconds,
            row.rate(),
            ms(row.p50_ms),
            ms(row.p99_ms),
            row.errors
        );
    }
    println!(
        "\nrelay end to end: {:.0}% of the direct SMTP baseline; the sink had every message after {sink_done:.2} s",
        100.0 * relayed.rate() / direct.rate()
    );
    if let Some(cpu) = cpu {
        println!(
            "server CPU during the relay run: {:.1} s in {:.1} s, {:.2} cores busy on average ({} cores here)",
            cpu.as_secs_f64(),
            relayed.seconds,
            cpu.as_secs_f64() / relayed.seconds,
            std::thread::available_parallelism().map_or(0, |n| n.get())
        );
    }
    let lateness = &jobs["lateness"];
    println!(
        "delivery jobs started after their due time: p50 {} ms, p99 {} ms, max {} ms ({} runs; the host runs at most 32 jobs at once)",
        lateness["p50Ms"], lateness["p99Ms"], lateness["maxMs"], lateness["samples"]
    );
    println!("target: relay end to end (ledger included) >= 500 messages/s");
    Ok(())
}

/// The sink's throughput with a direct client: `connections` clients, one
/// connection per message.
async fn direct_smtp(sink: &SmtpSink, opts: &Options) -> anyhow::Result<Row> {
    let next = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..opts.connections {
        let (addr, next, errors, total) =
            (sink.addr(), next.clone(), errors.clone(), opts.messages);
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let at = Instant::now();
                if submit(addr).await.is_err() {
                    errors.fetch_add(1, Ordering::Relaxed);
                }
                latencies.push(at.elapsed());
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await?);
    }
    let seconds = started.elapsed().as_secs_f64();
    let (p50, p99) = percentiles(latencies);
    Ok(Row {
        name: "direct SMTP to the sink (baseline)",
        count: sink.count() as u64,
        seconds,
        p50_ms: p50,
        p99_ms: p99,
        errors: errors.load(Ordering::Relaxed),
    })
}

/// One plain SMTP submission on a new connection (TCP_NODELAY, one write
/// per command, like the host's client): EHLO, MAIL, RCPT, DATA, QUIT.
async fn submit(addr: std::net::SocketAddr) -> anyhow::Result<()> {
    let tcp = TcpStream::connect(addr).await?;
    tcp.set_nodelay(true)?;
    let (read, mut write) = tcp.into_split();
    let mut read = BufReader::new(read);
    expect(&mut read, 220).await?;
    let steps: [(&[u8], u16); 6] = [
        (b"EHLO bench.example.com\r\n", 250),
        (b"MAIL FROM:<bench@example.com>\r\n", 250),
        (b"RCPT TO:<reader@example.net>\r\n", 250),
        (b"DATA\r\n", 354),
        (
            b"From: bench@example.com\r\nTo: reader@example.net\r\nSubject: benchmark\r\n\r\nhello from the benchmark\r\n.\r\n",
            250,
        ),
        (b"QUIT\r\n", 221),
    ];
    for (command, code) in steps {
        write.write_all(command).await?;
        expect(&mut read, code).await?;
    }
    Ok(())
}

/// Reads one (possibly multi-line) reply and checks its code.
async fn expect(
    read: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
    code: u16,
) -> anyhow::Result<()> {
    let mut line = String::new();
    loop {
        line.clear();
        if read.read_line(&mut line).await? == 0 {
            bail!("the server closed the connection");
        }
        if line.as_bytes().get(3) != Some(&b'-') {
            break;
        }
    }
    if !line.starts_with(&code.to_string()) {
        bail!("expected {code}, got {}", line.trim_end());
    }
    Ok(())
}

/// Sends every message through the relay; returns the acceptance row, the
/// end-to-end row (until the ledger has every message `sent`) and when the
/// sink had them all.
async fn relay(api: &Api, sink: &SmtpSink, opts: &Options) -> anyhow::Result<(Row, Row, f64)> {
    let body = Arc::new(
        serde_json::json!({
            "from": "Bench <bench@example.com>", "to": ["reader@example.net"],
            "subject": "benchmark", "text": "hello from the benchmark",
        })
        .to_string(),
    );
    let next = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..opts.connections {
        let (api, body, next, errors, total) = (
            api.clone(),
            body.clone(),
            next.clone(),
            errors.clone(),
            opts.messages,
        );
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let at = Instant::now();
                match api.send(hyper::Method::POST, "/email/send", &body).await {
                    Ok((202, _)) => {}
                    _ => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
                latencies.push(at.elapsed());
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await?);
    }
    let accepted_after = started.elapsed().as_secs_f64();
    let errors = errors.load(Ordering::Relaxed);
    let want = opts.messages - errors;
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut sink_done = None;
    let sent = loop {
        if sink_done.is_none() && sink.count() as u64 >= want {
            sink_done = Some(started.elapsed().as_secs_f64());
        }
        let sent = api.sent_total().await?;
        if sent >= want {
            break sent;
        }
        if Instant::now() > deadline {
            bail!("only {sent} of {want} messages were sent after 10 minutes");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let done = started.elapsed().as_secs_f64();
    let (p50, p99) = percentiles(latencies);
    Ok((
        Row {
            name: "POST /email/send accepted (202, queued)",
            count: want,
            seconds: accepted_after,
            p50_ms: p50,
            p99_ms: p99,
            errors,
        },
        Row {
            name: "relay end to end (all sent in the ledger)",
            count: sent,
            seconds: done,
            p50_ms: None,
            p99_ms: None,
            errors,
        },
        sink_done.unwrap_or(done),
    ))
}

fn percentiles(latencies: Vec<Duration>) -> (Option<f64>, Option<f64>) {
    if latencies.is_empty() {
        return (None, None);
    }
    let ms: Vec<f64> = latencies.iter().map(|d| d.as_secs_f64() * 1000.0).collect();
    let (p50, p99) = harness::percentiles(&ms);
    (Some(p50), Some(p99))
}

/// A keep-alive HTTP client for the API with the owner token, and an
/// operator session for `/admin`.
#[derive(Clone)]
struct Api {
    client: Client<HttpConnector, Full<Bytes>>,
    base: String,
    token: String,
    cookie: String,
}

impl Api {
    async fn new(server: &Server) -> anyhow::Result<Api> {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        let mut api = Api {
            client: Client::builder(TokioExecutor::new()).build(connector),
            base: format!("{}/api/v1", server.base),
            token: server.token.clone(),
            cookie: String::new(),
        };
        let login = Request::post(format!("{}/admin/login", api.base))
            .header("content-type", "application/json")
            .body(Full::new(Bytes::from(
                serde_json::json!({ "password": ADMIN_PASSWORD }).to_string(),
            )))?;
        let response = api.client.request(login).await?;
        api.cookie = response
            .headers()
            .get("set-cookie")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .context("the admin login sets a session cookie")?
            .to_owned();
        Ok(api)
    }

    /// An `/admin` call with the operator session; the JSON answer.
    async fn admin(&self, method: hyper::Method, path: &str) -> anyhow::Result<serde_json::Value> {
        let request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("cookie", &self.cookie)
            .body(Full::new(Bytes::new()))?;
        let response = self.client.request(request).await?;
        let status = response.status();
        let body = response.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            bail!(
                "{path} answered {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        Ok(if body.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_slice(&body)?
        })
    }

    async fn send(
        &self,
        method: hyper::Method,
        path: &str,
        body: &str,
    ) -> anyhow::Result<(u16, Bytes)> {
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.base))
            .header("authorization", format!("Bearer {}", self.token));
        if !body.is_empty() {
            request = request.header("content-type", "application/json");
        }
        let response = self
            .client
            .request(request.body(Full::new(Bytes::from(body.to_owned())))?)
            .await?;
        let status = response.status().as_u16();
        Ok((status, response.into_body().collect().await?.to_bytes()))
    }

    /// The ledger's count of sent messages.
    async fn sent_total(&self) -> anyhow::Result<u64> {
        let (status, body) = self
            .send(
                hyper::Method::GET,
                "/email/messages?status=sent&limit=1",
                "",
            )
            .await?;
        if status != 200 {
            bail!(
                "the ledger answered {status}: {}",
                String::from_utf8_lossy(&body)
            );
        }
        let page: serde_json::Value = serde_json::from_slice(&body)?;
        page["total"].as_u64().context("the ledger has a total")
    }
}
