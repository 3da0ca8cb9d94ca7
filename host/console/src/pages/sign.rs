//! Signing in (with an API token, or as the operator with the admin
//! password), signing out, and the overview page.

use axum::Router;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use maud::html;
use plateau_core::secret;
use serde_json::json;

use super::{Fields, field, section};
use crate::api::Problem;
use crate::session::{self, COOKIE, Kind, PRE_COOKIE, Session};
use crate::{Console, Ctx, html};

pub fn routes() -> Router<Console> {
    Router::new()
        .route("/console/sign-in", get(sign_in_page).post(sign_in))
        .route("/console/sign-out", post(sign_out))
        .route("/console/", get(overview))
}

async fn sign_in_page(headers: HeaderMap) -> Response {
    form_page(&headers, StatusCode::OK, None)
}

/// The sign-in page, with a fresh pre-session CSRF secret in its cookie.
fn form_page(headers: &HeaderMap, status: StatusCode, problem: Option<&str>) -> Response {
    let pre = secret::generate("");
    let body = html::shell(
        "Sign in",
        html! {},
        html! {
            @if let Some(p) = problem { (html::problem(p)) }
            h2 { "With an API token" }
            form method="post" action="/console/sign-in" class="stack" {
                input type="hidden" name="csrf" value=(pre);
                input type="hidden" name="method" value="token";
                (html::input("API token", "token", "password", true, Some("plt_ followed by 40 letters or digits; it stays in this browser's session cookie only")))
                button type="submit" { "Sign in with the token" }
            }
            h2 { "As the platform operator" }
            form method="post" action="/console/sign-in" class="stack" {
                input type="hidden" name="csrf" value=(pre);
                input type="hidden" name="method" value="admin";
                (html::input("Admin password", "password", "password", true, None))
                button type="submit" { "Sign in as operator" }
            }
        },
    );
    let mut response = (status, body).into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        session::set_cookie(headers, PRE_COOKIE, &pre, 3600),
    );
    response
}

async fn sign_in(State(console): State<Console>, headers: HeaderMap, fields: Fields) -> Response {
    let result = match field(&fields, "method") {
        "admin" => admin_session(&console, field(&fields, "password")).await,
        _ => token_session(&console, field(&fields, "token")).await,
    };
    match result {
        Ok(session) => {
            let mut response = Redirect::to("/console/").into_response();
            let h = response.headers_mut();
            let value = session.seal(&console);
            let max_age = session::TTL_SECS;
            h.append(
                header::SET_COOKIE,
                session::set_cookie(&headers, COOKIE, &value, max_age),
            );
            h.append(
                header::SET_COOKIE,
                session::set_cookie(&headers, PRE_COOKIE, "", 0),
            );
            response
        }
        Err(p) => form_page(&headers, p.status, Some(&p.message())),
    }
}

/// A token session, once the API accepts the token.
async fn token_session(console: &Console, token: &str) -> Result<Session, Problem> {
    let session = Session::new(Kind::Token, token.to_owned());
    console
        .api
        .json(&session, None, Method::GET, "/me", None)
        .await?;
    Ok(session)
}

/// An operator session: the admin API's own login, whose session the
/// console keeps in its cookie.
async fn admin_session(console: &Console, password: &str) -> Result<Session, Problem> {
    let body = Body::from(json!({ "password": password }).to_string());
    let answer = console
        .api
        .send(
            None,
            None,
            Method::POST,
            "/admin/login",
            Some("application/json"),
            body,
        )
        .await;
    let cookie_name = format!("{}=", plateau_api::auth::ADMIN_COOKIE);
    let value = answer
        .headers
        .get_all(header::SET_COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|v| v.strip_prefix(&cookie_name))
        .and_then(|v| v.split(';').next())
        .map(str::to_owned);
    match value {
        Some(value) if answer.status.is_success() => Ok(Session::new(Kind::Admin, value)),
        _ => Err(Problem {
            status: answer.status,
            body: serde_json::from_slice(&answer.body).unwrap_or_default(),
        }),
    }
}

async fn sign_out(ctx: Ctx, headers: HeaderMap) -> Response {
    if ctx.session.kind == Kind::Admin {
        // The operator's session ends on the server too.
        let _ = ctx.post("/admin/logout", json!({})).await;
    }
    let mut response = Redirect::to("/console/sign-in").into_response();
    response.headers_mut().append(
        header::SET_COOKIE,
        session::set_cookie(&headers, COOKIE, "", 0),
    );
    response
}

async fn overview(ctx: Ctx) -> Response {
    let content = match ctx.session.kind {
        Kind::Admin => html! {
            p { "Signed in as the platform operator." }
            ul {
                li { a href="/console/admin/organizations" { "Organisations" } }
                li { a href="/console/admin/plugins" { "Plugins" } }
            }
        },
        Kind::Token => {
            let me = ctx.get("/me").await;
            section(&me, |me| {
                html! {
                    dl {
                        dt { "Organisation" } dd { (html::text(&me["organization"]["name"])) " (" (html::text(&me["organization"]["id"])) ")" }
                        dt { "Plan" } dd { (html::text(&me["organization"]["plan"])) }
                        dt { "User" } dd { (html::text(&me["user"]["name"])) }
                        dt { "Role" } dd { (html::text(&me["user"]["role"])) }
                        dt { "Token scopes" } dd { (me["token"]["scopes"].as_array().map(|s| s.iter().map(html::text).collect::<Vec<_>>().join(" ")).unwrap_or_default()) }
                    }
                }
            })
        }
    };
    html::page(&ctx.session, "/console/", "Overview", content).into_response()
}
