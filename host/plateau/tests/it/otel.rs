//! The built-in OpenTelemetry plugin over HTTP, fed by the Python
//! `opentelemetry-sdk` with its OTLP/HTTP exporter
//! (`opentelemetry-exporter-otlp-proto-http`, PyPI), unchanged and
//! configured only by `OTEL_EXPORTER_OTLP_ENDPOINT` and
//! `OTEL_EXPORTER_OTLP_HEADERS`: a trace of nested spans, a counter and a
//! log written inside a span come back through the queries (the span tree,
//! the series, the log by trace id); a wrong token is refused; another
//! organisation sees nothing; gzipped OTLP/JSON, 413 and 415 from a raw
//! client; and the exporter's spans per second, printed. One server on
//! SQLite.

use std::io::Write;
use std::process::Stdio;

use plateau_testkit::{Backend, Client, ServerOptions};
use reqwest::Method;
use serde_json::{Value, json};

use crate::{create_org, start_with};

const EXPORT: &str = r#"
import json, logging, sys, time
from opentelemetry import trace
from opentelemetry._logs import set_logger_provider
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk._logs import LoggerProvider, LoggingHandler
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter

mode = sys.argv[1]
resource = Resource.create({"service.name": "checkout", "deployment.environment": "test"})

def recorded(n):
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=resource)
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("bench")
    for i in range(n):
        with tracer.start_as_current_span("op", attributes={"i": i}):
            pass
    return memory.get_finished_spans()

if mode == "wrong":
    print(json.dumps({"result": OTLPSpanExporter().export(recorded(1)).name}))
    sys.exit(0)

if mode == "bench":
    spans = recorded(int(sys.argv[2]))
    exporter = OTLPSpanExporter()
    failed = 0
    start = time.monotonic()
    for i in range(0, len(spans), 512):
        if exporter.export(spans[i:i + 512]).name != "SUCCESS":
            failed += 1
    print(json.dumps({"spans": len(spans), "seconds": time.monotonic() - start, "failedBatches": failed}))
    sys.exit(0)

tracer_provider = TracerProvider(resource=resource)
tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
reader = PeriodicExportingMetricReader(OTLPMetricExporter(), export_interval_millis=60000)
meter_provider = MeterProvider(resource=resource, metric_readers=[reader])
logger_provider = LoggerProvider(resource=resource)
logger_provider.add_log_record_processor(BatchLogRecordProcessor(OTLPLogExporter()))
set_logger_provider(logger_provider)
log = logging.getLogger("checkout")
log.addHandler(LoggingHandler(level=logging.INFO, logger_provider=logger_provider))
log.setLevel(logging.INFO)

tracer = tracer_provider.get_tracer("shop")
orders = meter_provider.get_meter("shop").create_counter("orders.placed", unit="1")
with tracer.start_as_current_span("POST /checkout", kind=trace.SpanKind.SERVER,
                                  attributes={"http.route": "/checkout"}) as root:
    with tracer.start_as_current_span("reserve stock"):
        with tracer.start_as_current_span("SELECT stock", attributes={"db.system": "postgresql"}):
            time.sleep(0.02)
    with tracer.start_as_current_span("charge card"):
        log.warning("card declined, retrying")
        orders.add(3, {"region": "eu"})
    trace_id = format(root.get_span_context().trace_id, "032x")
tracer_provider.shutdown()
meter_provider.shutdown()
logger_provider.shutdown()
print(json.dumps({"traceId": trace_id}))
"#;

/// Runs the export script with the two variables set; its JSON line.
async fn export(endpoint: &str, token: &str, args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("export.py");
    std::fs::write(&script, EXPORT).unwrap();
    let out = tokio::process::Command::new("python3")
        .arg(&script)
        .args(args)
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env(
            "OTEL_EXPORTER_OTLP_HEADERS",
            format!("plateau-otel-token={token}"),
        )
        .stdin(Stdio::null())
        .output()
        .await
        .expect("python3 runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("No module named"),
        "opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http are required: cargo xtask test installs them ({stderr})"
    );
    assert!(out.status.success(), "export.py failed: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(line).unwrap_or_else(|_| panic!("export.py printed {stdout:?}; {stderr}"))
}

fn names(spans: &Value) -> Vec<String> {
    spans
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap().to_owned())
        .collect()
}

