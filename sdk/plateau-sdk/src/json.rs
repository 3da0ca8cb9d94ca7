//! Reading JSON request bodies into serde types.
//!
//! [`Request::json`] answers the two errors every JSON endpoint shares:
//! 415 `unsupported_media_type` when a `content-type` is sent and is not
//! JSON, and 400 `invalid_json` carrying serde's message when the body does
//! not parse into the type. Field-level rules then belong to a
//! [`crate::Validator`].

use serde::de::DeserializeOwned;

use crate::error::ApiError;
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
    /// # use plateau_sdk::{Method, Request};
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

/// serde_json messages start with a lowercase word except `EOF`; keep the
/// platform's lowercase convention without touching the rest.
fn lowercase_first(message: &str) -> String {
    match message.strip_prefix("EOF") {
        Some(rest) => format!("end of input{rest}"),
        None => message.to_owned(),
    }
}
