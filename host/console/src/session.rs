//! The console's session: a cookie holding the caller's credential (an API
//! token, or the operator's admin session) and a CSRF secret, sealed under
//! the host's key so it is neither readable nor forgeable by the browser,
//! and the CSRF rule every change passes.
//!
//! The cookie is `HttpOnly`, `SameSite=Strict`, scoped to `/console`, and
//! `Secure` when the request came over HTTPS. Every request that changes
//! something (any method but GET and HEAD) must carry the session's CSRF
//! secret (a `csrf` form field, or the `x-csrf-token` header for the
//! script's uploads) and must not come from another origin.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use plateau_core::{secret, time};
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use crate::Console;

/// The session cookie's name.
pub const COOKIE: &str = "plateau_console";
/// The cookie holding the sign-in form's CSRF secret, before any session.
pub const PRE_COOKIE: &str = "plateau_console_pre";
/// What the sealed value is bound to: a console session, nothing else.
const CONTEXT: &str = "console-session";
/// How long a session lasts, in seconds.
pub const TTL_SECS: i64 = 8 * 60 * 60;

/// Who the console acts as.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// An API token: every call carries `Authorization: Bearer`.
    Token,
    /// The platform operator: calls carry the admin session cookie.
    Admin,
}

/// A signed-in browser.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Session {
    pub kind: Kind,
    /// The token's secret, or the admin session's.
    pub credential: String,
    /// The secret every change must echo.
    pub csrf: String,
    /// Milliseconds since the epoch.
    pub expires_at: i64,
}

impl Session {
    pub fn new(kind: Kind, credential: String) -> Session {
        Session {
            kind,
            credential,
            csrf: secret::generate(""),
            expires_at: time::now_ms() + TTL_SECS * 1000,
        }
    }

    /// The sealed cookie value.
    pub fn seal(&self, console: &Console) -> String {
        let json = serde_json::to_vec(self).unwrap_or_default();
        match console.sealer.seal(CONTEXT, &json) {
            Ok(sealed) => URL_SAFE_NO_PAD.encode(sealed),
            Err(_) => String::new(),
        }
    }

    /// The session a cookie value holds, if it is ours and unexpired.
    pub fn open(console: &Console, value: &str) -> Option<Session> {
        let sealed = URL_SAFE_NO_PAD.decode(value).ok()?;
        let json = console.sealer.open(CONTEXT, &sealed).ok()?;
        let session: Session = serde_json::from_slice(&json).ok()?;
        (session.expires_at > time::now_ms()).then_some(session)
    }

    /// Whether `offered` is this session's CSRF secret.
    pub fn csrf_matches(&self, offered: &str) -> bool {
        same_secret(&self.csrf, offered)
    }
}

/// Constant-time equality of two secrets; an empty one never matches.
pub fn same_secret(expected: &str, offered: &str) -> bool {
    !expected.is_empty() && bool::from(expected.as_bytes().ct_eq(offered.as_bytes()))
}

/// The value of cookie `name` in the request.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Whether the request reached us over HTTPS (directly, or through a
/// proxy that says so).
pub fn is_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// A `Set-Cookie` value for `name`: HttpOnly, SameSite=Strict, under
/// `/console`, Secure over HTTPS; `max_age` 0 deletes it.
pub fn set_cookie(headers: &HeaderMap, name: &str, value: &str, max_age: i64) -> HeaderValue {
    let secure = if is_https(headers) { "; Secure" } else { "" };
    let cookie = format!(
        "{name}={value}; Path=/console; HttpOnly; SameSite=Strict; Max-Age={max_age}{secure}"
    );
    HeaderValue::from_str(&cookie).unwrap_or_else(|_| HeaderValue::from_static(""))
}

/// Whether a change comes from this console's own pages: no `Origin` or
/// one naming this host, and no `Sec-Fetch-Site` saying another site.
pub fn same_origin(headers: &HeaderMap) -> bool {
    let fetch_site = headers.get("sec-fetch-site").and_then(|v| v.to_str().ok());
    if matches!(fetch_site, Some("cross-site" | "same-site")) {
        return false;
    }
    let Some(origin) = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok()) else {
        return true;
    };
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let authority = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    authority == Some(host)
}

/// A page handler's caller: the signed-in session, or a redirect to the
/// sign-in page.
impl FromRequestParts<Console> for Session {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, console: &Console) -> Result<Self, Response> {
        cookie(&parts.headers, COOKIE)
            .and_then(|value| Session::open(console, value))
            .ok_or_else(|| Redirect::to("/console/sign-in").into_response())
    }
}
