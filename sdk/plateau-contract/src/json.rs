//! Reading JSON request bodies into serde types, the same way for the
//! host's own endpoints and for plugins'.
//!
//! [`read_json`] is the one rule: an empty body reads as `{}` (so an
//! endpoint whose fields are all optional takes a bare POST); a body must
//! be sent as JSON, else 415 `unsupported_media_type`; a body that is not
//! JSON at all is 400 `invalid_json`; a JSON document of the wrong shape is
//! 400 `validation_failed` naming the field (`tags[1]`, `name`). Rules
//! serde cannot express belong to a [`Validator`], which reports every
//! invalid field at once.

use serde::Deserialize;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, FieldError};
use crate::http::Request;

/// Whether `content_type` names JSON: `application/json` or any
/// `application/*+json`, parameters such as `charset` ignored.
pub fn is_json_content_type(content_type: &str) -> bool {
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match essence.split_once('/') {
        Some(("application", subtype)) => subtype == "json" || subtype.ends_with("+json"),
        _ => false,
    }
}

/// A request body as `T`, given its `content-type` header if it had one.
pub fn read_json<T: DeserializeOwned>(
    content_type: Option<&str>,
    body: &[u8],
) -> Result<T, ApiError> {
    parse_json(json_body(content_type, body)?)
}

/// The bytes of a request body to parse as JSON: `{}` for an empty body;
/// 415 unless it was sent as JSON. For a type that borrows from the body,
/// follow with [`parse_json_borrowed`].
pub fn json_body<'a>(content_type: Option<&str>, body: &'a [u8]) -> Result<&'a [u8], ApiError> {
    // No body reads as `{}`; a body sent as JSON must be JSON, so white
    // space alone is `invalid_json` there.
    if body.is_empty() || (content_type.is_none() && body.iter().all(u8::is_ascii_whitespace)) {
        return Ok(b"{}");
    }
    match content_type {
        Some(ct) if is_json_content_type(ct) => Ok(body),
        Some(ct) => Err(ApiError::unsupported_media_type(format!(
            "the body is {ct}; send JSON with Content-Type: application/json"
        ))),
        None => Err(ApiError::unsupported_media_type(
            "send the body as JSON with Content-Type: application/json",
        )),
    }
}

/// Parses `body` as `T`: 400 `invalid_json` when it is not JSON, 400
/// `validation_failed` naming the field when it does not fit `T`. A number
/// with a zero fraction (`3.0`) is an integer, as JSON Schema (and so the
/// OpenAPI document) counts it.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|e| not_json(&e.to_string()))?;
    parse_json_value(value)
}

/// [`parse_json`] of a document already parsed (a `PATCH` merged over
/// the stored fields, say).
pub fn parse_json_value<T: DeserializeOwned>(mut value: serde_json::Value) -> Result<T, ApiError> {
    integral_numbers(&mut value);
    serde_path_to_error::deserialize(value).map_err(|e| field_error(&e))
}

/// [`parse_json`] for a type that borrows from `body` (long strings are
/// not copied); numbers are read as sent.
pub fn parse_json_borrowed<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, ApiError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| field_error(&e))?;
    de.end().map_err(|e| not_json(&e.to_string()))?;
    Ok(value)
}

/// The problem of a document that is not JSON, or whose field at the
/// error's path does not fit.
fn field_error(e: &serde_path_to_error::Error<serde_json::Error>) -> ApiError {
    let inner = e.inner();
    if inner.is_syntax() || inner.is_eof() {
        return not_json(&inner.to_string());
    }
    let message = strip_position(&inner.to_string());
    let path = e.path().to_string();
    let field = match named_field(&message) {
        Some(name) if path == "." => name.to_owned(),
        Some(name) if path == name || path.ends_with(&format!(".{name}")) => path,
        Some(name) => format!("{path}.{name}"),
        None if path == "." => "body".to_owned(),
        None => path,
    };
    let message = match message.strip_prefix("missing field `") {
        Some(_) => "is required".to_owned(),
        None => message,
    };
    ApiError::validation(field, message)
}

fn not_json(message: &str) -> ApiError {
    // serde_json's messages start lowercase except `EOF`.
    let message = match message.strip_prefix("EOF") {
        Some(rest) => format!("end of input{rest}"),
        None => message.to_owned(),
    };
    ApiError::invalid_json(format!("the body is not valid JSON: {message}"))
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

impl Request {
    /// The body parsed as `T`, by [`read_json`].
    ///
    /// ```
    /// # use plateau_contract::{Method, Request};
    /// #[derive(Debug, serde::Deserialize)]
    /// struct NewNote { title: String }
    ///
    /// let req = Request::new(Method::Post, "/notes").with_json(&serde_json::json!({"title": "hi"}));
    /// assert_eq!(req.json::<NewNote>().unwrap().title, "hi");
    ///
    /// let bad = Request::new(Method::Post, "/notes").with_json(&serde_json::json!({"title": 1}));
    /// let err = bad.json::<NewNote>().unwrap_err();
    /// assert_eq!(err.code().as_str(), "validation_failed");
    /// assert_eq!(err.errors()[0].field, "title");
    /// ```
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        read_json(self.header("content-type"), &self.body)
    }
}

