//! Web analytics (the analytics plugin's `/analytics/sites`): the sites
//! with a form to add one, and a site's stats over a period (from and to
//! in the query, the API's default otherwise): the totals, the time
//! series, the top pages, sources, entry pages, browsers, operating
//! systems and devices, and the slowest routes by LCP (speed insights).

use std::collections::HashMap;

use axum::Router;
use axum::extract::{Path, Query};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use maud::html;
use serde_json::{Value, json};

use super::{Fields, after, field, section, seg};
use crate::html::{self, Column, col};
use crate::{Console, Ctx};

const HERE: &str = "/console/analytics";

const SITE_COLUMNS: &[Column] = &[
    col("Domain", "domain"),
    col("App", "appId"),
    col("Added", "createdAt"),
];

const METRIC_COLUMNS: &[Column] = &[
    col("Visitors", "visitors"),
    col("Page views", "pageviews"),
    col("Visits", "visits"),
    col("Bounce rate (%)", "bounceRate"),
    col("Visit duration (s)", "visitDuration"),
];

/// The breakdowns a site's page shows, with their headings.
const BREAKDOWNS: &[(&str, &str)] = &[
    ("page", "Top pages"),
    ("entry", "Entry pages"),
    ("source", "Sources"),
    ("browser", "Browsers"),
    ("os", "Operating systems"),
    ("device", "Devices"),
];

pub fn routes() -> Router<Console> {
    Router::new()
        .route(HERE, get(list).post(create))
        .route("/console/analytics/{id}", get(site))
}

async fn list(ctx: Ctx) -> Response {
    let sites = ctx.get("/analytics/sites?limit=100").await;
    let link = |s: &Value| format!("{HERE}/{}", seg(&html::text(&s["id"])));
    let content = html! {
        (section(&sites, |l| html::table("Sites", &html::items(l), SITE_COLUMNS, Some(&link))))
        h2 { "Add a site" }
        (html::form(&ctx.session, HERE, html! {
            div class="field" {
                label for="f-domain" { "Domain" }
                input id="f-domain" name="domain" required;
            }
            div class="field" {
                label for="f-app" { "App id (optional: its edge reports page views)" }
                input id="f-app" name="appId";
            }
        }, "Add"))
    };
    html::page(&ctx.session, HERE, "Web analytics", content).into_response()
}

async fn create(ctx: Ctx, fields: Fields) -> Response {
    let mut body = json!({ "domain": field(&fields, "domain") });
    let app = field(&fields, "appId").trim();
    if !app.is_empty() {
        body["appId"] = json!(app);
    }
    let result = ctx.post("/analytics/sites", body).await;
    after(&ctx, result, HERE)
}

async fn site(
    ctx: Ctx,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let base = format!("/analytics/sites/{}", seg(&id));
    let mut period = String::new();
    for name in ["from", "to"] {
        if let Some(value) = query.get(name).filter(|v| !v.is_empty()) {
            period.push_str(&format!("&{name}={}", seg(value)));
        }
    }
    let site = ctx.get(&base).await;
    let stats = ctx.get(&format!("{base}/stats?{period}")).await;
    let mut breakdowns = Vec::new();
    for (property, heading) in BREAKDOWNS {
        let path = format!("{base}/breakdown?property={property}&limit=10{period}");
        breakdowns.push((*property, *heading, ctx.get(&path).await));
    }
    let speed = ctx
        .get(&format!(
            "/speed-insights/sites/{}?metric=LCP{period}",
            seg(&id)
        ))
        .await;
    let title = site
        .as_ref()
        .map(|s| html::text(&s["domain"]))
        .unwrap_or_else(|_| id.clone());
    let value = |name: &str| query.get(name).cloned().unwrap_or_default();
    let content = html! {
        form method="get" action=(format!("{HERE}/{}", seg(&id))) {
            div class="field" {
                label for="f-from" { "From (YYYY-MM-DD)" }
                input id="f-from" name="from" value=(value("from"));
            }
            div class="field" {
                label for="f-to" { "To (YYYY-MM-DD)" }
                input id="f-to" name="to" value=(value("to"));
            }
            button type="submit" { "Show" }
        }
        (section(&stats, |s| html! {
            p { "From " (html::text(&s["from"])) " to " (html::text(&s["to"])) " (UTC)" }
            (html::table("Totals", std::slice::from_ref(s), METRIC_COLUMNS, None))
            (html::table("Over time", &html::items(&s["timeseries"]), &[
                col("Time", "time"), col("Visitors", "visitors"), col("Page views", "pageviews"),
                col("Visits", "visits"), col("Bounce rate (%)", "bounceRate"),
            ], None))
        }))
        @for (_, heading, result) in &breakdowns {
            h2 { (heading) }
            (section(result, |b| html::table(heading, &html::items(&b["rows"]), &[
                col("Value", "value"), col("Visitors", "visitors"), col("Page views", "pageviews"),
                col("Visits", "visits"), col("Bounce rate (%)", "bounceRate"),
            ], None)))
        }
        h2 { "Speed insights: LCP, worst routes first" }
        (section(&speed, |sp| html::table("Largest contentful paint (p75, ms)", &html::items(&sp["routes"]), &[
            col("Route", "route"), col("Device", "device"), col("p75 (ms)", "p75"), col("Samples", "samples"),
        ], None)))
        h2 { "Embed" }
        p { "Count a site's page views with the script (no cookie), or turn on an app's edge analytics with PUT /api/v1/apps/{id}/analytics." }
        (html::pre(&format!(
            "<script defer data-domain=\"{title}\" src=\"{}/api/v1/analytics/script.js\"></script>",
            "https://YOUR-PLATEAU"
        )))
    };
    html::page(&ctx.session, HERE, &title, content).into_response()
}
