//! Apps: the list, creating one from an image, and one app's page
//! (its URL, deployments with build logs, runtime logs, env, scale,
//! rollback, pause and resume, deploying another image).

use axum::Router;
use axum::extract::Path;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use maud::html;
use serde_json::{Value, json};

use super::{Fields, after, field, number, optional, section, seg};
use crate::html::{self, col};
use crate::{Console, Ctx};

pub fn routes() -> Router<Console> {
    Router::new()
        .route("/console/apps", get(list).post(create))
        .route("/console/apps/{id}", get(show))
        .route("/console/apps/{id}/deployments", post(deploy))
        .route("/console/apps/{id}/env", post(set_env))
        .route("/console/apps/{id}/env/delete", post(delete_env))
        .route("/console/apps/{id}/scale", post(scale))
        .route("/console/apps/{id}/{action}", post(action))
}

async fn list(ctx: Ctx) -> Response {
    let apps = ctx.get("/apps").await;
    let s = &ctx.session;
    let content = html! {
        (section(&apps, |a| html::table("Apps", &html::items(a),
            &[col("Name", "name"), col("Status", "status"), col("URL", "url"), col("Image", "image")],
            Some(&|a: &Value| format!("/console/apps/{}", html::text(&a["id"]))))))
        h2 { "Create an app from an image" }
        (html::form(s, "/console/apps", html! {
            (html::input("Name", "name", "text", true, None))
            (html::input("Image", "image", "text", true, Some("an OCI reference: a wasi:http component or a Linux image listening on $PORT")))
            (html::input("Port", "port", "number", false, Some("for Linux images; default 8080")))
        }, "Create and deploy"))
    };
    html::page(s, "/console/apps", "Apps", content).into_response()
}

async fn create(ctx: Ctx, fields: Fields) -> Response {
    let mut body = json!({ "name": field(&fields, "name"), "image": optional(&fields, "image") });
    if !field(&fields, "port").is_empty() {
        body["port"] = number(&fields, "port");
    }
    match ctx.post("/apps", body).await {
        Ok(app) => {
            let back = format!("/console/apps/{}", html::text(&app["id"]));
            after(&ctx, Ok(app), &back)
        }
        Err(p) => super::refused(&ctx, &p, "/console/apps"),
    }
}

