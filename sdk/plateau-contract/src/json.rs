//! Reading JSON request bodies into serde types.
//!
//! [`Request::json`] answers the two errors every JSON endpoint shares:
//! 415 `unsupported_media_type` when a `content-type` is sent and is not
//! JSON, and 400 `invalid_json` carrying serde's message when the body does
//! not parse into the type. Field-level rules then belong to a
//! [`Validator`], which reports every invalid field at once.

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

/// Parses `body` as `T`; the error detail carries serde's message.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::invalid_json(
            "request body is empty: send a json document",
        ));
    }
    serde_json::from_slice(body).map_err(|e| {
        ApiError::invalid_json(format!(
            "request body is not valid: {}",
            lowercase_first(&e.to_string())
        ))
    })
}

impl Request {
    /// The body parsed as `T`.
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
    /// assert_eq!(err.code().as_str(), "invalid_json");
    /// ```
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, ApiError> {
        if let Some(content_type) = self.header("content-type")
            && !is_json_content_type(content_type)
        {
            return Err(ApiError::unsupported_media_type(format!(
                "content-type {content_type} is not supported: send application/json"
            )));
        }
        parse_json(&self.body)
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

    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    /// `Ok` when nothing was recorded, else one `validation_failed` error.
    pub fn finish(self) -> Result<(), ApiError> {
        if self.errors.is_empty() {
            Ok(())
        } else {
            Err(ApiError::validation_errors(self.errors))
        }
    }
}

/// serde_json messages start with a lowercase word except `EOF`; keep the
/// platform's lowercase convention without touching the rest.
fn lowercase_first(message: &str) -> String {
    match message.strip_prefix("EOF") {
        Some(rest) => format!("end of input{rest}"),
        None => message.to_owned(),
    }
}
