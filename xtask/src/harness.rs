//! What the benchmarks share: their `--flag value` options, the HTTP
//! client and calls, the JSON API of a started server (owner token and
//! operator session), and the samples of an operation with their
//! percentile table.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use crate::server::{ADMIN_PASSWORD, Server};

pub type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// Reads `--flag value` pairs: `set` takes each and answers false for a
/// flag it does not know (an error naming `usage`).
pub fn parse_flags(
    args: &[&str],
    usage: &str,
    mut set: impl FnMut(&str, &str) -> anyhow::Result<bool>,
) -> anyhow::Result<()> {
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let value = it.next().with_context(|| format!("{flag} needs a value"))?;
        if !set(flag, value)? {
            bail!("unknown option {flag} (use {usage})");
        }
    }
    Ok(())
}

/// The wall clock in milliseconds.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A client with `TCP_NODELAY`; without keep-alive, a new connection per
/// request.
pub fn http_client(keep_alive: bool) -> HttpClient {
    let mut connector = HttpConnector::new();
    connector.set_nodelay(true);
    let mut builder = Client::builder(TokioExecutor::new());
    if !keep_alive {
        builder.pool_max_idle_per_host(0);
    }
    builder.build(connector)
}

/// One request; the status and the body.
pub async fn call(
    client: &HttpClient,
    method: Method,
    url: &str,
    headers: &[(&str, &str)],
    body: Option<String>,
) -> anyhow::Result<(StatusCode, Bytes)> {
    let mut req = Request::builder().method(method).uri(url);
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let req = req.body(Full::new(Bytes::from(body.unwrap_or_default())))?;
    let res = client
        .request(req)
        .await
        .with_context(|| format!("requesting {url}"))?;
    let status = res.status();
    let body = res.into_body().collect().await?.to_bytes();
    Ok((status, body))
}

/// Logs in as the operator; the session cookie.
pub async fn login(client: &HttpClient, api: &str) -> anyhow::Result<String> {
    let body = json!({ "password": ADMIN_PASSWORD }).to_string();
    let req = Request::post(format!("{api}/admin/login"))
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body)))?;
    let res = client.request(req).await.context("admin login")?;
    if res.status() != StatusCode::OK {
        bail!("admin login answered {}", res.status());
    }
    let cookie = res
        .headers()
        .get("set-cookie")
        .and_then(|v| v.to_str().ok())
        .context("admin login set no cookie")?;
    Ok(cookie.split(';').next().unwrap_or_default().to_owned())
}

/// The API of a started server (`.../api/v1`) with the bootstrap token,
/// on one keep-alive client.
#[derive(Clone)]
pub struct Api {
    pub client: HttpClient,
    pub base: String,
    pub token: String,
}

impl Api {
    pub fn new(server: &Server) -> Api {
        Api {
            client: http_client(true),
            base: format!("{}/api/v1", server.base),
            token: server.token.clone(),
        }
    }

    /// A JSON POST with the token; the status and the JSON answer (null
    /// when it is not JSON).
    pub async fn post(&self, path: &str, body: &Value) -> anyhow::Result<(u16, Value)> {
        let auth = format!("Bearer {}", self.token);
        let (status, bytes) = call(
            &self.client,
            Method::POST,
            &format!("{}{path}", self.base),
            &[
                ("authorization", &auth),
                ("content-type", "application/json"),
            ],
            Some(body.to_string()),
        )
        .await?;
        let value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Ok((status.as_u16(), value))
    }
}

/// Latencies and outcomes of one operation.
#[derive(Default)]
pub struct Samples {
    pub latencies: Vec<Duration>,
    /// 409s.
    pub conflicts: u64,
    /// Empty answers (204, nothing to do).
    pub empty: u64,
    pub errors: u64,
}

impl Samples {
    pub fn merge(&mut self, from: Samples) {
        self.latencies.extend(from.latencies);
        self.conflicts += from.conflicts;
        self.empty += from.empty;
        self.errors += from.errors;
    }
}

/// Prints one row per operation: calls, p50 and p99 in ms, 409s, empty
/// answers and errors.
pub fn print_samples(rows: &[(&str, &Samples)]) {
    println!(
        "{:<28} {:>8} {:>9} {:>9} {:>8} {:>7} {:>7}",
        "operation", "calls", "p50 ms", "p99 ms", "409s", "empty", "errors"
    );
    for (name, s) in rows {
        let ms: Vec<f64> = s
            .latencies
            .iter()
            .map(|d| d.as_secs_f64() * 1000.0)
            .collect();
        let (p50, p99) = percentiles(&ms);
        println!(
            "{name:<28} {:>8} {p50:>9.2} {p99:>9.2} {:>8} {:>7} {:>7}",
            s.latencies.len(),
            s.conflicts,
            s.empty,
            s.errors
        );
    }
}

/// p50 and p99 of `samples` (nearest rank; zeros when empty).
pub fn percentiles(samples: &[f64]) -> (f64, f64) {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    (percentile(&sorted, 0.50), percentile(&sorted, 0.99))
}

/// The `q` quantile of `sorted` (nearest rank; zero when empty).
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}
