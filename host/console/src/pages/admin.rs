//! The operator's pages: organisations (create, with the owner token
//! shown once; add members; each one's page, with its plan, is
//! [`super::admin_org`]) and plugins (load a version from a registry
//! reference, switch to a version, roll back).

use axum::Router;
use axum::extract::Path;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use maud::html;
use serde_json::json;

use super::{Fields, after, field, optional, refused, section, seg};
use crate::html::{self, col};
use crate::{Console, Ctx};

pub fn routes() -> Router<Console> {
    Router::new()
        .route(
            "/console/admin/organizations",
            get(organizations).post(create_org),
        )
        .route(
            "/console/admin/organizations/{id}/members",
            post(add_member),
        )
        .route("/console/admin/plugins", get(plugins))
        .route("/console/admin/plugins/{name}/versions", post(load))
        .route("/console/admin/plugins/{name}/switch", post(switch))
        .route("/console/admin/plugins/{name}/rollback", post(rollback))
}

async fn organizations(ctx: Ctx) -> Response {
    let list = ctx.get("/admin/organizations").await;
    let s = &ctx.session;
    let content = html! {
        (section(&list, |l| {
            let items = html::items(l);
            html! {
                (html::table("Organisations", &items, &[col("Name", "name"), col("Id", "id"), col("Plan", "plan"), col("Created", "createdAt")],
                    Some(&|o: &serde_json::Value| format!("/console/admin/organizations/{}", seg(&html::text(&o["id"]))))))
                @for o in &items {
                    @let name = html::text(&o["name"]);
                    h3 { "Add a member to " (name) }
                    (html::form(s, &format!("/console/admin/organizations/{}/members", html::text(&o["id"])), html! {
                        (html::input(&format!("Member name ({name})"), &format!("name-{}", html::text(&o["id"])), "text", true, None))
                        div class="field" {
                            label for=(format!("f-role-{}", html::text(&o["id"]))) { "Role" }
                            select id=(format!("f-role-{}", html::text(&o["id"]))) name="role" {
                                @for role in plateau_core::Role::ALL {
                                    option value=(role.as_str()) { (role.as_str()) }
                                }
                            }
                        }
                    }, "Add member"))
                }
            }
        }))
        h2 { "Create an organisation" }
        (html::form(s, "/console/admin/organizations", html! {
            (html::input("Name", "name", "text", true, None))
            (html::input("Plan", "plan", "text", false, Some("free, starter, pro or scale; free when empty")))
        }, "Create organisation"))
    };
    html::page(s, "/console/admin/organizations", "Organisations", content).into_response()
}

async fn create_org(ctx: Ctx, fields: Fields) -> Response {
    let body = json!({ "name": field(&fields, "name"), "plan": optional(&fields, "plan") });
    match ctx.post("/admin/organizations", body).await {
        Ok(created) => super::account::shown_once(
            &ctx,
            "Organisation created",
            "Owner token",
            &created["owner"]["token"],
        ),
        Err(p) => refused(&ctx, &p, "/console/admin/organizations"),
    }
}

async fn add_member(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    let body =
        json!({ "name": field(&fields, &format!("name-{id}")), "role": field(&fields, "role") });
    match ctx
        .post(&format!("/admin/organizations/{}/members", seg(&id)), body)
        .await
    {
        Ok(created) => super::account::shown_once(
            &ctx,
            "Member added",
            "The member's token",
            &created["token"],
        ),
        Err(p) => refused(&ctx, &p, "/console/admin/organizations"),
    }
}

async fn plugins(ctx: Ctx) -> Response {
    let list = ctx.get("/admin/plugins").await;
    let s = &ctx.session;
    let content = section(&list, |l| {
        html! {
            @for p in html::items(l) {
                @let name = html::text(&p["name"]);
                @let here = format!("/console/admin/plugins/{}", seg(&name));
                h2 { (name) }
                dl {
                    dt { "Active version" } dd { (html::text(&p["activeVersion"])) }
                    dt { "Active digest" } dd { (html::text(&p["activeDigest"])) }
                    dt { "Generation" } dd { (html::text(&p["generation"])) }
                }
                (html::table(&format!("Versions of {name}"), p["versions"].as_array().map(Vec::as_slice).unwrap_or_default(),
                    &[col("Version", "version"), col("Digest", "digest"), col("WIT", "witVersion"), col("Source", "source"), col("Loaded", "loadedAt")], None))
                div class="actions" {
                    @for v in p["versions"].as_array().into_iter().flatten().filter(|v| v["digest"] != p["activeDigest"]) {
                        form method="post" action=(format!("{here}/switch")) class="inline" {
                            (html::csrf(s))
                            input type="hidden" name="digest" value=(html::text(&v["digest"]));
                            button type="submit" { "Switch to " (html::text(&v["version"])) span class="visually-hidden" { " of " (name) } }
                        }
                    }
                    @if p["previousDigest"].is_string() {
                        (html::button(s, &format!("{here}/rollback"), "Roll back", &name))
                    }
                }
                (html::form(s, &format!("{here}/versions"), html! {
                    (html::input(&format!("Load a version of {name} from an OCI reference"), &format!("reference-{name}"), "text", true, None))
                }, "Load version"))
            }
        }
    });
    html::page(s, "/console/admin/plugins", "Plugins", content).into_response()
}

async fn load(ctx: Ctx, Path(name): Path<String>, fields: Fields) -> Response {
    let body = json!({ "reference": field(&fields, &format!("reference-{name}")) });
    let result = ctx
        .post(&format!("/admin/plugins/{}/versions", seg(&name)), body)
        .await;
    after(&ctx, result, "/console/admin/plugins")
}

async fn switch(ctx: Ctx, Path(name): Path<String>, fields: Fields) -> Response {
    let body = json!({ "digest": field(&fields, "digest") });
    let result = ctx
        .post(&format!("/admin/plugins/{}/switch", seg(&name)), body)
        .await;
    after(&ctx, result, "/console/admin/plugins")
}

async fn rollback(ctx: Ctx, Path(name): Path<String>) -> Response {
    let result = ctx
        .post(
            &format!("/admin/plugins/{}/rollback", seg(&name)),
            json!({}),
        )
        .await;
    after(&ctx, result, "/console/admin/plugins")
}
