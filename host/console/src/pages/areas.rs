//! The plugin areas (queues, cron jobs, workflows, email, checks,
//! heartbeats, flags, webhooks, log drains, error tracking, traces,
//! config), registry repositories, alarms, anomaly monitors and firewall
//! rules, which share one shape: a list, an item with its sub-lists (runs,
//! results, pings, tags), and a create form taking the API's JSON body;
//! and the event timeline and audit log, with the CSV export.

use axum::Router;
use axum::body::Body;
use axum::extract::Path;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use maud::html;
use serde_json::Value;

use super::{Fields, after, field, section, seg};
use crate::html::{self, col};
use crate::{Console, Ctx};

/// One plugin area of the API.
struct Area {
    slug: &'static str,
    title: &'static str,
    /// The list's path, under which each item is `/{key}`.
    list: &'static str,
    /// Where a JSON body creates one, when the area has a create.
    create: Option<&'static str>,
    /// The field naming an item in its path.
    key: &'static str,
    /// Lists under an item's path.
    subs: &'static [&'static str],
}

const AREAS: &[Area] = &[
    Area {
        slug: "queues",
        title: "Queues",
        list: "/queues",
        create: Some("/queues"),
        key: "name",
        subs: &["stats"],
    },
    Area {
        slug: "cron-jobs",
        title: "Cron jobs",
        list: "/cron-jobs",
        create: Some("/cron-jobs"),
        key: "id",
        subs: &["runs"],
    },
    Area {
        slug: "workflows",
        title: "Workflow runs",
        list: "/workflows/runs",
        create: Some("/workflows/runs"),
        key: "id",
        subs: &[],
    },
    Area {
        slug: "email",
        title: "Email",
        list: "/email/messages",
        create: Some("/email/send"),
        key: "id",
        subs: &[],
    },
    Area {
        slug: "checks",
        title: "Checks",
        list: "/checks",
        create: Some("/checks"),
        key: "id",
        subs: &["results", "alerts"],
    },
    Area {
        slug: "heartbeats",
        title: "Heartbeats",
        list: "/heartbeats",
        create: Some("/heartbeats"),
        key: "id",
        subs: &["pings"],
    },
    Area {
        slug: "flags",
        title: "Flags",
        list: "/flags",
        create: None,
        key: "key",
        subs: &[],
    },
    Area {
        slug: "registry",
        title: "Registry repositories",
        list: "/registry/repositories",
        create: None,
        key: "path",
        subs: &["tags"],
    },
    Area {
        slug: "webhooks",
        title: "Webhooks",
        list: "/webhooks",
        create: Some("/webhooks"),
        key: "id",
        subs: &["deliveries"],
    },
    Area {
        slug: "log-drains",
        title: "Log drains",
        list: "/log-drains",
        create: Some("/log-drains"),
        key: "id",
        subs: &[],
    },
    Area {
        slug: "errors",
        title: "Error tracking",
        list: "/errors/projects",
        create: Some("/errors/projects"),
        key: "id",
        subs: &["issues"],
    },
    Area {
        slug: "traces",
        title: "Traces",
        list: "/otel/traces",
        create: None,
        key: "traceId",
        subs: &[],
    },
    Area {
        slug: "config",
        title: "Config and secrets",
        list: "/config/projects",
        create: Some("/config/projects"),
        key: "name",
        subs: &["environments"],
    },
    Area {
        slug: "alarms",
        title: "Alarms",
        list: "/alarms",
        create: Some("/alarms"),
        key: "id",
        subs: &[],
    },
    Area {
        slug: "anomaly-monitors",
        title: "Anomaly monitors",
        list: "/anomalies/monitors",
        create: Some("/anomalies"),
        key: "id",
        subs: &[],
    },
    Area {
        slug: "waf-rules",
        title: "Firewall rules",
        list: "/waf/rules",
        create: Some("/waf/rules"),
        key: "id",
        subs: &[],
    },
];

pub fn routes() -> Router<Console> {
    Router::new()
        .route("/console/areas/{area}", get(list).post(create))
        .route("/console/areas/{area}/{key}", get(item))
        .route("/console/events", get(events))
        .route("/console/audit", get(audit))
        .route("/console/audit.csv", get(audit_csv))
}

fn area(slug: &str) -> Option<&'static Area> {
    AREAS.iter().find(|a| a.slug == slug)
}

fn not_found() -> Response {
    (
        StatusCode::NOT_FOUND,
        html::message_page("Not found", "there is no such area"),
    )
        .into_response()
}

/// Up to six scalar fields of the first item, as columns.
fn columns(items: &[Value]) -> Vec<String> {
    let Some(first) = items.first().and_then(Value::as_object) else {
        return Vec::new();
    };
    first
        .iter()
        .filter(|(_, v)| !v.is_object() && !v.is_array())
        .map(|(k, _)| k.clone())
        .take(6)
        .collect()
}