async fn show(ctx: Ctx, Path(id): Path<String>) -> Response {
    let base = format!("/apps/{}", seg(&id));
    let app = ctx.get(&base).await;
    let deployments = ctx.get(&format!("{base}/deployments")).await;
    let logs = ctx.get(&format!("{base}/logs?limit=200")).await;
    let env = ctx.get(&format!("{base}/env")).await;
    let scale = ctx.get(&format!("{base}/scale")).await;
    let s = &ctx.session;
    let here = format!("/console/apps/{}", seg(&id));
    let title = app
        .as_ref()
        .map(|a| html::text(&a["name"]))
        .unwrap_or_else(|_| "App".to_owned());
    let content = html! {
        (section(&app, |a| html! {
            dl {
                dt { "Status" } dd { (html::text(&a["status"])) }
                dt { "URL" } dd { a href=(html::text(&a["url"])) { (html::text(&a["url"])) } }
                dt { "Image" } dd { (html::text(&a["image"])) }
                dt { "Replicas" } dd { (html::text(&a["replicas"])) }
                dt { "Memory" } dd { (html::text(&a["memoryMb"])) " MiB" }
            }
            div class="actions" {
                a href=(html::text(&a["url"])) { "Open the app" }
                @if a["status"] == "paused" {
                    (html::button(s, &format!("{here}/resume"), "Resume", "the app"))
                } @else {
                    (html::button(s, &format!("{here}/pause"), "Pause", "the app"))
                }
                (html::button(s, &format!("{here}/rollback"), "Roll back", "to the previous deployment"))
            }
        }))
        h2 { "Deploy another image" }
        (html::form(s, &format!("{here}/deployments"), html::input("Image", "image", "text", true, None), "Deploy"))
        h2 { "Deployments" }
        (section(&deployments, |d| {
            let items = html::items(d);
            html! {
                (html::table("Deployments", &items, &[col("Id", "id"), col("Status", "status"),
                    col("Cause", "cause"), col("Image", "image"), col("Reason", "reason"), col("Created", "createdAt")], None))
                @for d in items.iter().filter(|d| d["buildLog"].is_string()) {
                    h3 { "Build log of " (html::text(&d["id"])) }
                    (html::pre(&html::text(&d["buildLog"])))
                }
            }
        }))
        h2 { "Runtime logs" }
        p { a href=(here) { "Refresh" } }
        (section(&logs, |l| {
            let lines: Vec<String> = html::items(l).iter()
                .map(|l| format!("{} {} {}", html::text(&l["at"]), html::text(&l["stream"]), html::text(&l["line"])))
                .collect();
            if lines.is_empty() { html! { p { "No log lines yet." } } } else { html::pre(&lines.join("\n")) }
        }))
        h2 { "Environment" }
        (section(&env, |e| {
            let items = html::items(e);
            html! {
                (html::table("Variables (values are never shown)", &items, &[col("Name", "key"), col("Target", "target"), col("Updated", "updatedAt")], None))
                @for v in &items {
                    @let key = html::text(&v["key"]);
                    form method="post" action=(format!("{here}/env/delete")) class="inline" {
                        (html::csrf(s))
                        input type="hidden" name="key" value=(key);
                        button type="submit" { "Remove " (key) span class="visually-hidden" { " from the environment" } }
                    }
                }
            }
        }))
        (html::form(s, &format!("{here}/env"), html! {
            (html::input("Name", "key", "text", true, None))
            (html::input("Value", "value", "password", true, None))
        }, "Set and redeploy"))
        h2 { "Scale" }
        (section(&scale, |sc| html::form(s, &format!("{here}/scale"), html! {
            div class="field" {
                label for="f-replicas" { "Replicas (at most " (html::text(&sc["maxReplicas"])) ")" }
                input id="f-replicas" name="replicas" type="number" min="0" value=(html::text(&sc["replicas"]));
            }
        }, "Scale")))
    };
    html::page(s, "/console/apps", &title, content).into_response()
}

async fn deploy(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    let path = format!("/apps/{}/deployments", seg(&id));
    let result = ctx
        .post(&path, json!({ "image": field(&fields, "image") }))
        .await;
    after(&ctx, result, &format!("/console/apps/{}", seg(&id)))
}

async fn set_env(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    let body = json!({ "key": field(&fields, "key"), "value": fields.get("value").cloned().unwrap_or_default() });
    let result = ctx.post(&format!("/apps/{}/env", seg(&id)), body).await;
    after(&ctx, result, &format!("/console/apps/{}", seg(&id)))
}

async fn delete_env(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    let path = format!("/apps/{}/env?key={}", seg(&id), seg(field(&fields, "key")));
    let result = ctx.call(Method::DELETE, &path, None).await;
    after(&ctx, result, &format!("/console/apps/{}", seg(&id)))
}

async fn scale(ctx: Ctx, Path(id): Path<String>, fields: Fields) -> Response {
    let body = json!({ "replicas": number(&fields, "replicas") });
    let result = ctx
        .call(
            Method::PUT,
            &format!("/apps/{}/scale", seg(&id)),
            Some(body),
        )
        .await;
    after(&ctx, result, &format!("/console/apps/{}", seg(&id)))
}

/// Pause, resume and rollback: a POST with an empty body.
async fn action(ctx: Ctx, Path((id, action)): Path<(String, String)>) -> Response {
    let back = format!("/console/apps/{}", seg(&id));
    if !matches!(action.as_str(), "pause" | "resume" | "rollback") {
        return (
            axum::http::StatusCode::NOT_FOUND,
            html::message_page("Not found", "no such action"),
        )
            .into_response();
    }
    let result = ctx
        .post(&format!("/apps/{}/{action}", seg(&id)), json!({}))
        .await;
    after(&ctx, result, &back)
}
