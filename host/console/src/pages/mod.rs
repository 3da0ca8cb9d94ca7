//! The console's pages, one module per area; each handler reads or
//! changes through the API and renders with [`crate::html`].

pub mod account;
pub mod admin;
pub mod admin_org;
pub mod analytics;
pub mod app_logs;
pub mod apps;
pub mod areas;
pub mod backups;
pub mod caches;
pub mod databases;
pub mod members;
pub mod objects;
pub mod rewards;
pub mod sign;
pub mod status_pages;
pub mod storage;

use std::collections::HashMap;

use axum::Router;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use maud::html;
use serde_json::Value;

use crate::api::Problem;
use crate::html;
use crate::{Console, Ctx};

/// Every page's route.
pub fn routes() -> Router<Console> {
    Router::new()
        .merge(sign::routes())
        .merge(account::routes())
        .merge(apps::routes())
        .merge(app_logs::routes())
        .merge(databases::routes())
        .merge(backups::routes())
        .merge(caches::routes())
        .merge(storage::routes())
        .merge(objects::routes())
        .merge(members::routes())
        .merge(rewards::routes())
        .merge(areas::routes())
        .merge(status_pages::routes())
        .merge(analytics::routes())
        .merge(admin::routes())
        .merge(admin_org::routes())
}

/// A submitted form's fields.
pub type Fields = axum::Form<HashMap<String, String>>;

/// A form field, trimmed; empty when absent.
pub fn field<'a>(fields: &'a HashMap<String, String>, name: &str) -> &'a str {
    fields.get(name).map(|s| s.trim()).unwrap_or("")
}

/// A form field as an optional JSON string (absent or blank: null).
pub fn optional(fields: &HashMap<String, String>, name: &str) -> Value {
    match field(fields, name) {
        "" => Value::Null,
        s => Value::String(s.to_owned()),
    }
}

/// A form field as an optional JSON number: a blank one is null, and one
/// that is not a number goes to the API as the text typed, so the API's
/// problem names the field.
pub fn number(fields: &HashMap<String, String>, name: &str) -> Value {
    match field(fields, name) {
        "" => Value::Null,
        s => s
            .parse::<i64>()
            .map(Value::from)
            .unwrap_or_else(|_| Value::String(s.to_owned())),
    }
}

/// One path segment of an API path, percent-encoded, so an id from the
/// URL never becomes more than one segment.
pub fn seg(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// After a change: back to `back` (303) when the API did it, otherwise a
/// page with the API's problem and the same status.
pub fn after(ctx: &Ctx, result: Result<Value, Problem>, back: &str) -> Response {
    match result {
        Ok(_) => Redirect::to(back).into_response(),
        Err(p) => refused(ctx, &p, back),
    }
}

/// The page for a change the API refused.
pub fn refused(ctx: &Ctx, problem: &Problem, back: &str) -> Response {
    let status = if problem.status.is_client_error() || problem.status.is_server_error() {
        problem.status
    } else {
        StatusCode::BAD_GATEWAY
    };
    let body = html::page(
        &ctx.session,
        back,
        "Not done",
        html! {
            (html::problem(&problem.message()))
            p { a href=(back) { "Back" } }
        },
    );
    (status, body).into_response()
}

/// A section that shows the API's answer, or its problem.
pub fn section(
    result: &Result<Value, Problem>,
    render: impl FnOnce(&Value) -> maud::Markup,
) -> maud::Markup {
    match result {
        Ok(v) => render(v),
        Err(p) => html::problem(&p.message()),
    }
}
