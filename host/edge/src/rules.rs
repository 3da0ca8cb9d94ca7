//! An app's edge rules at the edge: a redirect answers before the app
//! sees the request, a rewrite changes the path it sees, and header rules
//! change its answer (`plateau-edge-rules` says what matches, in which
//! order).

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Response, StatusCode, header, request, uri::PathAndQuery};
use http_body_util::{BodyExt, Full};
use plateau_edge_rules::{Decision, HeaderChange, RuleSet};
use plateau_runner::Body;

/// Applies the request side of `rules` to `parts`: the redirect to answer,
/// or the header changes to make to the app's answer.
pub(crate) fn before(
    rules: &RuleSet,
    parts: &mut request::Parts,
) -> Result<Vec<HeaderChange>, Box<Response<Body>>> {
    let path = parts.uri.path().to_owned();
    match rules.on_request(&path, parts.uri.query()) {
        Decision::Redirect { status, location } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::PERMANENT_REDIRECT);
            let location =
                HeaderValue::from_str(&location).unwrap_or_else(|_| HeaderValue::from_static("/"));
            let mut redirect = Response::builder()
                .status(status)
                .header(header::LOCATION, location)
                .header(header::CONTENT_LENGTH, "0")
                .body(
                    Full::new(Bytes::new())
                        .map_err(|never| match never {})
                        .boxed_unsync(),
                )
                .expect("a redirect is a valid response");
            after(&rules.on_response(&path), &mut redirect);
            return Err(Box::new(redirect));
        }
        Decision::Rewrite { path_and_query } => {
            if let Ok(pq) = path_and_query.parse::<PathAndQuery>() {
                let mut uri = std::mem::take(&mut parts.uri).into_parts();
                uri.path_and_query = Some(pq);
                parts.uri = http::Uri::from_parts(uri).unwrap_or_default();
            }
        }
        Decision::Pass => {}
    }
    Ok(rules.on_response(&path))
}

/// Makes the header changes of the rules on the app's answer.
pub(crate) fn after(changes: &[HeaderChange], response: &mut Response<Body>) {
    let headers = response.headers_mut();
    for change in changes {
        match change {
            HeaderChange::Set(name, value) => {
                if let (Ok(name), Ok(value)) = (
                    HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(value),
                ) {
                    headers.insert(name, value);
                }
            }
            HeaderChange::Remove(name) => {
                headers.remove(name.as_str());
            }
        }
    }
}
