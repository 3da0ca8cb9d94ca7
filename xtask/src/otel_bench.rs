//! `cargo xtask bench otel [--spans N] [--rounds N]`: OTLP spans ingested
//! per second from the Python exporter (`opentelemetry-sdk` with
//! `opentelemetry-exporter-otlp-proto-http`, unchanged, configured only by
//! `OTEL_EXPORTER_OTLP_ENDPOINT` and `OTEL_EXPORTER_OTLP_HEADERS`), in
//! batches of 512 as its `BatchSpanProcessor` sends them; against the
//! same exporter sending to a local OTLP receiver that answers at once
//! and keeps nothing, in the same run (the exporter's own ceiling). Then
//! a check that the traces query finds the spans. SQLite; release build
//! unless `BENCH_PROFILE=debug`.

use std::convert::Infallible;
use std::process::Stdio;

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Method, Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::harness::{Api, call, parse_flags};
use crate::server::{Server, debug_profile};

pub struct Options {
    pub spans: u64,
    pub rounds: u32,
}

impl Options {
    pub fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut opts = Options {
            spans: 20_480,
            rounds: 3,
        };
        parse_flags(args, "--spans N, --rounds N", |flag, value| {
            match flag {
                "--spans" => opts.spans = value.parse()?,
                "--rounds" => opts.rounds = value.parse()?,
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        if opts.spans == 0 || opts.rounds == 0 {
            bail!("--spans and --rounds must be at least 1");
        }
        Ok(opts)
    }
}

/// Records `n` spans in memory (3 attributes each, one service), then
/// times only their export, 512 per request; prints one JSON line.
const EXPORT: &str = r#"
import json, sys, time
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

n = int(sys.argv[1])
memory = InMemorySpanExporter()
provider = TracerProvider(resource=Resource.create({"service.name": "bench"}))
provider.add_span_processor(SimpleSpanProcessor(memory))
tracer = provider.get_tracer("bench")
for i in range(n // 4):
    with tracer.start_as_current_span("GET /items", attributes={"http.route": "/items", "i": i}):
        for step in ("auth", "query", "render"):
            with tracer.start_as_current_span(step, attributes={"step": step}):
                pass
spans = memory.get_finished_spans()
exporter = OTLPSpanExporter()
failed = 0
start = time.monotonic()
for i in range(0, len(spans), 512):
    if exporter.export(spans[i:i + 512]).name != "SUCCESS":
        failed += 1
print(json.dumps({"spans": len(spans), "seconds": time.monotonic() - start, "failedBatches": failed}))
"#;

/// A local OTLP/HTTP receiver that answers every request with an empty
/// protobuf `ExportTraceServiceResponse`.
async fn null_receiver() -> anyhow::Result<String> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(|req: Request<hyper::body::Incoming>| async move {
                        use http_body_util::BodyExt;
                        let _ = req.into_body().collect().await;
                        let mut res = Response::new(Full::new(Bytes::new()));
                        res.headers_mut().insert(
                            "content-type",
                            hyper::header::HeaderValue::from_static("application/x-protobuf"),
                        );
                        Ok::<_, Infallible>(res)
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(format!("http://{addr}"))
}

/// Runs the export script against `endpoint`; (spans, seconds).
async fn export(
    python: &std::path::Path,
    endpoint: &str,
    token: &str,
    n: u64,
) -> anyhow::Result<(u64, f64)> {
    let dir = tempfile::tempdir()?;
    let script = dir.path().join("export.py");
    std::fs::write(&script, EXPORT)?;
    let out = tokio::process::Command::new(python)
        .arg(&script)
        .arg(n.to_string())
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            format!("plateau-otel-token={token}"),
        )
        .stdin(Stdio::null())
        .output()
        .await
        .context("running python3")?;
    if !out.status.success() {
        bail!("export.py failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line: Value = serde_json::from_str(stdout.lines().last().unwrap_or_default())
        .with_context(|| format!("export.py printed {stdout}"))?;
    if line["failedBatches"] != 0 {
        bail!("batches failed: {line}");
    }
    Ok((
        line["spans"].as_u64().unwrap_or(0),
        line["seconds"].as_f64().unwrap_or(f64::NAN),
    ))
}

pub async fn run(opts: Options) -> anyhow::Result<()> {
    let python =
        crate::setup::ensure_python_packages(crate::setup::OTEL_PYTHON_PACKAGES)?.join("python3");
    let server = Server::start_release().await?;
    let api = Api::new(&server);
    let (status, token) = api.post("/otel/tokens", &json!({"name": "bench"})).await?;
    if status != 201 {
        bail!("creating the ingest token answered {status}: {token}");
    }
    let token = token["token"].as_str().unwrap_or_default().to_owned();
    let platform = format!("{}/otel/ingest", api.base);
    let null = null_receiver().await?;
    println!(
        "otel benchmark: {} spans per round (trees of 4, 512 per request) from the Python OTLP/HTTP exporter, {} rounds, SQLite, {} build\n",
        opts.spans,
        opts.rounds,
        if debug_profile() { "debug" } else { "release" }
    );
    println!(
        "{:<7} {:>22} {:>24} {:>8}",
        "round", "platform spans/s", "null receiver spans/s", "ratio"
    );
    let (mut stored, mut ratios) = (0, Vec::new());
    for round in 1..=opts.rounds {
        let (n, secs) = export(&python, &platform, &token, opts.spans).await?;
        let (m, null_secs) = export(&python, &null, &token, opts.spans).await?;
        stored += n;
        let (rate, null_rate) = (n as f64 / secs, m as f64 / null_secs);
        ratios.push(rate / null_rate);
        println!(
            "{round:<7} {rate:>22.0} {null_rate:>24.0} {:>7.0}%",
            100.0 * rate / null_rate
        );
    }
    let auth = format!("Bearer {}", api.token);
    let (status, body) = call(
        &api.client,
        Method::GET,
        &format!("{}/otel/traces?service=bench&limit=1", api.base),
        &[("authorization", &auth)],
        None,
    )
    .await?;
    let traces: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    ratios.sort_by(f64::total_cmp);
    println!(
        "\n{stored} spans accepted; the traces query answered {status} with {} traces in all; median ratio {:.0}%",
        traces["total"],
        100.0 * ratios[ratios.len() / 2]
    );
    Ok(())
}
