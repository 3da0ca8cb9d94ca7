//! Caches: the list, creating one, and one cache's connection details
//! (with its CA certificate when it speaks TLS).

use axum::Router;
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use maud::html;
use serde_json::{Value, json};

use super::{Fields, after, field, number, section, seg};
use crate::html::{self, col};
use crate::{Console, Ctx};

pub fn routes() -> Router<Console> {
    Router::new()
        .route("/console/caches", get(list).post(create))
        .route("/console/caches/{id}", get(show))
}

async fn list(ctx: Ctx) -> Response {
    let list = ctx.get("/caches").await;
    let s = &ctx.session;
    let content = html! {
        (section(&list, |l| html::table("Caches", &html::items(l),
            &[col("Name", "name"), col("Status", "status"), col("Memory (MiB)", "memoryMb"), col("Replicas", "replicas"), col("Persistence", "persistence")],
            Some(&|c: &Value| format!("/console/caches/{}", html::text(&c["id"]))))))
        h2 { "Create a cache" }
        (html::form(s, "/console/caches", html! {
            (html::input("Name", "name", "text", true, None))
            (html::input("Memory (MiB)", "memoryMb", "number", false, Some("64 by default")))
        }, "Create cache"))
    };
    html::page(s, "/console/caches", "Caches", content).into_response()
}

async fn create(ctx: Ctx, fields: Fields) -> Response {
    let mut body = json!({ "name": field(&fields, "name") });
    if !field(&fields, "memoryMb").is_empty() {
        body["memoryMb"] = number(&fields, "memoryMb");
    }
    let result = ctx.post("/caches", body).await;
    after(&ctx, result, "/console/caches")
}

async fn show(ctx: Ctx, Path(id): Path<String>) -> Response {
    let base = format!("/caches/{}", seg(&id));
    let cache = ctx.get(&base).await;
    let running = cache.as_ref().is_ok_and(|c| c["status"] == "running");
    let title = cache
        .as_ref()
        .map(|c| html::text(&c["name"]))
        .unwrap_or_else(|_| "Cache".to_owned());
    let connection = if running {
        Some(ctx.get(&format!("{base}/connection")).await)
    } else {
        None
    };
    let content = html! {
        (section(&cache, |c| html! {
            dl {
                dt { "Status" } dd { (html::text(&c["status"])) }
                dt { "Version" } dd { (html::text(&c["version"])) }
                dt { "Memory" } dd { (html::text(&c["memoryMb"])) " MiB" }
                dt { "Eviction" } dd { (html::text(&c["evictionPolicy"])) }
            }
        }))
        h2 { "Connection" }
        @match &connection {
            Some(c) => (section(c, |c| html! {
                (html::copyable("URI", "uri", &html::text(&c["uri"])))
                (html::copyable("Password", "password", &html::text(&c["password"])))
                @if c["caCertificate"].is_string() {
                    p { "The cache speaks TLS: clients verify it with this CA certificate (redis-cli --tls --cacert ca.pem)." }
                    (html::pre(&html::text(&c["caCertificate"])))
                }
            })),
            None => p role="status" { "The cache is not running yet." },
        }
    };
    html::page(&ctx.session, "/console/caches", &title, content).into_response()
}
