//! The client commands' HTTP client: the server's URL and token resolved
//! once, JSON in and out, and every failure turned into one sentence that
//! names the problem's code (`no such app (not_found)`), never a raw
//! library message.

use reqwest::{Method, StatusCode};
use serde_json::Value;

use super::Global;
use super::session::{self, DEFAULT_URL};

/// A connection to one server's API.
pub struct Api {
    http: reqwest::Client,
    /// The server's base URL, without the API prefix.
    pub url: String,
    token: String,
    /// Print JSON answers instead of text.
    pub json: bool,
}

impl Api {
    pub fn new(url: &str, token: &str, json: bool) -> Api {
        Api {
            http: reqwest::Client::new(),
            url: url.trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            json,
        }
    }

    /// From the flags, then the environment (both through clap), then
    /// what `login` stored.
    pub fn from(global: &Global) -> Result<Api, String> {
        let stored = session::load();
        let url = global
            .url
            .clone()
            .or(stored.url)
            .unwrap_or_else(|| DEFAULT_URL.to_owned());
        let token =
            global.token.clone().or(stored.token).ok_or(
                "not logged in: run `plateau login` (or pass --token, or set PLATEAU_TOKEN)",
            )?;
        Ok(Api::new(&url, &token, global.json))
    }

    /// `path` below `/api/v1`, or a path or URL the server gave.
    pub fn endpoint(&self, path: &str) -> String {
        if path.starts_with("http://") || path.starts_with("https://") {
            path.to_owned()
        } else if path.starts_with(plateau_api::API_PREFIX) {
            format!("{}{path}", self.url)
        } else {
            format!("{}{}{path}", self.url, plateau_api::API_PREFIX)
        }
    }

    pub async fn get(&self, path: &str) -> Result<Value, String> {
        self.send(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Result<Value, String> {
        self.send(Method::POST, path, Some(body)).await
    }

    pub async fn put(&self, path: &str, body: Value) -> Result<Value, String> {
        self.send(Method::PUT, path, Some(body)).await
    }

    pub async fn delete(&self, path: &str) -> Result<Value, String> {
        self.send(Method::DELETE, path, None).await
    }

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        let mut req = self
            .http
            .request(method, self.endpoint(path))
            .bearer_auth(&self.token);
        if let Some(body) = body {
            req = req.json(&body);
        }
        let response = req.send().await.map_err(|e| self.unreachable(&e))?;
        answer(response).await
    }

    /// Sends a body of `len` bytes to a presigned URL (no token).
    pub async fn put_stream(
        &self,
        url: &str,
        len: u64,
        body: reqwest::Body,
    ) -> Result<Value, String> {
        let response = self
            .http
            .put(self.endpoint(url))
            .header("content-type", "application/octet-stream")
            .header("content-length", len)
            .body(body)
            .send()
            .await
            .map_err(|e| self.unreachable(&e))?;
        answer(response).await
    }

    fn unreachable(&self, e: &reqwest::Error) -> String {
        let why = if e.is_connect() {
            "nothing answers there; is the server running?"
        } else if e.is_timeout() {
            "it did not answer in time"
        } else {
            "the connection failed"
        };
        format!(
            "cannot reach the server at {}: {why} (unreachable)",
            self.url
        )
    }
}

/// The body of a success (`null` when empty), or the problem's sentence.
async fn answer(response: reqwest::Response) -> Result<Value, String> {
    let status = response.status();
    let bytes = response.bytes().await.map_err(|_| {
        "the server closed the connection before its answer ended (truncated)".to_owned()
    })?;
    if status.is_success() {
        if bytes.is_empty() {
            return Ok(Value::Null);
        }
        return serde_json::from_slice(&bytes).map_err(|_| {
            format!("the server answered {status} with something that is not JSON (bad_answer)")
        });
    }
    Err(problem_sentence(status, &bytes))
}

/// `detail (code)`, with the fields a validation problem names.
pub fn problem_sentence(status: StatusCode, body: &[u8]) -> String {
    let problem: Value = serde_json::from_slice(body).unwrap_or_default();
    let code = problem["code"].as_str().unwrap_or("http_error");
    let mut detail = problem["detail"]
        .as_str()
        .map(str::to_owned)
        .unwrap_or_else(|| format!("the server answered {status}"));
    if let Some(errors) = problem["errors"].as_array().filter(|e| !e.is_empty()) {
        let fields: Vec<String> = errors
            .iter()
            .map(|e| {
                format!(
                    "{}: {}",
                    e["field"].as_str().unwrap_or("?"),
                    e["message"].as_str().unwrap_or("invalid")
                )
            })
            .collect();
        if !detail.contains(&fields[0]) {
            detail = format!("{detail}; {}", fields.join("; "));
        }
    }
    if status == StatusCode::UNAUTHORIZED {
        detail = format!("{detail}; run `plateau login` with a valid token");
    }
    format!("{} ({code})", detail.trim_end_matches('.'))
}
