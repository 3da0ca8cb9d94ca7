//! How a stored response answers: its head with `Age` and `Date`, a 304
//! when the client's own validators match it, no body for a HEAD, and the
//! counters of the app.

use std::sync::atomic::Ordering;
use std::time::SystemTime;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Empty, Full};
use plateau_runner::Body;

use super::AppCdn;
use super::store::{Stored, Variant};

/// `v`'s head with its `Age` now.
pub(super) fn aged(v: &Variant, now: SystemTime) -> HeaderMap {
    let mut headers = v.headers.clone();
    let age = v.policy.age(now).as_secs().to_string();
    headers.insert(
        header::AGE,
        HeaderValue::from_str(&age).expect("digits are a value"),
    );
    headers
}

/// The stored response `v` with `headers`, as the client asked it (a 304
/// when its validators match, no body for a HEAD); none when its body
/// can no longer be read (its file was evicted meanwhile).
pub(super) async fn answer(
    app: &AppCdn,
    v: &Variant,
    mut headers: HeaderMap,
    client: &HeaderMap,
    head: bool,
    how: &'static str,
) -> Option<Response<Body>> {
    let body = match &v.body {
        Stored::Memory(bytes) => bytes.clone(),
        Stored::Disk(file) => Bytes::from(tokio::fs::read(file).await.ok()?),
    };
    headers.insert(header::DATE, now_date());
    headers.insert("x-cache", HeaderValue::from_static(how));
    let counter = match how {
        "HIT" => &app.hits,
        "STALE" => &app.stale,
        _ => &app.revalidated,
    };
    counter.fetch_add(1, Ordering::Relaxed);
    let mut response = Response::new(empty());
    *response.status_mut() = v.status;
    *response.headers_mut() = headers;
    let response = conditional(response, client);
    if head || response.status() == StatusCode::NOT_MODIFIED {
        return Some(response);
    }
    app.bytes_served
        .fetch_add(body.len() as u64, Ordering::Relaxed);
    Some(response.map(|_| full(body)))
}

/// `response` as a 304 when the client's validators match it (RFC 9110
/// section 13.1: `If-None-Match`, else `If-Modified-Since`).
fn conditional(response: Response<Body>, client: &HeaderMap) -> Response<Body> {
    if response.status() != StatusCode::OK {
        return response;
    }
    let etag = response
        .headers()
        .get(header::ETAG)
        .and_then(|e| e.to_str().ok());
    let unchanged = match client
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
    {
        Some(tags) => etag.is_some_and(|etag| {
            let strip = |t: &str| t.trim().trim_start_matches("W/").to_owned();
            tags.trim() == "*" || tags.split(',').any(|t| strip(t) == strip(etag))
        }),
        None => {
            let date = |v: Option<&HeaderValue>| httpdate::parse_http_date(v?.to_str().ok()?).ok();
            match (
                date(client.get(header::IF_MODIFIED_SINCE)),
                date(response.headers().get(header::LAST_MODIFIED)),
            ) {
                (Some(since), Some(modified)) => modified <= since,
                _ => false,
            }
        }
    };
    if !unchanged {
        return response;
    }
    let (mut parts, _) = response.into_parts();
    parts.status = StatusCode::NOT_MODIFIED;
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.remove(header::CONTENT_TYPE);
    Response::from_parts(parts, empty())
}

fn now_date() -> HeaderValue {
    HeaderValue::from_str(&httpdate::fmt_http_date(SystemTime::now()))
        .expect("an HTTP date is a value")
}

pub(super) fn empty() -> Body {
    Empty::new().map_err(|never| match never {}).boxed_unsync()
}

fn full(bytes: Bytes) -> Body {
    Full::new(bytes)
        .map_err(|never| match never {})
        .boxed_unsync()
}