async fn get(c: &Client, path: &str) -> Value {
    let r = c.get(path).await;
    assert_eq!(r.status, 200, "{path}: {}", r.text());
    r.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_exporter_sends_traces_metrics_and_logs() {
    let s = start_with(ServerOptions::new(Backend::Sqlite)).await;
    let c = s.client();
    let r = c.post("/otel/tokens", json!({ "name": "checkout" })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let token = r.json()["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("plto_"), "{token}");
    let endpoint = format!("{}/api/v1/otel/ingest", s.url);

    let sent = export(&endpoint, &token, &["main"]).await;
    let trace = sent["traceId"].as_str().unwrap().to_owned();

    // The trace, found by service, span name, duration and attribute.
    let found = get(&c, "/otel/traces?service=checkout&name=SELECT%20stock&minDurationMs=15&attr.db.system=postgresql").await;
    assert_eq!(found["items"][0]["traceId"], trace.as_str(), "{found}");
    assert_eq!(found["items"][0]["rootName"], "POST /checkout");
    assert_eq!(found["items"][0]["spanCount"], 4);
    let slow = get(&c, "/otel/traces?name=SELECT%20stock&minDurationMs=60000").await;
    assert_eq!(slow["items"], json!([]));

    // Its span tree.
    let tree = get(&c, &format!("/otel/traces/{trace}")).await;
    let root = &tree["spans"][0];
    assert_eq!(root["name"], "POST /checkout", "{tree}");
    assert_eq!(root["kind"], "server");
    assert_eq!(root["service"], "checkout");
    assert_eq!(names(&root["children"]), ["reserve stock", "charge card"]);
    assert_eq!(names(&root["children"][0]["children"]), ["SELECT stock"]);

    // The counter, by name and attribute.
    let series = get(&c, "/otel/metrics?name=orders.placed&attr.region=eu").await;
    assert_eq!(series["items"][0]["kind"], "sum", "{series}");
    assert_eq!(series["items"][0]["points"][0]["value"], 3);
    assert_eq!(
        get(&c, "/otel/metrics?name=orders.placed&attr.region=us").await["items"],
        json!([])
    );

    // The log, correlated to the trace and to the span it was written in.
    let logs = get(&c, &format!("/otel/logs?traceId={trace}")).await;
    assert_eq!(
        logs["items"][0]["body"], "card declined, retrying",
        "{logs}"
    );
    assert_eq!(logs["items"][0]["severityNumber"], 13);
    let charge = &root["children"][1];
    assert_eq!(logs["items"][0]["spanId"], charge["spanId"]);

    // A wrong token is refused: the exporter reports a failure, and a raw
    // request gets 401.
    let wrong = export(&endpoint, "plto_not-a-token", &["wrong"]).await;
    assert_eq!(wrong["result"], "FAILURE");
    let anonymous = s.anonymous();
    let r = anonymous
        .request(Method::POST, "/otel/ingest/v1/traces")
        .header("plateau-otel-token", "plto_not-a-token")
        .body("application/x-protobuf", Vec::new())
        .send()
        .await;
    assert_eq!(r.status, 401, "{}", r.text());

    // Another organisation sees nothing.
    let other = s
        .client()
        .with_token(&create_org(&s, "elsewhere", "pro").await);
    assert_eq!(get(&other, "/otel/traces").await["items"], json!([]));
    assert_eq!(
        get(&other, &format!("/otel/logs?traceId={trace}")).await["items"],
        json!([])
    );
    assert_eq!(get(&other, "/otel/metrics").await["items"], json!([]));
    assert_eq!(
        other.get(&format!("/otel/traces/{trace}")).await.status,
        404
    );

    // Gzipped OTLP/JSON from a raw client, answered in JSON.
    let body = json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "raw"}}]},
        "scopeSpans": [{"spans": [{
            "traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",
            "name": "gzipped", "startTimeUnixNano": "1700000000000000000",
            "endTimeUnixNano": "1700000000500000000"}, {"traceId": "", "spanId": "", "name": "bad"}]}]}]});
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(body.to_string().as_bytes()).unwrap();
    let r = anonymous
        .request(Method::POST, "/otel/ingest/v1/traces")
        .header("plateau-otel-token", &token)
        .header("content-encoding", "gzip")
        .body("application/json", gz.finish().unwrap())
        .send()
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json()["partialSuccess"]["rejectedSpans"],
        1,
        "{}",
        r.text()
    );
    assert_eq!(
        get(&c, "/otel/traces?service=raw").await["items"][0]["rootName"],
        "gzipped"
    );

    // Another content type is 415, a body that does not decode 400, one
    // over the API's body limit 413.
    let raw = |content_type: &'static str, body: Vec<u8>| {
        anonymous
            .request(Method::POST, "/otel/ingest/v1/logs")
            .header("plateau-otel-token", &token)
            .body(content_type, body)
            .send()
    };
    assert_eq!(raw("text/plain", b"hi".to_vec()).await.status, 415);
    let bad = raw("application/json", b"{\"resourceLogs\": 7}".to_vec()).await;
    assert_eq!(bad.status, 400, "{}", bad.text());
    assert!(
        bad.text().contains("ExportLogsServiceRequest"),
        "{}",
        bad.text()
    );
    assert_eq!(
        raw("application/x-protobuf", vec![0; 2 << 20]).await.status,
        413
    );

    // Spans per second from the exporter, end to end.
    let n = 5_000;
    let bench = export(&endpoint, &token, &["bench", &n.to_string()]).await;
    assert_eq!(bench["failedBatches"], 0, "{bench}");
    let seconds = bench["seconds"].as_f64().unwrap();
    eprintln!(
        "otel ingest: {n} spans from the Python OTLP/HTTP exporter in {seconds:.2} s, {:.0} spans/s",
        n as f64 / seconds
    );
}
