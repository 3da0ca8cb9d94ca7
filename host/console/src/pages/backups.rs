//! A database's backups and branches: the backup ledger, taking a backup
//! now, restoring into a new database (to the latest archived WAL or a
//! target time), and the branches (create, protect, delete).

use axum::Router;
use axum::extract::{Path, Query};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use maud::html;
use serde_json::{Map, Value, json};
use std::collections::HashMap;

use super::{Fields, after, field, number, refused, section, seg};
use crate::html::{self, col};
use crate::{Console, Ctx};

pub fn routes() -> Router<Console> {
    Router::new()
        .route("/console/databases/{id}/backups", get(show).post(take))
        .route("/console/databases/{id}/restore", post(restore))
        .route("/console/databases/{id}/branches", post(create_branch))
        .route(
            "/console/databases/{id}/branches/{branch}/protect",
            post(protect),
        )
        .route(
            "/console/databases/{id}/branches/{branch}/delete",
            post(delete_branch),
        )
}

/// The page's path for database `id`.
fn here(id: &str) -> String {
    format!("/console/databases/{}/backups", seg(id))
}

async fn show(
    ctx: Ctx,
    Path(id): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    let base = format!("/databases/{}", seg(&id));
    let db = ctx.get(&base).await;
    let ledger = ctx.get(&format!("{base}/backups")).await;
    let branches = ctx.get(&format!("{base}/branches")).await;
    let s = &ctx.session;
    let here = here(&id);
    let name = db
        .as_ref()
        .map(|d| html::text(&d["name"]))
        .unwrap_or_else(|_| "the database".to_owned());
    let content = html! {
        p { a href=(format!("/console/databases/{}", seg(&id))) { "Back to " (name) } }
        h2 { "Backups" }
        p { "Base backups and archived stretches of WAL, oldest first. A restore replays them into a new database." }
        @let taken = field(&query, "taken");
        @if !taken.is_empty() {
            p class="notice" role="status" { "Backup " (taken) " is asked for: the host takes it now; refresh to see it completed." }
        }
        p { a href=(here) { "Refresh" } }
        (section(&ledger, |l| html::table("Backup ledger", &html::items(l),
            &[col("Id", "id"), col("Kind", "kind"), col("Status", "status"), col("Size (bytes)", "sizeBytes"),
              col("Started", "startedAt"), col("Ended", "endedAt"), col("Detail", "detail")], None)))
        (html::form(s, &here, html! {
            div {
                input id="f-incremental" type="checkbox" name="incremental" value="true";
                label for="f-incremental" { " Only the WAL since the last entry (incremental)" }
            }
        }, "Take a backup now"))
        h2 { "Restore into a new database" }
        p { "The source stays as it is; the restore is a new database, counted against the plan." }
        (html::form(s, &format!("/console/databases/{}/restore", seg(&id)), html! {
            (html::input("New database's name", "name", "text", false, Some("<name>-restore-<time> when empty")))
            (html::input("Target time", "targetTime", "text", false,
                Some("RFC 3339, such as 2026-11-26T08:00:00Z; the latest archived WAL when empty")))
        }, "Restore"))
        h2 { "Branches" }
        (section(&branches, |b| {
            let items = html::items(b);
            html! {
                (html::table("Branches", &items,
                    &[col("Name", "name"), col("Status", "status"), col("Production", "production"), col("Protected", "protected"),
                      col("Schema only", "schemaOnly"), col("From", "fromTimestamp"), col("Expires", "expiresAt")],
                    Some(&|b: &Value| format!("/console/databases/{}", seg(&html::text(&b["id"]))))))
                @for b in items.iter().filter(|b| b["production"] != true) {
                    @let branch = html::text(&b["id"]);
                    @let name = html::text(&b["name"]);
                    @let path = format!("/console/databases/{}/branches/{}", seg(&id), seg(&branch));
                    div class="actions" {
                        @let protected = b["protected"] == true;
                        form method="post" action=(format!("{path}/protect")) class="inline" {
                            (html::csrf(s))
                            input type="hidden" name="protected" value=(!protected);
                            button type="submit" {
                                @if protected { "Unprotect " } @else { "Protect " } (name)
                                span class="visually-hidden" { " (branch)" }
                            }
                        }
                        @if !protected {
                            (html::button(s, &format!("{path}/delete"), &format!("Delete {name}"), "(branch and its data)"))
                        }
                    }
                }
            }
        }))
        h2 { "Create a branch" }
        (html::form(s, &format!("/console/databases/{}/branches", seg(&id)), html! {
            (html::input("Branch name", "branchName", "text", true, None))
            (html::input("Copy as it was at", "fromTimestamp", "text", false, Some("RFC 3339; now when empty")))
            (html::input("Delete after (hours)", "ttlHours", "number", false, Some("1 to 8760; kept until deleted when empty")))
            div {
                input id="f-schemaOnly" type="checkbox" name="schemaOnly" value="true";
                label for="f-schemaOnly" { " Structure only (every table emptied)" }
            }
            div {
                input id="f-protected" type="checkbox" name="protected" value="true";
                label for="f-protected" { " Protected (cannot be deleted)" }
            }
        }, "Create branch"))
    };
    let title = format!("Backups and branches of {name}");
    html::page(s, "/console/databases", &title, content).into_response()
}

