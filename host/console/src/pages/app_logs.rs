//! An app's logs: one deployment's build log (the newest by default) and
//! the newest runtime lines. Without script it is a plain page with a
//! refresh link; with it, the console's script follows it: every few
//! seconds it fetches the page again and swaps in the `data-live`
//! elements, with a button to stop and start (WCAG 2.2.2).

use axum::Router;
use axum::extract::{Path, Query};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use maud::html;
use serde_json::Value;
use std::collections::HashMap;

use super::{field, section, seg};
use crate::html::{self, col};
use crate::{Console, Ctx};

pub fn routes() -> Router<Console> {
    Router::new().route("/console/apps/{id}/logs", get(show))
}

/// The runtime lines shown: the API's default page.
const LINES: u32 = 200;

async fn show(
    ctx: Ctx,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let base = format!("/apps/{}", seg(&id));
    let app = ctx.get(&base).await;
    let deployments = ctx.get(&format!("{base}/deployments")).await;
    let logs = ctx.get(&format!("{base}/logs?limit={LINES}")).await;
    let here = format!("/console/apps/{}/logs", seg(&id));
    let name = app
        .as_ref()
        .map(|a| html::text(&a["name"]))
        .unwrap_or_else(|_| "the app".to_owned());
    let items = deployments.as_ref().map(html::items).unwrap_or_default();
    let wanted = field(&query, "deployment");
    let shown = items
        .iter()
        .find(|d| d["id"] == wanted)
        .or_else(|| newest(&items));
    let content = html! {
        p { a href=(format!("/console/apps/{}", seg(&id))) { "Back to " (name) } }
        div data-follow {
            p { a href=(here) { "Refresh" } " (this page follows the logs by itself when scripts run)" }
        }
        h2 { "Build" }
        (section(&deployments, |_| match shown {
            None => html! { p { "No deployment yet." } },
            Some(d) => html! {
                dl id="deployment" data-live {
                    dt { "Deployment" } dd { (html::text(&d["id"])) }
                    dt { "Status" } dd { (html::text(&d["status"])) }
                    dt { "Image" } dd { (html::text(&d["image"])) }
                    @if d["reason"].is_string() {
                        dt { "Reason" } dd { (html::text(&d["reason"])) }
                    }
                }
                @if d["buildLog"].is_string() {
                    pre id="build-log" tabindex="0" aria-label="Build log" data-live data-tail { (html::text(&d["buildLog"])) }
                } @else {
                    p id="build-log" data-live { "This deployment ran an image: it had no build." }
                }
            },
        }))
        h2 { "Runtime logs" }
        p { "The newest " (LINES) " lines of every replica." }
        (section(&logs, |l| {
            let lines: Vec<String> = html::items(l).iter()
                .map(|l| format!("{} {} {}", html::text(&l["at"]), html::text(&l["stream"]), html::text(&l["line"])))
                .collect();
            let text = if lines.is_empty() { "No log lines yet.".to_owned() } else { lines.join("\n") };
            html! { pre id="runtime-log" tabindex="0" aria-label="Runtime logs" data-live data-tail { (text) } }
        }))
        h2 { "Deployments" }
        (html::table("Deployments", &items,
            &[col("Id", "id"), col("Status", "status"), col("Cause", "cause"), col("Created", "createdAt")],
            Some(&|d: &Value| format!("{here}?deployment={}", seg(&html::text(&d["id"]))))))
    };
    let title = format!("Logs of {name}");
    html::page(&ctx.session, "/console/apps", &title, content).into_response()
}

/// The newest deployment: the latest `createdAt` (RFC 3339 sorts as text).
fn newest(items: &[Value]) -> Option<&Value> {
    items
        .iter()
        .max_by(|a, b| html::text(&a["createdAt"]).cmp(&html::text(&b["createdAt"])))
}
