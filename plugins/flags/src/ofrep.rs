//! The OpenFeature Remote Evaluation Protocol (OFREP) wire types: request bodies, single and
//! bulk responses, and the HTTP status of each outcome.
//!
//! Shapes follow the OFREP OpenAPI document and flagd's OFREP service:
//! - success (200): `{key, value?, reason, variant?, metadata}`; `value` and `variant` are left
//!   out when the code default applies (disabled flag, no default variant);
//! - failure: `{key, errorCode, errorDetails, metadata?}`, 404 for `FLAG_NOT_FOUND` and 400 for
//!   every other code;
//! - bulk (200): `{flags: [success or failure, ...], metadata?}`, or for a bad request
//!   (400): `{errorCode, errorDetails}`.

use crate::definition::Metadata;
use crate::evaluate::{ErrorCode, Reason, Resolution};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The body of both evaluation endpoints: `{"context": {...}}`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvaluationRequest {
    #[serde(default)]
    pub context: Map<String, Value>,
}

/// A request body that cannot be used; always `INVALID_CONTEXT` with status 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{details}")]
pub struct RequestError {
    pub details: String,
}

impl RequestError {
    pub fn code(&self) -> ErrorCode {
        ErrorCode::InvalidContext
    }

    pub fn status(&self) -> u16 {
        self.code().http_status()
    }

    /// The response body for the single-flag endpoint.
    pub fn for_flag(&self, key: &str) -> EvaluationFailure {
        EvaluationFailure {
            key: key.to_owned(),
            error_code: self.code(),
            error_details: self.details.clone(),
            metadata: Metadata::new(),
        }
    }

    /// The response body for the bulk endpoint.
    pub fn for_bulk(&self) -> BulkEvaluationFailure {
        BulkEvaluationFailure {
            error_code: self.code(),
            error_details: self.details.clone(),
        }
    }
}

/// Parses a request body. An empty body, or one without `context` (or with `"context": null`),
/// is an empty context, as in flagd; a `context` that is not an object is `INVALID_CONTEXT`.
pub fn parse_request(body: &[u8]) -> Result<EvaluationRequest, RequestError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(EvaluationRequest::default());
    }
    let value: Value = serde_json::from_slice(body).map_err(|e| RequestError {
        details: format!("the request body is not valid JSON: {e}"),
    })?;
    let Value::Object(mut fields) = value else {
        return Err(RequestError {
            details: format!(
                r#"the request body must be an object such as {{"context": {{}}}}, not {value}"#
            ),
        });
    };
    match fields.remove("context") {
        None | Some(Value::Null) => Ok(EvaluationRequest::default()),
        Some(Value::Object(context)) => Ok(EvaluationRequest { context }),
        Some(other) => Err(RequestError {
            details: format!("context must be a JSON object, not {other}"),
        }),
    }
}

impl ErrorCode {
    /// The HTTP status OFREP gives an evaluation failing with this code.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::FlagNotFound => 404,
            ErrorCode::ParseError
            | ErrorCode::TypeMismatch
            | ErrorCode::TargetingKeyMissing
            | ErrorCode::InvalidContext
            | ErrorCode::General => 400,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvaluationSuccess {
    pub key: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    pub reason: Reason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    #[serde(default)]
    pub metadata: Metadata,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EvaluationFailure {
    pub key: String,
    pub error_code: ErrorCode,
    pub error_details: String,
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

/// One flag's entry: a success or a failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum EvaluationResponse {
    Success(EvaluationSuccess),
    Failure(EvaluationFailure),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BulkEvaluationSuccess {
    pub flags: Vec<EvaluationResponse>,
    #[serde(default, skip_serializing_if = "Metadata::is_empty")]
    pub metadata: Metadata,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BulkEvaluationFailure {
    pub error_code: ErrorCode,
    pub error_details: String,
}

impl EvaluationResponse {
    /// The response for `key` and its resolution.
    pub fn from_resolution(key: &str, resolution: Resolution) -> EvaluationResponse {
        match resolution.error {
            Some(error) => EvaluationResponse::Failure(EvaluationFailure {
                key: key.to_owned(),
                error_code: error.code,
                error_details: error.message,
                metadata: resolution.metadata,
            }),
            None => EvaluationResponse::Success(EvaluationSuccess {
                key: key.to_owned(),
                value: resolution.value,
                reason: resolution.reason,
                variant: resolution.variant,
                metadata: resolution.metadata,
            }),
        }
    }

    /// The HTTP status of the single-flag endpoint for this response.
    pub fn status(&self) -> u16 {
        match self {
            EvaluationResponse::Success(_) => 200,
            EvaluationResponse::Failure(failure) => failure.error_code.http_status(),
        }
    }
}

impl BulkEvaluationSuccess {
    /// The bulk response for resolutions in the order given, with the flag set's metadata.
    pub fn from_resolutions(
        resolutions: impl IntoIterator<Item = (String, Resolution)>,
        metadata: &Metadata,
    ) -> BulkEvaluationSuccess {
        BulkEvaluationSuccess {
            flags: resolutions
                .into_iter()
                .map(|(key, resolution)| EvaluationResponse::from_resolution(&key, resolution))
                .collect(),
            metadata: metadata.clone(),
        }
    }
}
