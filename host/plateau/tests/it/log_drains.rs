//! The built-in log drains plugin over HTTP, end to end: an app deployed
//! on the host prints lines on stdout and stderr, and drains forward them,
//! with the organisation's events, to an HTTP sink in the test (gzipped
//! NDJSON, signatures verified by the `standardwebhooks` library, PyPI)
//! and to a real rsyslog (Debian `rsyslog` and `rsyslog-gnutls`) started
//! here with its own configuration, speaking RFC 5424 over TLS. The sink
//! fails its first requests, so the drain retries the same batch, reports
//! `failing` then `healthy`, and loses nothing. Also: a level filter,
//! validation naming each field, and another organisation's drain that
//! sees none of these lines. One server on SQLite.

use std::collections::HashMap;
use std::io::Read as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path as UrlPath, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::{Value, json};

use crate::apps::{Apps, Edge, id, slug};
use crate::standard_webhooks::Signed;

/// One batch a sink received, decompressed.
#[derive(Clone, Debug)]
struct Batch {
    id: String,
    timestamp: String,
    signature: String,
    encoding: String,
    body: String,
    /// Whether the sink acknowledged it (2xx).
    acked: bool,
}

#[derive(Default)]
struct Sinks {
    received: HashMap<String, Vec<Batch>>,
    /// How many more requests each sink answers 500.
    fail_next: HashMap<String, usize>,
}

type Shared = Arc<Mutex<Sinks>>;