async fn take(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    let body = json!({ "full": field(&fields, "incremental") != "true" });
    match ctx
        .post(&format!("/databases/{}/backups", seg(&id)), body)
        .await
    {
        Ok(b) => {
            let back = format!("{}?taken={}", here(&id), seg(&html::text(&b["id"])));
            after(&ctx, Ok(b), &back)
        }
        Err(p) => refused(&ctx, &p, &here(&id)),
    }
}

/// The fields given, as a JSON object without the blank ones.
fn present(pairs: &[(&str, Value)]) -> Value {
    let body: Map<String, Value> = pairs
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    Value::Object(body)
}

async fn restore(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    let body = present(&[
        ("name", super::optional(&fields, "name")),
        ("targetTime", super::optional(&fields, "targetTime")),
    ]);
    match ctx
        .post(&format!("/databases/{}/restore", seg(&id)), body)
        .await
    {
        Ok(d) => {
            let back = format!("/console/databases/{}", seg(&html::text(&d["id"])));
            after(&ctx, Ok(d), &back)
        }
        Err(p) => refused(&ctx, &p, &here(&id)),
    }
}

async fn create_branch(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    let checked = |name: &str| Value::Bool(field(&fields, name) == "true");
    let body = present(&[
        (
            "name",
            Value::String(field(&fields, "branchName").to_owned()),
        ),
        ("fromTimestamp", super::optional(&fields, "fromTimestamp")),
        ("ttlHours", number(&fields, "ttlHours")),
        ("schemaOnly", checked("schemaOnly")),
        ("protected", checked("protected")),
    ]);
    let result = ctx
        .post(&format!("/databases/{}/branches", seg(&id)), body)
        .await;
    after(&ctx, result, &here(&id))
}

/// Protects a branch, or lifts its protection (the form says which, so a
/// second submit changes nothing).
async fn protect(ctx: Ctx, Path((id, branch)): Path<(String, String)>, fields: Fields) -> Response {
    let path = format!("/databases/{}/branches/{}", seg(&id), seg(&branch));
    let body = json!({ "protected": field(&fields, "protected") == "true" });
    let result = ctx.call(Method::PATCH, &path, Some(body)).await;
    after(&ctx, result, &here(&id))
}

async fn delete_branch(ctx: Ctx, Path((id, branch)): Path<(String, String)>) -> Response {
    let path = format!("/databases/{}/branches/{}", seg(&id), seg(&branch));
    let result = ctx.call(Method::DELETE, &path, None).await;
    after(&ctx, result, &here(&id))
}
