//! The one CSRF rule, as middleware over every console route: a request
//! that may change something (any method but GET and HEAD) must come from
//! this origin and carry the secret of its session (or, for the sign-in
//! and invitation forms, of the pre-session cookie), in the `csrf` field of its form or in
//! the `x-csrf-token` header. Anything else is refused with 403 before a
//! handler runs.

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;

use crate::Console;
use crate::session::{self, COOKIE, PRE_COOKIE, Session};

/// The largest form the console accepts (an SQL statement, env values).
pub const MAX_FORM_BYTES: usize = 1024 * 1024;

pub async fn check(State(console): State<Console>, request: Request, next: Next) -> Response {
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    let headers = request.headers();
    if !session::same_origin(headers) {
        return refuse("the request came from another site");
    }
    // Forms shown before any session: sign-in, and accepting an invitation.
    let path = request.uri().path();
    let expected = if path == "/console/sign-in" || path.starts_with("/console/invite/") {
        session::cookie(headers, PRE_COOKIE).map(str::to_owned)
    } else {
        session::cookie(headers, COOKIE)
            .and_then(|v| Session::open(&console, v))
            .map(|s| s.csrf)
    };
    let Some(expected) = expected else {
        return refuse("sign in again: the session has ended");
    };
    if let Some(offered) = headers.get("x-csrf-token").and_then(|v| v.to_str().ok()) {
        return if session::same_secret(&expected, offered) {
            next.run(request).await
        } else {
            refuse("the form is out of date: reload the page and try again")
        };
    }
    let is_form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    if !is_form {
        return refuse("a change needs the form's csrf field or the x-csrf-token header");
    }
    let (parts, body) = request.into_parts();
    let bytes = match http_body_util::Limited::new(body, MAX_FORM_BYTES)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return (StatusCode::PAYLOAD_TOO_LARGE, "the form is too large").into_response();
        }
    };
    let offered = form_urlencoded::parse(&bytes)
        .find(|(k, _)| k == "csrf")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_default();
    if !session::same_secret(&expected, &offered) {
        return refuse("the form is out of date: reload the page and try again");
    }
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn refuse(why: &str) -> Response {
    (
        StatusCode::FORBIDDEN,
        crate::html::message_page("Refused", why),
    )
        .into_response()
}
