//! The console's only way to do anything: a call to the public API,
//! in-process through the same router a remote client reaches, carrying
//! the session's credential. What the console can do, a token can do.

use axum::Router;
use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::{Method, Request, StatusCode, header};
use bytes::Bytes;
use http_body_util::BodyExt;
use serde_json::Value;
use std::net::SocketAddr;
use tower::ServiceExt;

use crate::session::{Kind, Session};

/// The cookie the admin API reads (`plateau_api::auth::ADMIN_COOKIE`).
const ADMIN_COOKIE: &str = plateau_api::auth::ADMIN_COOKIE;

/// What the API said when it refused: its status and problem body.
#[derive(Debug, Clone)]
pub struct Problem {
    pub status: StatusCode,
    pub body: Value,
}

impl Problem {
    /// One sentence for the page: the problem's detail, or its title.
    pub fn message(&self) -> String {
        let detail = self.body["detail"]
            .as_str()
            .or_else(|| self.body["title"].as_str())
            .unwrap_or("the request failed");
        match self.body["code"].as_str() {
            Some(code) => format!("{detail} ({code})"),
            None => detail.to_owned(),
        }
    }
}

/// An answer of the API: its status, headers and body.
pub struct Answer {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Bytes,
}

/// The API router and the address of the browser the console serves.
#[derive(Clone)]
pub struct Api {
    router: Router,
}

impl Api {
    pub fn new(router: Router) -> Api {
        Api { router }
    }

    /// Sends one request under `/api/v1` as `session` (or anonymously).
    pub async fn send(
        &self,
        session: Option<&Session>,
        peer: Option<SocketAddr>,
        method: Method,
        path: &str,
        content_type: Option<&str>,
        body: Body,
    ) -> Answer {
        let mut request = Request::builder()
            .method(method)
            .uri(format!("{}{path}", plateau_api::API_PREFIX));
        if let Some(session) = session {
            request = match session.kind {
                Kind::Token => request.header(
                    header::AUTHORIZATION,
                    format!("Bearer {}", session.credential),
                ),
                Kind::Admin => request.header(
                    header::COOKIE,
                    format!("{ADMIN_COOKIE}={}", session.credential),
                ),
            };
        }
        if let Some(content_type) = content_type {
            request = request.header(header::CONTENT_TYPE, content_type);
        }
        let mut request = match request.body(body) {
            Ok(r) => r,
            Err(e) => return internal(e.to_string()),
        };
        if let Some(peer) = peer {
            request.extensions_mut().insert(ConnectInfo(peer));
        }
        let response = match self.router.clone().oneshot(request).await {
            Ok(r) => r,
            Err(never) => match never {},
        };
        let (parts, body) = response.into_parts();
        match body.collect().await {
            Ok(b) => Answer {
                status: parts.status,
                headers: parts.headers,
                body: b.to_bytes(),
            },
            Err(e) => internal(e.to_string()),
        }
    }

    /// A JSON call; the parsed answer, or the problem.
    pub async fn json(
        &self,
        session: &Session,
        peer: Option<SocketAddr>,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Problem> {
        let (content_type, body) = match body {
            Some(v) => (Some("application/json"), Body::from(v.to_string())),
            None => (None, Body::empty()),
        };
        let answer = self
            .send(Some(session), peer, method, path, content_type, body)
            .await;
        let value = if answer.body.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&answer.body).unwrap_or(Value::Null)
        };
        if answer.status.is_success() {
            Ok(value)
        } else {
            Err(Problem {
                status: answer.status,
                body: value,
            })
        }
    }
}

fn internal(message: String) -> Answer {
    tracing::warn!(error = %message, "the console's call to the API failed");
    Answer {
        status: StatusCode::INTERNAL_SERVER_ERROR,
        headers: Default::default(),
        body: Bytes::from(serde_json::json!({ "title": message }).to_string()),
    }
}
