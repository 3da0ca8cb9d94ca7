//! JSON request bodies: the [`Body`] extractor, whose failures are problem
//! documents that name the field. The rules (which media types are JSON,
//! what an empty body means, how a wrong field is named) and the
//! [`Validator`] for what serde cannot express are the contract's, the same
//! for plugins' endpoints.

use axum::extract::{FromRequest, Request};
use axum::http::header;
use serde::de::DeserializeOwned;

pub use plateau_contract::Validator;

use crate::error::ApiError;
use crate::state::AppState;

/// A JSON body. An absent body reads as `{}`, so endpoints whose fields are
/// all optional accept a bare POST; a body sent as JSON must parse.
pub struct Body<T>(pub T);

impl<T: DeserializeOwned> FromRequest<AppState> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &AppState) -> Result<Self, Self::Rejection> {
        let content_type = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = read_body(req.into_body(), state.config().max_body_bytes).await?;
        Ok(Body(plateau_contract::read_json(
            content_type.as_deref(),
            &bytes,
        )?))
    }
}

/// Reads a request body of at most `limit` bytes. A body that says it is
/// longer (`Content-Length`) is refused with 413 before any of it is read;
/// one that grows past the limit as it streams (chunked) is cut there with
/// 413. Either way the 413 closes the connection, so the rest is never
/// read. A client that stops sending gets 408 (the listener's body-read
/// timeout).
pub async fn read_body(body: axum::body::Body, limit: usize) -> Result<bytes::Bytes, ApiError> {
    use http_body_util::BodyExt;
    let too_large = || ApiError::PayloadTooLarge(format!("the request body is over {limit} bytes"));
    if axum::body::HttpBody::size_hint(&body).lower() > limit as u64 {
        return Err(too_large());
    }
    let mut body = body;
    let mut buf = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            let e = e.into_inner();
            if plateau_listen::BodyError::is_timeout_error(e.as_ref()) {
                ApiError::RequestTimeout(e.to_string())
            } else {
                ApiError::bad_request("bad_request", format!("reading the body: {e}"))
            }
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if buf.len() + data.len() > limit {
            return Err(too_large());
        }
        buf.extend_from_slice(&data);
    }
    Ok(buf.freeze())
}

/// Parses a JSON body already known to be JSON (see
/// [`plateau_contract::parse_json`]).
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    Ok(plateau_contract::parse_json(bytes)?)
}

/// For a field of a change that may be absent (left as it is), `null`
/// (cleared) or a value: `#[serde(default, deserialize_with =
/// "crate::json::present")]` on an `Option<Option<T>>`.
pub fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    <Option<T> as serde::Deserialize>::deserialize(deserializer).map(Some)
}