/// Collects invalid fields, then fails once with all of them.
///
/// ```
/// # use plateau_contract::Validator;
/// let title = "";
/// let mut v = Validator::new();
/// v.check(!title.is_empty(), "title", "must not be empty");
/// let err = v.finish().unwrap_err();
/// assert_eq!(err.detail(), "title must not be empty");
/// ```
#[derive(Debug, Default)]
pub struct Validator {
    errors: Vec<FieldError>,
}

impl Validator {
    pub fn new() -> Self {
        Self::default()
    }

    /// Records `message` for `field` unless `ok`.
    pub fn check(
        &mut self,
        ok: bool,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> &mut Self {
        if !ok {
            self.error(field, message);
        }
        self
    }

    pub fn error(&mut self, field: impl Into<String>, message: impl Into<String>) -> &mut Self {
        self.errors.push(FieldError {
            field: field.into(),
            message: message.into(),
        });
        self
    }

    /// A name: 1 to 100 characters, not only spaces, no control characters.
    pub fn name(&mut self, field: &str, value: &str) -> &mut Self {
        self.check(!value.trim().is_empty(), field, "must not be empty")
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

    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    /// `Ok` when nothing was recorded, else one `validation_failed` error
    /// with every field recorded (which it takes, leaving none).
    pub fn finish(&mut self) -> Result<(), ApiError> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::validation_errors(std::mem::take(
                &mut self.errors,
            )))
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
        ttl: Option<u32>,
    }

    fn field_of(body: &str) -> String {
        match parse_json::<Input>(body.as_bytes()) {
            Err(e) if e.errors().len() == 1 => e.errors()[0].field.clone(),
            Err(other) if other.code() != crate::ErrorCode::InvalidJson => {
                panic!("{body}: {other}")
            }
            Err(other) => other.code().as_str().to_owned(),
            Ok(_) => "ok".to_owned(),
        }
    }

    #[test]
    fn errors_name_the_field() {
        assert_eq!(field_of(r#"{"name": "a"}"#), "ok");
        assert_eq!(field_of(r#"{"name": "a", "ttl": 60.0}"#), "ok");
        assert_eq!(field_of(r#"{"name": "a", "ttl": 60.5}"#), "ttl");
        assert_eq!(field_of(r#"{}"#), "name");
        assert_eq!(field_of(r#"{"name": 3}"#), "name");
        assert_eq!(
            field_of(r#"{"name": "a", "scopes": ["x", 2]}"#),
            "scopes[1]"
        );
        assert_eq!(field_of(r#"{"name": "a", "bogus": 1}"#), "bogus");
        assert_eq!(field_of(r#""a string""#), "body");
        assert_eq!(field_of(r#"{"name": "#), "invalid_json");
        let missing = parse_json::<Input>(b"{}").unwrap_err();
        assert_eq!(missing.detail(), "name is required");
    }

    #[derive(serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Borrowed<'a> {
        name: &'a str,
        tags: Vec<&'a str>,
    }

    #[test]
    fn borrowed_bodies_follow_the_same_rules() {
        let ok: Borrowed = parse_json_borrowed(br#"{"name": "a", "tags": ["x"]}"#).unwrap();
        assert_eq!((ok.name, ok.tags), ("a", vec!["x"]));
        let err = parse_json_borrowed::<Borrowed>(br#"{"name": "a", "tags": ["x", 2]}"#);
        assert_eq!(err.unwrap_err().errors()[0].field, "tags[1]");
        let err = parse_json_borrowed::<Borrowed>(br#"{"name": "a", "tags": []} x"#);
        assert_eq!(err.unwrap_err().code(), crate::ErrorCode::InvalidJson);
    }

    #[test]
    fn bodies_must_be_sent_as_json_unless_empty() {
        let read = |ct: Option<&str>, body: &str| match read_json::<Input>(ct, body.as_bytes()) {
            Ok(_) => "ok".to_owned(),
            Err(e) => format!("{} {}", e.status(), e.code()),
        };
        let json = Some("application/json");
        assert_eq!(read(json, r#"{"name":"a"}"#), "ok");
        assert_eq!(
            read(Some("application/merge-patch+json"), r#"{"name":"a"}"#),
            "ok"
        );
        assert_eq!(read(json, ""), "400 validation_failed", "reads as {{}}");
        assert_eq!(read(json, "  "), "400 invalid_json");
        assert_eq!(read(None, "  "), "400 validation_failed");
        assert_eq!(read(None, r#"{"name":"a"}"#), "415 unsupported_media_type");
        assert_eq!(
            read(Some("text/x+json"), r#"{"name":"a"}"#),
            "415 unsupported_media_type"
        );
    }
}