async fn receive(
    State(sinks): State<Shared>,
    UrlPath(name): UrlPath<String>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let header = |n: &str| {
        headers
            .get(n)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    let mut text = String::new();
    flate2::read::GzDecoder::new(&body[..])
        .read_to_string(&mut text)
        .expect("a gzipped body");
    let mut sinks = sinks.lock().unwrap();
    let status = match sinks.fail_next.get_mut(&name) {
        Some(n) if *n > 0 => {
            *n -= 1;
            StatusCode::INTERNAL_SERVER_ERROR
        }
        _ => StatusCode::NO_CONTENT,
    };
    sinks.received.entry(name.clone()).or_default().push(Batch {
        id: header("webhook-id"),
        timestamp: header("webhook-timestamp"),
        signature: header("webhook-signature"),
        encoding: header("content-encoding"),
        body: text,
        acked: status.is_success(),
    });
    status
}

async fn sinks() -> (SocketAddr, Shared) {
    let shared: Shared = Arc::default();
    let app = Router::new()
        .route("/{name}", post(receive))
        .with_state(shared.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, shared)
}

fn batches(sinks: &Shared, name: &str) -> Vec<Batch> {
    let sinks = sinks.lock().unwrap();
    sinks.received.get(name).cloned().unwrap_or_default()
}

/// Every NDJSON line of the batches a sink acknowledged, in order.
fn lines(sinks: &Shared, name: &str) -> Vec<Value> {
    batches(sinks, name)
        .iter()
        .filter(|b| b.acked)
        .flat_map(|b| b.body.lines().map(|l| serde_json::from_str(l).unwrap()))
        .collect::<Vec<Value>>()
}

/// Polls `check` every 100 ms (deliveries run on the drains' jobs).
async fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let started = Instant::now();
    for _ in 0..1200 {
        if let Some(v) = check() {
            eprintln!("{what}: {:.1} s", started.elapsed().as_secs_f64());
            return v;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("waited for {what}");
}

/// A real rsyslog listening for RFC 5425 (syslog over TLS) on `port`,
/// writing each message as `app|procid|msgid|severity|sd|msg`.
struct Rsyslog {
    child: tokio::process::Child,
    output: PathBuf,
    port: u16,
    roots: PathBuf,
    _dir: tempfile::TempDir,
}

fn openssl(dir: &Path, args: &[&str]) {
    let out = std::process::Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .expect("openssl runs");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Rsyslog {
    async fn start() -> Rsyslog {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // A CA, and a certificate for localhost that it signed.
        openssl(
            d,
            &[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "ca.key",
                "-out",
                "ca.pem",
                "-days",
                "2",
                "-subj",
                "/CN=log drains test CA",
            ],
        );
        openssl(
            d,
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                "key.pem",
                "-out",
                "leaf.csr",
                "-subj",
                "/CN=localhost",
            ],
        );
        std::fs::write(
            d.join("ext.cnf"),
            "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n",
        )
        .unwrap();
        openssl(
            d,
            &[
                "x509",
                "-req",
                "-in",
                "leaf.csr",
                "-CA",
                "ca.pem",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                "cert.pem",
                "-days",
                "2",
                "-extfile",
                "ext.cnf",
            ],
        );
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let p = d.display();
        let config = format!(
            r#"global(workDirectory="{p}"
       DefaultNetstreamDriver="gtls"
       DefaultNetstreamDriverCAFile="{p}/ca.pem"
       DefaultNetstreamDriverCertFile="{p}/cert.pem"
       DefaultNetstreamDriverKeyFile="{p}/key.pem")
module(load="imtcp" StreamDriver.Name="gtls" StreamDriver.Mode="1" StreamDriver.AuthMode="anon")
template(name="drained" type="string" string="%app-name%|%procid%|%msgid%|%syslogseverity-text%|%structured-data%|%msg%\n")
ruleset(name="drain") {{
  action(type="omfile" file="{p}/received.log" template="drained")
}}
input(type="imtcp" port="{port}" address="127.0.0.1" ruleset="drain")
"#
        );
        std::fs::write(d.join("rsyslog.conf"), config).unwrap();
        let child = tokio::process::Command::new("rsyslogd")
            .args(["-n", "-f"])
            .arg(d.join("rsyslog.conf"))
            .arg("-i")
            .arg(d.join("rsyslog.pid"))
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("rsyslogd is required: cargo xtask test installs rsyslog and rsyslog-gnutls");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        wait_for("rsyslog to listen", || {
            std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(100)).ok()
        })
        .await;
        Rsyslog {
            child,
            output: d.join("received.log"),
            port,
            roots: d.join("ca.pem"),
            _dir: dir,
        }
    }

    fn received(&self) -> Vec<String> {
        std::fs::read_to_string(&self.output)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// Verifies each batch's signature over its NDJSON with the
/// `standardwebhooks` library; one `ok` or `bad` per batch.
async fn verify(secret: &str, batches: &[Batch]) -> Vec<String> {
    let cases: Vec<_> = batches
        .iter()
        .map(|b| {
            let signed = Signed {
                id: &b.id,
                timestamp: &b.timestamp,
                signature: &b.signature,
                body: &b.body,
            };
            (secret, signed)
        })
        .collect();
    crate::standard_webhooks::verify(&cases, false).await
}

async fn create(c: &Client, body: Value) -> Value {
    let r = c.post("/log-drains", body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

fn messages(lines: &[Value], stream: &str) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l["source"] == "app" && l["stream"] == stream)
        .map(|l| l["message"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn log_drains_forward_to_https_and_syslog_over_tls() {
    let (addr, sinks) = sinks().await;
    let syslog = Rsyslog::start().await;
    let env = Apps::start_with(
        ServerOptions::new(Backend::Sqlite)
            .env("PLATEAU_EGRESS_ALLOW", "127.0.0.0/8")
            .env("PLATEAU_EGRESS_CA_FILE", syslog.roots.to_str().unwrap()),
    )
    .await;
    let c = env.client();
    let sink = |name: &str| format!("http://{addr}/{name}");

    // Bad input names each field.
    let r = c
        .post(
            "/log-drains",
            json!({ "name": "x", "url": "ftp://x", "sources": ["app", "database"], "minLevel": "loud" }),
        )
        .await;
    assert_eq!((r.status, r.code().as_str()), (400, "validation_failed"));
    let fields: Vec<String> = r.json()["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(fields, ["url", "sources[1]", "minLevel"], "{}", r.text());

    let app = env.deployed("drained", &env.v1).await;
    let app_id = id(&app);
    // The sink fails the first two requests: the same batch comes again.
    sinks.lock().unwrap().fail_next.insert("all".into(), 2);
    let all = create(
        &c,
        json!({ "name": "everything", "url": sink("all"), "sources": ["app", "event"] }),
    )
    .await;
    let secret = all["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{all}");
    let errors = create(
        &c,
        json!({ "name": "errors", "url": sink("errors"), "minLevel": "error", "apps": [app_id] }),
    )
    .await;
    let tls = create(
        &c,
        json!({ "name": "syslog", "url": format!("syslog+tls://localhost:{}", syslog.port) }),
    )
    .await;
    assert!(
        tls.get("secret").is_none() && tls["kind"] == "syslog",
        "{tls}"
    );
    let got = c.get(&format!("/log-drains/{}", id(&all))).await.json();
    assert!(
        got.get("secret").is_none() && got["kind"] == "https",
        "{got}"
    );

    // The app prints a line on stdout and one on stderr per request.
    let edge = Edge::new(&env.server, &slug(&app));
    const REQUESTS: usize = 20;
    let sent = Instant::now();
    for i in 0..REQUESTS {
        let answer = edge.get(&format!("/drain-{i}")).await;
        assert!(matches!(answer, Ok((200, _))), "{answer:?}");
    }
    let r = c
        .post("/projects", json!({ "name": "drained-project" }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let wanted: Vec<String> = (0..REQUESTS)
        .map(|i| format!("v1 served /drain-{i}"))
        .collect();
    let stderr_wanted: Vec<String> = (0..REQUESTS)
        .map(|i| format!("v1 stderr /drain-{i}"))
        .collect();

    // HTTPS: every line, in order, with the event, after two failures.
    let got = wait_for("every line at the https sink", || {
        let l = lines(&sinks, "all");
        let has_event = l.iter().any(|x| x["type"] == "project.created");
        let served = messages(&l, "stdout");
        (has_event && wanted.iter().all(|w| served.contains(w))).then_some(l)
    })
    .await;
    eprintln!(
        "https: {} lines in {} requests, {:.1} s after the first app request",
        got.len(),
        batches(&sinks, "all").len(),
        sent.elapsed().as_secs_f64()
    );
    let served: Vec<String> = messages(&got, "stdout")
        .into_iter()
        .filter(|m| m.contains("/drain-"))
        .collect();
    assert_eq!(served, wanted, "app lines arrive once each, in order");
    assert_eq!(
        messages(&got, "stderr")
            .into_iter()
            .filter(|m| m.contains("/drain-"))
            .collect::<Vec<_>>(),
        stderr_wanted
    );
    let line = got.iter().find(|l| l["stream"] == "stderr").unwrap();
    assert_eq!(line["app"]["id"], app_id.as_str(), "{line}");
    assert_eq!(line["app"]["name"], "drained", "{line}");
    assert_eq!(line["level"], "error", "{line}");
    let event = got.iter().find(|l| l["type"] == "project.created").unwrap();
    assert_eq!(event["event"]["data"]["name"], "drained-project", "{event}");
    let all_batches = batches(&sinks, "all");
    assert!(all_batches.iter().all(|b| b.encoding == "gzip"));
    let first = &all_batches[0];
    assert!(
        !first.acked && !all_batches[1].acked,
        "the sink failed twice"
    );
    let acked = all_batches.iter().find(|b| b.acked).unwrap();
    assert_eq!(first.id, acked.id, "a retried batch keeps its webhook-id");
    assert!(
        acked.body.starts_with(&first.body),
        "a retried batch starts with the same lines"
    );
    let verdicts = verify(&secret, &all_batches).await;
    assert!(
        verdicts.len() == all_batches.len() && verdicts.iter().all(|v| v == "ok"),
        "{verdicts:?}"
    );

    // The level filter: only stderr, which is error.
    let only_errors = wait_for("the error lines at the filtered sink", || {
        let l = lines(&sinks, "errors");
        let errs = messages(&l, "stderr");
        stderr_wanted.iter().all(|w| errs.contains(w)).then_some(l)
    })
    .await;
    assert!(
        only_errors
            .iter()
            .all(|l| l["level"] == "error" && l["source"] == "app"),
        "{only_errors:?}"
    );

    // Syslog over TLS, into a real rsyslog.
    let received = wait_for("every line at rsyslog", || {
        let r = syslog.received();
        wanted
            .iter()
            .chain(&stderr_wanted)
            .all(|w| r.iter().any(|l| l.ends_with(w.as_str())))
            .then_some(r)
    })
    .await;
    eprintln!("rsyslog: {} messages", received.len());
    let stderr_line = received
        .iter()
        .find(|l| l.ends_with("v1 stderr /drain-0"))
        .unwrap();
    let fields: Vec<&str> = stderr_line.splitn(6, '|').collect();
    assert_eq!(fields[0], "drained", "{stderr_line}");
    assert_eq!(fields[2], "stderr", "{stderr_line}");
    assert_eq!(fields[3], "err", "{stderr_line}");
    assert!(
        fields[4].starts_with("[plateau@32473 ") && fields[4].contains(&app_id),
        "{stderr_line}"
    );

    // The delivery status, and the events of the failure and the recovery.
    let status = c.get(&format!("/log-drains/{}", id(&all))).await.json();
    let delivery = &status["delivery"];
    assert_eq!(delivery["status"], "healthy", "{status}");
    assert_eq!(delivery["failures"], 0, "{status}");
    assert_eq!(delivery["dropped"], 0, "{status}");
    assert!(
        delivery["delivered"].as_u64().unwrap() >= got.len() as u64,
        "{status}"
    );
    for kind in ["log-drains.drain.failing", "log-drains.drain.recovered"] {
        let page = c.get(&format!("/events?type={kind}")).await.json();
        assert_eq!(page["items"].as_array().unwrap().len(), 1, "{kind}: {page}");
    }
    let list = c.get("/log-drains").await.json();
    assert_eq!(list["items"].as_array().unwrap().len(), 3, "{list}");

    // Another organisation's drain hears its own events and none of these
    // lines: its project event comes after all of them.
    let other = Client::new(&env.server.url)
        .with_token(&crate::create_org(&env.server, "other-drains", "free").await);
    create(
        &other,
        json!({ "name": "mine", "url": sink("other"), "sources": ["app", "event"] }),
    )
    .await;
    let r = other
        .post("/projects", json!({ "name": "other-project" }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let theirs = wait_for("the other organisation's event", || {
        let l = lines(&sinks, "other");
        l.iter()
            .any(|x| x["type"] == "project.created")
            .then_some(l)
    })
    .await;
    assert!(
        theirs
            .iter()
            .all(|l| l["source"] == "event" && l["event"]["data"]["name"] != "drained-project"),
        "{theirs:?}"
    );
    // A free organisation has one drain.
    let r = other
        .post(
            "/log-drains",
            json!({ "name": "two", "url": sink("other") }),
        )
        .await;
    assert_eq!((r.status, r.code().as_str()), (409, "plan_limit_reached"));

    // Deleting a drain stops it; an unknown id is a 404.
    let r = c.delete(&format!("/log-drains/{}", id(&errors))).await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = c.get(&format!("/log-drains/{}", id(&errors))).await;
    assert_eq!(r.status, 404, "{}", r.text());
    drop(syslog.child);
}
