//! The status page: its name and slug (creating it), the link to the
//! public page, the components with a form to add one (set by hand or
//! fed by a check or heartbeat) and to set a hand-set one's status, and
//! the incidents with a form to open one and to post an update.

use axum::Router;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use maud::html;
use serde_json::{Value, json};

use super::{Fields, after, field, optional, section, seg};
use crate::html::{self, col};
use crate::{Console, Ctx};

const HERE: &str = "/console/status-pages";

const STATUSES: [(&str, &str); 5] = [
    ("operational", "Operational"),
    ("degraded_performance", "Degraded performance"),
    ("partial_outage", "Partial outage"),
    ("major_outage", "Major outage"),
    ("under_maintenance", "Under maintenance"),
];

pub fn routes() -> Router<Console> {
    Router::new()
        .route(HERE, get(show))
        .route("/console/status-pages/page", post(put_page))
        .route("/console/status-pages/components", post(add_component))
        .route("/console/status-pages/component-status", post(set_status))
        .route("/console/status-pages/incidents", post(open_incident))
        .route("/console/status-pages/updates", post(add_update))
}

/// A select of `options` (value, label).
fn select(label: &str, name: &str, options: &[(&str, &str)]) -> maud::Markup {
    let id = format!("f-{name}");
    html! {
        div class="field" {
            label for=(id) { (label) }
            select id=(id) name=(name) {
                @for (value, text) in options { option value=(value) { (text) } }
            }
        }
    }
}

/// A select of the items' ids, labelled by their names.
fn pick(label: &str, name: &str, items: &[Value]) -> maud::Markup {
    let id = format!("f-{name}");
    html! {
        div class="field" {
            label for=(id) { (label) }
            select id=(id) name=(name) {
                @for item in items { option value=(html::text(&item["id"])) { (html::text(&item["name"])) } }
            }
        }
    }
}

async fn show(ctx: Ctx) -> Response {
    let s = &ctx.session;
    let page = ctx.get("/status-pages/page").await;
    let components = ctx.get("/status-pages/components").await;
    let incidents = ctx.get("/status-pages/incidents?limit=20").await;
    let comps = components.as_ref().map(html::items).unwrap_or_default();
    let open: Vec<Value> = incidents
        .as_ref()
        .map(html::items)
        .unwrap_or_default()
        .into_iter()
        .filter(|i| !matches!(i["status"].as_str(), Some("resolved" | "completed")))
        .collect();
    let content = html! {
        @match &page {
            Ok(p) => {
                // Under this console's own origin: the API answers URLs
                // from the Host of a request, which the console's calls
                // do not carry.
                @let public = format!("{}/status-pages/public/{}", plateau_api::API_PREFIX, html::text(&p["slug"]));
                p { "The public page: " a href=(public) { (public) } }
                p { "Statuspage's " a href=(format!("{public}/api/v2/summary.json")) { "summary.json" } " and the " a href=(format!("{public}/history.atom")) { "Atom feed" } "." }
            }
            Err(_) => p { "The organisation has no status page yet: name it below." }
        }
        h2 { "Page" }
        (html::form(s, "/console/status-pages/page", html! {
            (html::input("Name", "name", "text", true, None))
            (html::input("Slug", "slug", "text", true, Some("the end of the public URL: 3 to 40 of a-z, 0-9 and -")))
        }, "Save the page"))
        h2 { "Components" }
        (section(&components, |l| html::table("Components", &html::items(l),
            &[col("Name", "name"), col("Status", "status"), col("Fed by", "source.kind"), col("Source id", "source.id")], None)))
        h3 { "Add a component" }
        (html::form(s, "/console/status-pages/components", html! {
            (html::input("Component name", "componentName", "text", true, None))
            (select("Fed by", "sourceKind", &[("", "Nobody: set by hand"), ("check", "A check"), ("heartbeat", "A heartbeat")]))
            (html::input("Check or heartbeat id", "sourceId", "text", false, Some("blank when set by hand")))
        }, "Add the component"))
        @if !comps.is_empty() {
            h3 { "Set a component's status" }
            (html::form(s, "/console/status-pages/component-status", html! {
                (pick("Component", "component", &comps))
                (select("Status", "status", &STATUSES))
            }, "Set the status"))
        }
        h2 { "Incidents and maintenance" }
        (section(&incidents, |l| html::table("Incidents", &html::items(l),
            &[col("Name", "name"), col("Kind", "kind"), col("Status", "status"), col("Impact", "impact"), col("Opened", "createdAt")], None)))
        h3 { "Open an incident" }
        (html::form(s, "/console/status-pages/incidents", html! {
            (html::input("Incident name", "incidentName", "text", true, None))
            (select("Impact", "impact", &[("minor", "Minor"), ("major", "Major"), ("critical", "Critical"), ("none", "None")]))
            div class="field" {
                label for="f-body" { "What is happening" }
                textarea id="f-body" name="body" required {}
            }
        }, "Open the incident"))
        @if !open.is_empty() {
            h3 { "Post an update" }
            (html::form(s, "/console/status-pages/updates", html! {
                (pick("Incident", "incident", &open))
                (select("New status", "status", &[("investigating", "Investigating"), ("identified", "Identified"), ("monitoring", "Monitoring"), ("resolved", "Resolved"), ("in_progress", "In progress (maintenance)"), ("verifying", "Verifying (maintenance)"), ("completed", "Completed (maintenance)")]))
                div class="field" {
                    label for="f-update" { "Update" }
                    textarea id="f-update" name="update" required {}
                }
            }, "Post the update"))
        }
    };
    html::page(s, HERE, "Status page", content).into_response()
}

async fn put_page(ctx: Ctx, fields: Fields) -> Response {
    let body = json!({ "name": field(&fields, "name"), "slug": field(&fields, "slug") });
    let result = ctx
        .call(axum::http::Method::PUT, "/status-pages/page", Some(body))
        .await;
    after(&ctx, result, HERE)
}

async fn add_component(ctx: Ctx, fields: Fields) -> Response {
    let mut body = json!({ "name": field(&fields, "componentName") });
    if !field(&fields, "sourceKind").is_empty() {
        body["source"] =
            json!({ "kind": field(&fields, "sourceKind"), "id": optional(&fields, "sourceId") });
    }
    let result = ctx.post("/status-pages/components", body).await;
    after(&ctx, result, HERE)
}

async fn set_status(ctx: Ctx, fields: Fields) -> Response {
    let path = format!(
        "/status-pages/components/{}",
        seg(field(&fields, "component"))
    );
    let body = json!({ "status": field(&fields, "status") });
    let result = ctx.call(axum::http::Method::PATCH, &path, Some(body)).await;
    after(&ctx, result, HERE)
}

async fn open_incident(ctx: Ctx, fields: Fields) -> Response {
    let body = json!({
        "name": field(&fields, "incidentName"),
        "impact": field(&fields, "impact"),
        "body": field(&fields, "body"),
    });
    let result = ctx.post("/status-pages/incidents", body).await;
    after(&ctx, result, HERE)
}

async fn add_update(ctx: Ctx, fields: Fields) -> Response {
    let path = format!(
        "/status-pages/incidents/{}/updates",
        seg(field(&fields, "incident"))
    );
    let body = json!({ "status": field(&fields, "status"), "body": field(&fields, "update") });
    let result = ctx.post(&path, body).await;
    after(&ctx, result, HERE)
}
