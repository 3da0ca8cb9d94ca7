//! `ApiError`: the platform's one error body (`application/problem+json`).
//!
//! Every error a plugin answers has the same shape as the host's own errors:
//!
//! ```json
//! {"type": "https://plateau.dev/problems/not_found", "title": "Not Found",
//!  "status": 404, "code": "not_found", "detail": "note n1 does not exist"}
//! ```
//!
//! plus `errors` for `validation_failed` and `scope` for `missing_scope`.
//! Details are lowercase, have no trailing period and say what to fix.

use std::fmt;

use crate::http::{Method, Response};
pub use crate::problem::{
    FieldError, PROBLEM_CONTENT_TYPE, PROBLEM_TYPE_BASE, Problem, status_title, validation_detail,
};

/// The stable, machine-readable error codes, shared with the host.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    BadRequest,
    ValidationFailed,
    InvalidJson,
    InvalidCursor,
    InvalidLimit,
    Unauthenticated,
    MissingScope,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    /// The client stopped sending its request's body (408).
    RequestTimeout,
    Conflict,
    PayloadTooLarge,
    UnsupportedMediaType,
    /// The request is well-formed but cannot be carried out as it stands
    /// (422), for instance every recipient of a message is suppressed.
    Unprocessable,
    RateLimited,
    Internal,
    Unavailable,
}

impl ErrorCode {
    /// Every code, in status order.
    pub const ALL: [ErrorCode; 18] = [
        ErrorCode::BadRequest,
        ErrorCode::ValidationFailed,
        ErrorCode::InvalidJson,
        ErrorCode::InvalidCursor,
        ErrorCode::InvalidLimit,
        ErrorCode::Unauthenticated,
        ErrorCode::MissingScope,
        ErrorCode::Forbidden,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::RequestTimeout,
        ErrorCode::Conflict,
        ErrorCode::PayloadTooLarge,
        ErrorCode::UnsupportedMediaType,
        ErrorCode::Unprocessable,
        ErrorCode::RateLimited,
        ErrorCode::Internal,
        ErrorCode::Unavailable,
    ];

    /// The snake_case code of the body's `code` member.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::BadRequest => "bad_request",
            ErrorCode::ValidationFailed => "validation_failed",
            ErrorCode::InvalidJson => "invalid_json",
            ErrorCode::InvalidCursor => "invalid_cursor",
            ErrorCode::InvalidLimit => "invalid_limit",
            ErrorCode::Unauthenticated => "unauthenticated",
            ErrorCode::MissingScope => "missing_scope",
            ErrorCode::Forbidden => "forbidden",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::RequestTimeout => "request_timeout",
            ErrorCode::Conflict => "conflict",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::UnsupportedMediaType => "unsupported_media_type",
            ErrorCode::Unprocessable => "unprocessable",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::Internal => "internal",
            ErrorCode::Unavailable => "unavailable",
        }
    }

    /// The HTTP status the code is answered with.
    pub fn status(self) -> u16 {
        match self {
            ErrorCode::BadRequest
            | ErrorCode::ValidationFailed
            | ErrorCode::InvalidJson
            | ErrorCode::InvalidCursor
            | ErrorCode::InvalidLimit => 400,
            ErrorCode::Unauthenticated => 401,
            ErrorCode::MissingScope | ErrorCode::Forbidden => 403,
            ErrorCode::NotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::RequestTimeout => 408,
            ErrorCode::Conflict => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::UnsupportedMediaType => 415,
            ErrorCode::Unprocessable => 422,
            ErrorCode::RateLimited => 429,
            ErrorCode::Internal => 500,
            ErrorCode::Unavailable => 503,
        }
    }

    /// The HTTP reason phrase of [`ErrorCode::status`], used as `title`.
    pub fn title(self) -> &'static str {
        status_title(self.status())
    }

    /// The code named by its snake_case string.
    pub fn parse(code: &str) -> Option<ErrorCode> {
        ErrorCode::ALL.into_iter().find(|c| c.as_str() == code)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An error answer. Build one with a constructor named after its code and
/// return it from a handler; it becomes a problem response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    code: ErrorCode,
    detail: String,
    errors: Vec<FieldError>,
    scope: Option<String>,
    headers: Vec<(String, String)>,
}

