//! JSON request bodies: the [`Body`] extractor, whose failures are problem
//! documents that name the field, and a small validator for the rules
//! serde cannot express.

use axum::extract::{FromRequest, Request};
use axum::http::header;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, FieldError};
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
        // No body reads as `{}`; a body sent as JSON must be JSON, so white
        // space alone is `invalid_json` there.
        if bytes.is_empty() || (content_type.is_none() && bytes.iter().all(u8::is_ascii_whitespace))
        {
            return parse(b"{}").map(Body);
        }
        match content_type {
            Some(ct) if is_json(&ct) => {}
            Some(ct) => {
                return Err(ApiError::UnsupportedMediaType(format!(
                    "the body is {ct}; send JSON with Content-Type: application/json"
                )));
            }
            None => {
                return Err(ApiError::UnsupportedMediaType(
                    "send the body as JSON with Content-Type: application/json".to_owned(),
                ));
            }
        }
        parse(&bytes).map(Body)
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

fn is_json(content_type: &str) -> bool {
    let essence = content_type.split(';').next().unwrap_or("").trim();
    essence.eq_ignore_ascii_case("application/json")
        || essence.to_ascii_lowercase().ends_with("+json")
}

/// Parses JSON, naming the failing field in the error. A number with a
/// zero fraction (`3.0`) is an integer, as JSON Schema (and so the OpenAPI
/// document) counts it.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let mut value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| {
        ApiError::bad_request("invalid_json", format!("the body is not valid JSON: {e}"))
    })?;
    integral_numbers(&mut value);
    serde_path_to_error::deserialize(value).map_err(|e| {
        let inner = e.inner();
        if inner.is_syntax() || inner.is_eof() {
            return ApiError::bad_request(
                "invalid_json",
                format!("the body is not valid JSON: {inner}"),
            );
        }
        let message = inner.to_string();
        let path = e.path().to_string();
        let field = match named_field(&message) {
            Some(name) if path == "." => name.to_owned(),
            Some(name) if path == name || path.ends_with(&format!(".{name}")) => path,
            Some(name) => format!("{path}.{name}"),
            None if path == "." => "body".to_owned(),
            None => path,
        };
        let message = strip_position(&message);
        ApiError::Validation(vec![FieldError { field, message }])
    })
}

/// Rewrites every number with a zero fraction that fits an `i64` as that
/// integer, so `"ttlSeconds": 60.0` reads as `60`.
fn integral_numbers(value: &mut serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Number(n) => {
            if let Some(f) = n.as_f64().filter(|_| n.is_f64())
                && f.fract() == 0.0
                && f.abs() < 9.0e18
            {
                *value = Value::from(f as i64);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers),
        Value::Object(fields) => fields.values_mut().for_each(integral_numbers),
        _ => {}
    }
}

/// The field a "missing field `x`" or "unknown field `x`" message names.
fn named_field(message: &str) -> Option<&str> {
    let rest = message
        .strip_prefix("missing field `")
        .or_else(|| message.strip_prefix("unknown field `"))?;
    rest.split('`').next()
}

/// serde_json appends ` at line 1 column 17`; the field name says more.
fn strip_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

/// Collects field errors so one response can name all of them.
#[derive(Default)]
pub struct Validator {
    errors: Vec<FieldError>,
}

impl Validator {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn check(&mut self, ok: bool, field: &str, message: impl Into<String>) -> &mut Self {
        if !ok {
            self.errors.push(FieldError {
                field: field.to_owned(),
                message: message.into(),
            });
        }
        self
    }

    /// A name: 1 to 100 characters, not only spaces, no control characters.
    pub fn name(&mut self, field: &str, value: &str) -> &mut Self {
        let trimmed = value.trim();
        self.check(!trimmed.is_empty(), field, "must not be empty")
            .check(
                value.chars().count() <= 100,
                field,
                "must be at most 100 characters",
            )
            .check(
                !value.chars().any(char::is_control),
                field,
                "must not contain control characters",
            )
    }

    pub fn finish(&mut self) -> Result<(), ApiError> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::Validation(std::mem::take(&mut self.errors)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Input {
        name: String,
        scopes: Option<Vec<String>>,
    }

    fn field_of(body: &str) -> String {
        match parse::<Input>(body.as_bytes()) {
            Err(ApiError::Validation(errors)) => errors[0].field.clone(),
            Err(other) => other.code().to_owned(),
            Ok(_) => "ok".to_owned(),
        }
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(field_of(r#"{"name": "a"}"#), "ok");
        assert_eq!(field_of(r#"{}"#), "name");
        assert_eq!(field_of(r#"{"name": 3}"#), "name");
        assert_eq!(
            field_of(r#"{"name": "a", "scopes": ["x", 2]}"#),
            "scopes[1]"
        );
        assert_eq!(field_of(r#"{"name": "a", "bogus": 1}"#), "bogus");
        assert_eq!(field_of(r#""a string""#), "body");
        assert_eq!(field_of(r#"{"name": "#), "invalid_json");
    }
}
