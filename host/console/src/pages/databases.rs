//! Databases: the list, creating one, and one database's page
//! (connection strings with copy buttons, members and their lag, roles,
//! extensions, and the SQL console).

use axum::Router;
use axum::extract::Path;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use maud::{Markup, html};
use serde_json::{Value, json};

use super::{Fields, after, field, optional, section, seg};
use crate::api::Problem;
use crate::html::{self, col};
use crate::{Console, Ctx};

pub fn routes() -> Router<Console> {
    Router::new()
        .route("/console/databases", get(list).post(create))
        .route("/console/databases/{id}", get(show))
        .route("/console/databases/{id}/query", post(query))
        .route("/console/databases/{id}/roles", post(create_role))
        .route(
            "/console/databases/{id}/roles/{name}/delete",
            post(delete_role),
        )
        .route("/console/databases/{id}/extensions", post(create_extension))
}

async fn list(ctx: Ctx) -> Response {
    let list = ctx.get("/databases").await;
    let s = &ctx.session;
    let content = html! {
        (section(&list, |l| html::table("Databases", &html::items(l),
            &[col("Name", "name"), col("Status", "status"), col("Version", "version"), col("Replicas", "replicas"), col("Memory (MiB)", "memoryMb")],
            Some(&|d: &Value| format!("/console/databases/{}", html::text(&d["id"]))))))
        h2 { "Create a database" }
        (html::form(s, "/console/databases", html! {
            (html::input("Name", "name", "text", true, None))
            div class="field" {
                label for="f-version" { "PostgreSQL version" }
                select id="f-version" name="version" {
                    option value="17" selected { "17" }
                    option value="16" { "16" }
                    option value="15" { "15" }
                }
            }
        }, "Create database"))
    };
    html::page(s, "/console/databases", "Databases", content).into_response()
}

async fn create(ctx: Ctx, fields: Fields) -> Response {
    let body = json!({ "name": field(&fields, "name"), "version": optional(&fields, "version") });
    match ctx.post("/databases", body).await {
        Ok(d) => {
            let back = format!("/console/databases/{}", html::text(&d["id"]));
            after(&ctx, Ok(d), &back)
        }
        Err(p) => super::refused(&ctx, &p, "/console/databases"),
    }
}

async fn show(ctx: Ctx, Path(id): Path<String>) -> Response {
    render(&ctx, &id, None, "").await
}

/// The database's page, with the SQL console's last result when there is one.
async fn render(
    ctx: &Ctx,
    id: &str,
    result: Option<Result<Value, Problem>>,
    sql: &str,
) -> Response {
    let base = format!("/databases/{}", seg(id));
    let here = format!("/console{base}");
    let db = ctx.get(&base).await;
    let running = db.as_ref().is_ok_and(|d| d["status"] == "running");
    let s = &ctx.session;
    let title = db
        .as_ref()
        .map(|d| html::text(&d["name"]))
        .unwrap_or_else(|_| "Database".to_owned());
    let details = if running {
        let connection = ctx.get(&format!("{base}/connection")).await;
        let replicas = ctx.get(&format!("{base}/replicas")).await;
        let roles = ctx.get(&format!("{base}/roles")).await;
        let extensions = ctx.get(&format!("{base}/extensions")).await;
        html! {
            h2 { "Connection" }
            (section(&connection, |c| html! {
                (html::copyable("Pooled URI", "uri", &html::text(&c["uri"])))
                (html::copyable("Write URI (sessions, migrations)", "write-uri", &html::text(&c["writeUri"])))
                @if c["readUri"].is_string() {
                    (html::copyable("Read-only URI", "read-uri", &html::text(&c["readUri"])))
                }
                (html::copyable("Password", "password", &html::text(&c["password"])))
            }))
            h2 { "Members" }
            (section(&replicas, |r| html::table("Members and lag", r["members"].as_array().map(Vec::as_slice).unwrap_or_default(),
                &[col("Name", "name"), col("Role", "role"), col("State", "state"), col("Healthy", "healthy"), col("Lag (bytes)", "lagBytes")], None)))
            h2 { "SQL console" }
            (sql_console(ctx, &here, sql, result.as_ref()))
            h2 { "Roles" }
            (section(&roles, |r| {
                let items = html::items(r);
                html! {
                    (html::table("Roles", &items, &[col("Name", "name"), col("Login", "login"), col("Create databases", "createdb"), col("Owner", "owner")], None))
                    @for role in items.iter().filter(|r| r["owner"] != true) {
                        @let name = html::text(&role["name"]);
                        (html::button(s, &format!("{here}/roles/{}/delete", seg(&name)), &format!("Drop {name}"), "(role)"))
                    }
                }
            }))
            (html::form(s, &format!("{here}/roles"), html! {
                (html::input("Role name", "role", "text", true, None))
                (html::input("Role password", "rolePassword", "password", true, None))
            }, "Create role"))
            h2 { "Extensions" }
            (section(&extensions, |e| html::table("Extensions", &html::items(e),
                &[col("Name", "name"), col("Installed", "installed"), col("Version", "version"), col("Schema", "schema")], None)))
            (html::form(s, &format!("{here}/extensions"), html::input("Extension", "extension", "text", true, None), "Install extension"))
        }
    } else {
        html! { p role="status" { "The database is not running yet; " a href=(here) { "refresh" } " to see its connection and console." } }
    };
    let content = html! {
        (section(&db, |d| html! {
            dl {
                dt { "Status" } dd { (html::text(&d["status"])) " " (html::text(&d["statusDetail"])) }
                dt { "Version" } dd { (html::text(&d["version"])) }
                dt { "Replicas" } dd { (html::text(&d["replicas"])) }
            }
        }))
        (details)
    };
    html::page(s, "/console/databases", &title, content).into_response()
}