impl ApiError {
    /// An error with any code; prefer the named constructors.
    pub fn new(code: ErrorCode, detail: impl Into<String>) -> Self {
        ApiError {
            code,
            detail: detail.into(),
            errors: Vec::new(),
            scope: None,
            headers: Vec::new(),
        }
    }

    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::BadRequest, detail)
    }

    /// One invalid field: `ApiError::validation("title", "must not be empty")`.
    /// The detail reads `title must not be empty`.
    pub fn validation(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::validation_errors(vec![FieldError {
            field: field.into(),
            message: message.into(),
        }])
    }

    /// Several invalid fields at once; see also [`crate::Validator`].
    pub fn validation_errors(errors: Vec<FieldError>) -> Self {
        let detail = validation_detail(&errors);
        ApiError {
            errors,
            ..Self::new(ErrorCode::ValidationFailed, detail)
        }
    }

    pub fn invalid_json(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidJson, detail)
    }

    pub fn invalid_cursor() -> Self {
        Self::new(
            ErrorCode::InvalidCursor,
            "cursor is not valid: pass the nextCursor of the previous page unchanged",
        )
    }

    /// `limit` was sent as `raw`, which is not an integer from 1 to
    /// [`crate::MAX_LIMIT`].
    pub fn invalid_limit(raw: &str) -> Self {
        Self::new(
            ErrorCode::InvalidLimit,
            format!(
                "limit must be an integer between 1 and {}, got {raw:?}",
                crate::page::MAX_LIMIT
            ),
        )
    }

    pub fn unauthenticated(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unauthenticated, detail)
    }

    /// The caller's token lacks `scope`; the body names it.
    pub fn missing_scope(scope: impl Into<String>) -> Self {
        let scope = scope.into();
        let detail = format!("use a token with the scope {scope}");
        ApiError {
            scope: Some(scope),
            ..Self::new(ErrorCode::MissingScope, detail)
        }
    }

    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::Forbidden, detail)
    }

    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, detail)
    }

    /// The path exists with other methods; they are listed in `Allow`.
    pub fn method_not_allowed(method: &str, allowed: &[Method]) -> Self {
        let list: Vec<&str> = allowed.iter().map(|m| m.as_str()).collect();
        let list = list.join(", ");
        let detail = format!("method {method} is not allowed here: use {list}");
        Self::new(ErrorCode::MethodNotAllowed, detail).with_header("allow", list)
    }

    pub fn conflict(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::Conflict, detail)
    }

    pub fn payload_too_large(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::PayloadTooLarge, detail)
    }

    pub fn unsupported_media_type(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::UnsupportedMediaType, detail)
    }

    /// Well-formed but not possible as it stands (422); say what would make
    /// it possible.
    pub fn unprocessable(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unprocessable, detail)
    }

    /// Too many requests; the client may retry after `retry_after_secs`.
    pub fn rate_limited(detail: impl Into<String>, retry_after_secs: u32) -> Self {
        Self::new(ErrorCode::RateLimited, detail)
            .with_header("retry-after", retry_after_secs.to_string())
    }

    /// A bug or a broken invariant. Answering 500 or more rolls back the
    /// request's key-value writes and events.
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::Internal, detail)
    }

    /// A dependency is down; the client should retry later. Rolls back too.
    pub fn unavailable(detail: impl Into<String>) -> Self {
        Self::new(ErrorCode::Unavailable, detail)
    }

    /// Adds a response header (name lowercased).
    pub fn with_header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers
            .push((name.into().to_ascii_lowercase(), value.into()));
        self
    }

    pub fn code(&self) -> ErrorCode {
        self.code
    }

    pub fn status(&self) -> u16 {
        self.code.status()
    }

    pub fn detail(&self) -> &str {
        &self.detail
    }

    pub fn errors(&self) -> &[FieldError] {
        &self.errors
    }

    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// Response headers the error adds (`allow`, `retry-after`).
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    /// The body as it is sent.
    pub fn problem(&self) -> Problem {
        Problem {
            errors: self.errors.clone(),
            scope: self.scope.clone(),
            ..Problem::new(self.code.status(), self.code.as_str(), self.detail.clone())
        }
    }

    /// The problem response: status, content type, extra headers and body.
    pub fn into_response(self) -> Response {
        let body = self.problem().to_json();
        let mut response =
            Response::new(self.status()).with_header("content-type", PROBLEM_CONTENT_TYPE);
        response.headers.extend(self.headers);
        response.body = body;
        response
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.detail)
    }
}

impl std::error::Error for ApiError {}

impl From<ApiError> for Response {
    fn from(error: ApiError) -> Response {
        error.into_response()
    }
}
