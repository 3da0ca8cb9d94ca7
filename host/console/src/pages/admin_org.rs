//! The operator's page of one organisation: its plan, the plan's limits
//! and what it holds against them, and changing the plan (a plan whose
//! limits it is past is refused by the API, naming each resource over).

use axum::Router;
use axum::extract::Path;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use maud::html;
use plateau_core::Plan;
use serde_json::json;

use super::{Fields, after, field, section, seg};
use crate::html;
use crate::{Console, Ctx};

pub fn routes() -> Router<Console> {
    Router::new()
        .route("/console/admin/organizations/{id}", get(organization))
        .route("/console/admin/organizations/{id}/plan", post(change_plan))
}

async fn organization(ctx: Ctx, Path(id): Path<String>) -> Response {
    let detail = ctx.get(&format!("/admin/organizations/{}", seg(&id))).await;
    let s = &ctx.session;
    let title = detail
        .as_ref()
        .map(|d| html::text(&d["organization"]["name"]))
        .unwrap_or_else(|_| "Organisation".to_owned());
    let content = section(&detail, |d| {
        let plan = html::text(&d["organization"]["plan"]);
        html! {
            dl {
                dt { "Id" } dd { (html::text(&d["organization"]["id"])) }
                dt { "Plan" } dd { (plan) }
                dt { "Members" } dd { (html::text(&d["members"])) }
            }
            div class="table-wrap" tabindex="0" role="region" aria-label="Holdings against the plan" {
                table {
                    caption { "Holdings against the plan" }
                    thead { tr { th scope="col" { "Resource" } th scope="col" { "Held" } th scope="col" { "Plan limit" } } }
                    tbody {
                        @for (label, held, limit) in [
                            ("Apps", &d["footprint"]["apps"], &d["limits"]["apps"]),
                            ("Databases", &d["footprint"]["databases"], &d["limits"]["databases"]),
                            ("Cache instances", &d["footprint"]["cacheInstances"], &d["limits"]["cacheInstances"]),
                            ("Database disk (GB)", &d["footprint"]["dbDiskGb"], &d["limits"]["dbDiskGb"]),
                            ("Object storage (bytes; limit in GB)", &d["footprint"]["storageBytes"], &d["limits"]["storageGb"]),
                        ] {
                            tr { th scope="row" { (label) } td { (html::text(held)) } td { (html::text(limit)) } }
                        }
                    }
                }
            }
            h2 { "Change the plan" }
            p { "A plan whose limits the organisation is past is refused, naming what is over; nothing is paused or deleted." }
            (html::form(s, &format!("/console/admin/organizations/{}/plan", seg(&id)), html! {
                div class="field" {
                    label for="f-plan" { "New plan" }
                    select id="f-plan" name="plan" {
                        @for p in Plan::ALL {
                            option value=(p.as_str()) selected[p.as_str() == plan] { (p.as_str()) }
                        }
                    }
                }
            }, "Change plan"))
            p { a href="/console/admin/organizations" { "Back to organisations" } }
        }
    });
    html::page(s, "/console/admin/organizations", &title, content).into_response()
}

async fn change_plan(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    let result = ctx
        .call(
            Method::PATCH,
            &format!("/admin/organizations/{}", seg(&id)),
            Some(json!({ "plan": field(&fields, "plan") })),
        )
        .await;
    after(
        &ctx,
        result,
        &format!("/console/admin/organizations/{}", seg(&id)),
    )
}
