//! Plateau's web console, served by `plateau serve` under `/console` on
//! the API's origin: server-rendered pages whose handlers call the public
//! API in-process (through the same router, with the session's
//! credential), a stylesheet and a small script (copy buttons, uploads).
//! See README.md for the design.

pub mod api;
pub mod csrf;
pub mod html;
pub mod pages;
pub mod session;

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderValue, Method, header};
use axum::middleware::from_fn_with_state;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use plateau_seal::Sealer;
use serde_json::Value;

use crate::api::{Api, Problem};
use crate::session::Session;

/// What every console handler shares.
#[derive(Clone)]
pub struct Console {
    pub api: Api,
    pub sealer: Arc<Sealer>,
}

/// The console's routes, to merge beside the API: `/` redirects to
/// `/console/`. `api` is the whole API router the console calls.
pub fn router(api: Router, sealer: Arc<Sealer>) -> Router {
    let console = Console {
        api: Api::new(api),
        sealer,
    };
    let pages = pages::routes()
        .route("/console/static/console.css", get(css))
        .route("/console/static/console.js", get(script))
        .layer(from_fn_with_state(console.clone(), csrf::check))
        .layer(axum::middleware::map_response(headers))
        .with_state(console);
    Router::new()
        .route("/", get(|| async { Redirect::to("/console/") }))
        .route("/console", get(|| async { Redirect::to("/console/") }))
        .merge(pages)
}

/// The signed-in caller of a page, with what it needs to call the API.
pub struct Ctx {
    pub console: Console,
    pub session: Session,
    pub peer: Option<SocketAddr>,
}

impl FromRequestParts<Console> for Ctx {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, console: &Console) -> Result<Self, Response> {
        let session = Session::from_request_parts(parts, console).await?;
        let peer = parts
            .extensions
            .get::<ConnectInfo<SocketAddr>>()
            .map(|c| c.0);
        Ok(Ctx {
            console: console.clone(),
            session,
            peer,
        })
    }
}

impl Ctx {
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Problem> {
        self.console
            .api
            .json(&self.session, self.peer, method, path, body)
            .await
    }

    pub async fn get(&self, path: &str) -> Result<Value, Problem> {
        self.call(Method::GET, path, None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> Result<Value, Problem> {
        self.call(Method::POST, path, Some(body)).await
    }
}

/// Headers on every console answer: no framing, no sniffing, no referrer
/// beyond this origin, scripts and styles only from here, never cached.
async fn headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    let set = [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
             connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::REFERRER_POLICY, "same-origin"),
    ];
    for (name, value) in set {
        h.insert(name, HeaderValue::from_static(value));
    }
    if !h.contains_key(header::CACHE_CONTROL) {
        h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

async fn css() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/css; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        include_str!("../static/console.css"),
    )
}

async fn script() -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        include_str!("../static/console.js"),
    )
}
