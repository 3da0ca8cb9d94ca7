//! The account: tokens (create, shown once, revoke), connect grants,
//! usage, and projects (create, delete).

use axum::Router;
use axum::extract::Path;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use maud::html;
use serde_json::{Value, json};

use super::{Fields, after, field, number, optional, refused, section, seg};
use crate::html::{self, col};
use crate::{Console, Ctx};

pub fn routes() -> Router<Console> {
    Router::new()
        .route("/console/account", get(account))
        .route("/console/account/tokens", post(create_token))
        .route("/console/account/tokens/{id}/revoke", post(revoke_token))
        .route("/console/projects", get(projects).post(create_project))
        .route("/console/projects/{id}/delete", post(delete_project))
}

async fn account(ctx: Ctx) -> Response {
    let me = ctx.get("/me").await;
    let usage = ctx.get("/usage").await;
    let tokens = ctx.get("/tokens").await;
    let grants = ctx.get("/connect/grants").await;
    let s = &ctx.session;
    let content = html! {
        h2 { "You" }
        (section(&me, |me| html! {
            dl {
                dt { "User" } dd { (html::text(&me["user"]["name"])) " " (html::text(&me["user"]["email"])) }
                dt { "Role" } dd { (html::text(&me["user"]["role"])) }
                dt { "Organisation" } dd { (html::text(&me["organization"]["name"])) }
                dt { "Plan" } dd { (html::text(&me["organization"]["plan"])) }
            }
        }))
        h2 { "Usage this period" }
        (section(&usage, |u| html! {
            dl {
                @for (name, value) in u["counts"].as_object().into_iter().flatten() {
                    dt { (name) } dd { (html::text(value)) }
                }
            }
        }))
        h2 { "API tokens" }
        (section(&tokens, |t| {
            let items = html::items(t);
            html! {
                (html::table("Tokens", &items, &[col("Name", "name"), col("Token", "maskedToken"),
                    col("Scopes", "scopes"), col("Status", "status"), col("Expires", "expiresAt")], None))
                @for t in items.iter().filter(|t| t["status"] == "active") {
                    @let id = html::text(&t["id"]);
                    @let name = html::text(&t["name"]);
                    (html::button(s, &format!("/console/account/tokens/{id}/revoke"), &format!("Revoke {name}"), "(token)"))
                }
            }
        }))
        h3 { "Create a token" }
        (html::form(s, "/console/account/tokens", html! {
            (html::input("Name", "name", "text", true, None))
            (html::input("Scopes", "scopes", "text", false, Some("space-separated, such as apps:read databases:write; empty for all of yours")))
            (html::input("Expires in (seconds)", "expiresInSeconds", "number", false, None))
        }, "Create token"))
        h2 { "Connect grants" }
        (section(&grants, |g| html::table("Grants", &html::items(g),
            &[col("Name", "name"), col("Scopes", "scopes"), col("Status", "status"), col("Created", "createdAt")], None)))
        p { "Members are added by the operator (" a href="/console/admin/organizations" { "organisations" } ")." }
    };
    html::page(s, "/console/account", "Account", content).into_response()
}

async fn create_token(ctx: Ctx, fields: Fields) -> Response {
    let scopes: Vec<&str> = field(&fields, "scopes").split_whitespace().collect();
    let mut body = json!({ "name": optional(&fields, "name") });
    if !scopes.is_empty() {
        body["scopes"] = json!(scopes);
    }
    if !field(&fields, "expiresInSeconds").is_empty() {
        body["expiresInSeconds"] = number(&fields, "expiresInSeconds");
    }
    match ctx.post("/tokens", body).await {
        Ok(created) => shown_once(&ctx, "Token created", "Token", &created["token"]),
        Err(p) => refused(&ctx, &p, "/console/account"),
    }
}

/// A page showing a secret the API shows only once.
pub fn shown_once(ctx: &Ctx, title: &str, label: &str, secret: &Value) -> Response {
    let content = html! {
        p class="notice" role="status" { "Copy it now: it is never shown again." }
        (html::copyable(label, "secret", &html::text(secret)))
        p { a href="/console/account" { "Back to the account" } }
    };
    html::page(&ctx.session, "", title, content).into_response()
}

async fn revoke_token(ctx: Ctx, Path(id): Path<String>) -> Response {
    let result = ctx
        .call(Method::DELETE, &format!("/tokens/{}", seg(&id)), None)
        .await;
    after(&ctx, result, "/console/account")
}

async fn projects(ctx: Ctx) -> Response {
    let list = ctx.get("/projects").await;
    let s = &ctx.session;
    let content = html! {
        (section(&list, |l| {
            let items = html::items(l);
            html! {
                (html::table("Projects", &items, &[col("Name", "name"), col("Id", "id"),
                    col("Default", "isDefault"), col("Created", "createdAt")], None))
                @for p in items.iter().filter(|p| p["isDefault"] != true) {
                    @let name = html::text(&p["name"]);
                    (html::button(s, &format!("/console/projects/{}/delete", html::text(&p["id"])), &format!("Delete {name}"), "(project)"))
                }
            }
        }))
        h2 { "Create a project" }
        (html::form(s, "/console/projects", html::input("Name", "name", "text", true, None), "Create project"))
    };
    html::page(s, "/console/projects", "Projects", content).into_response()
}

async fn create_project(ctx: Ctx, fields: Fields) -> Response {
    let result = ctx
        .post("/projects", json!({ "name": field(&fields, "name") }))
        .await;
    after(&ctx, result, "/console/projects")
}

async fn delete_project(ctx: Ctx, Path(id): Path<String>) -> Response {
    let result = ctx
        .call(Method::DELETE, &format!("/projects/{}", seg(&id)), None)
        .await;
    after(&ctx, result, "/console/projects")
}
