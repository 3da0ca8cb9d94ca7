//! A small HTTP client for the API, the way a script would use it.

use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::Value;

#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    token: Option<String>,
    cookie: Option<String>,
}

/// A response, read whole.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub headers: HeaderMap,
    pub bytes: Vec<u8>,
}

impl Response {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.bytes)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.bytes)))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The problem `code` of an error response.
    pub fn code(&self) -> String {
        self.json()["code"].as_str().unwrap_or_default().to_owned()
    }
}

/// One request being built.
pub struct Request {
    builder: reqwest::RequestBuilder,
}

impl Request {
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.builder = self.builder.header(name, value);
        self
    }

    pub fn idempotency_key(self, key: &str) -> Self {
        self.header("Idempotency-Key", key)
    }

    pub fn json(mut self, body: &Value) -> Self {
        self.builder = self.builder.json(body);
        self
    }

    pub fn body(mut self, content_type: &str, body: impl Into<reqwest::Body>) -> Self {
        self.builder = self.builder.header("content-type", content_type).body(body);
        self
    }

    pub async fn send(self) -> Response {
        self.try_send()
            .await
            .expect("the request reaches the server")
    }

    /// Sends a request the server may die on: the error when no whole
    /// response came back.
    pub async fn try_send(self) -> Result<Response, reqwest::Error> {
        let response = self.builder.send().await?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response.bytes().await?.to_vec();
        Ok(Response {
            status,
            headers,
            bytes,
        })
    }
}

impl Client {
    pub fn new(base: &str) -> Client {
        Client {
            http: reqwest::Client::new(),
            base: base.trim_end_matches('/').to_owned(),
            token: None,
            cookie: None,
        }
    }

    pub fn with_token(&self, token: &str) -> Client {
        Client {
            token: Some(token.to_owned()),
            ..self.clone()
        }
    }

    pub fn with_cookie(&self, cookie: &str) -> Client {
        Client {
            cookie: Some(cookie.to_owned()),
            ..self.clone()
        }
    }

    pub fn without_token(&self) -> Client {
        Client {
            token: None,
            ..self.clone()
        }
    }

    /// A request to `path` below `/api/v1` (or an absolute path starting
    /// with `//`, taken from the server root).
    pub fn request(&self, method: Method, path: &str) -> Request {
        let url = match path.strip_prefix("//") {
            Some(root) => format!("{}/{root}", self.base),
            None => format!("{}/api/v1{path}", self.base),
        };
        let mut builder = self.http.request(method, url);
        if let Some(token) = &self.token {
            builder = builder.bearer_auth(token);
        }
        if let Some(cookie) = &self.cookie {
            builder = builder.header("cookie", cookie);
        }
        Request { builder }
    }

    pub async fn get(&self, path: &str) -> Response {
        self.request(Method::GET, path).send().await
    }

    pub async fn post(&self, path: &str, body: Value) -> Response {
        self.request(Method::POST, path).json(&body).send().await
    }

    pub async fn put(&self, path: &str, body: Value) -> Response {
        self.request(Method::PUT, path).json(&body).send().await
    }

    pub async fn patch(&self, path: &str, body: Value) -> Response {
        self.request(Method::PATCH, path).json(&body).send().await
    }

    pub async fn delete(&self, path: &str) -> Response {
        self.request(Method::DELETE, path).send().await
    }
}