fn sql_console(
    ctx: &Ctx,
    here: &str,
    sql: &str,
    result: Option<&Result<Value, Problem>>,
) -> Markup {
    html! {
        form method="post" action=(format!("{here}/query")) class="stack" {
            (html::csrf(&ctx.session))
            div class="field" {
                label for="f-sql" { "SQL statement" }
                textarea id="f-sql" name="sql" required { (sql) }
            }
            div {
                input id="f-write" type="checkbox" name="write" value="true";
                label for="f-write" { " Allow writes (needs databases:write)" }
            }
            button type="submit" { "Run" }
        }
        @match result {
            Some(Ok(r)) => {
                @let columns: Vec<String> = r["columns"].as_array().into_iter().flatten().map(|c| html::text(&c["name"])).collect();
                p role="status" { (html::text(&r["rowCount"])) " rows" @if r["truncated"] == true { " (truncated)" } }
                div class="table-wrap" tabindex="0" role="region" aria-label="Result" {
                    table {
                        caption { "Result" }
                        thead { tr { @for c in &columns { th scope="col" { (c) } } } }
                        tbody {
                            @for row in r["rows"].as_array().into_iter().flatten() {
                                tr { @for v in row.as_array().into_iter().flatten() { td { (html::text(v)) } } }
                            }
                        }
                    }
                }
            }
            Some(Err(p)) => (html::problem(&p.message())),
            None => {}
        }
    }
}

async fn query(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    let sql = fields.get("sql").cloned().unwrap_or_default();
    let body = json!({ "sql": sql, "write": field(&fields, "write") == "true" });
    let result = ctx
        .post(&format!("/databases/{}/query", seg(&id)), body)
        .await;
    render(&ctx, &id, Some(result), &sql).await
}

async fn create_role(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    let body = json!({ "name": field(&fields, "role"), "password": fields.get("rolePassword").cloned().unwrap_or_default() });
    let result = ctx
        .post(&format!("/databases/{}/roles", seg(&id)), body)
        .await;
    after(&ctx, result, &format!("/console/databases/{}", seg(&id)))
}

async fn delete_role(ctx: Ctx, Path((id, name)): Path<(String, String)>) -> Response {
    let path = format!("/databases/{}/roles/{}", seg(&id), seg(&name));
    let result = ctx.call(Method::DELETE, &path, None).await;
    after(&ctx, result, &format!("/console/databases/{}", seg(&id)))
}

async fn create_extension(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    let body = json!({ "name": field(&fields, "extension") });
    let result = ctx
        .post(&format!("/databases/{}/extensions", seg(&id)), body)
        .await;
    after(&ctx, result, &format!("/console/databases/{}", seg(&id)))
}