fn generic_table(
    caption: &str,
    items: &[Value],
    link: Option<&dyn Fn(&Value) -> String>,
) -> maud::Markup {
    let names = columns(items);
    let cols: Vec<html::Column> = names.iter().map(|n| col(n, n)).collect();
    html::table(caption, items, &cols, link)
}

async fn list(ctx: Ctx, Path(slug): Path<String>) -> Response {
    let Some(a) = area(&slug) else {
        return not_found();
    };
    let list = ctx.get(a.list).await;
    let here = format!("/console/areas/{}", a.slug);
    let key = a.key;
    let link = |item: &Value| format!("/console/areas/{}/{}", a.slug, seg(&html::text(&item[key])));
    let content = html! {
        (section(&list, |l| {
            let items = html::items(l);
            // Lead with the key column, so the first cell links to the item.
            let mut sorted = items.clone();
            for item in &mut sorted {
                if let Some(o) = item.as_object_mut() && let Some(v) = o.remove(key) {
                    let mut first = serde_json::Map::new();
                    first.insert(key.to_owned(), v);
                    first.extend(std::mem::take(o));
                    *o = first;
                }
            }
            generic_table(a.title, &sorted, Some(&link))
        }))
        @if a.create.is_some() {
            h2 { "Create" }
            (html::form(&ctx.session, &here, html! {
                div class="field" {
                    label for="f-body" { "Request body (JSON)" }
                    p id="f-body-hint" class="hint" { "as the API's POST " (a.create.unwrap_or_default()) " takes it; see /api/v1/openapi.json" }
                    textarea id="f-body" name="body" required aria-describedby="f-body-hint" { "{}" }
                }
            }, "Create"))
        }
    };
    html::page(&ctx.session, &here, a.title, content).into_response()
}

async fn create(ctx: Ctx, Path(slug): Path<String>, fields: Fields) -> Response {
    let Some(a) = area(&slug) else {
        return not_found();
    };
    let Some(path) = a.create else {
        return not_found();
    };
    let here = format!("/console/areas/{}", a.slug);
    let body: Value = match serde_json::from_str(field(&fields, "body")) {
        Ok(v) => v,
        Err(e) => {
            let p = crate::api::Problem {
                status: StatusCode::BAD_REQUEST,
                body: serde_json::json!({ "detail": format!("body is not JSON: {e}") }),
            };
            return super::refused(&ctx, &p, &here);
        }
    };
    let result = ctx.post(path, body).await;
    after(&ctx, result, &here)
}

async fn item(ctx: Ctx, Path((slug, key)): Path<(String, String)>) -> Response {
    let Some(a) = area(&slug) else {
        return not_found();
    };
    let base = format!("{}/{}", a.list, seg(&key));
    let item = ctx.get(&base).await;
    let mut subs = Vec::new();
    for sub in a.subs {
        subs.push((*sub, ctx.get(&format!("{base}/{sub}")).await));
    }
    let content = html! {
        (section(&item, |i| html::pre(&serde_json::to_string_pretty(i).unwrap_or_default())))
        @for (name, result) in &subs {
            h2 { (name) }
            (section(result, |r| {
                let items = html::items(r);
                if items.is_empty() && !r.is_array() && r.get("items").is_none() {
                    html::pre(&serde_json::to_string_pretty(r).unwrap_or_default())
                } else {
                    generic_table(name, &items, None)
                }
            }))
        }
    };
    html::page(
        &ctx.session,
        &format!("/console/areas/{}", a.slug),
        &key,
        content,
    )
    .into_response()
}

const EVENT_COLUMNS: &[html::Column] = &[
    col("When", "createdAt"),
    col("Kind", "kind"),
    col("Actor", "actor.id"),
    col("Resource", "resourceId"),
];

async fn events(ctx: Ctx) -> Response {
    let list = ctx.get("/events?limit=100").await;
    let content = section(&list, |l| {
        html::table("Events", &html::items(l), EVENT_COLUMNS, None)
    });
    html::page(&ctx.session, "/console/events", "Events", content).into_response()
}

async fn audit(ctx: Ctx) -> Response {
    let list = ctx.get("/audit?limit=100").await;
    let content = html! {
        p { a href="/console/audit.csv" download="audit.csv" { "Export the audit log as CSV" } }
        (section(&list, |l| html::table("Audit log", &html::items(l), EVENT_COLUMNS, None)))
    };
    html::page(&ctx.session, "/console/audit", "Audit log", content).into_response()
}

/// The API's CSV export, passed through with its headers.
async fn audit_csv(ctx: Ctx) -> Response {
    let answer = ctx
        .console
        .api
        .send(
            Some(&ctx.session),
            ctx.peer,
            Method::GET,
            "/audit/export",
            None,
            Body::empty(),
        )
        .await;
    let mut response = (answer.status, answer.body).into_response();
    for name in [header::CONTENT_TYPE, header::CONTENT_DISPOSITION] {
        if let Some(v) = answer.headers.get(&name) {
            response.headers_mut().insert(name, v.clone());
        }
    }
    response
}
