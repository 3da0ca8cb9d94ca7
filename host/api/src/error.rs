//! The one error body of the API: RFC 9457 problem details with a stable,
//! machine-readable `code`. The body ([`Problem`], [`FieldError`]) and how
//! it is written (the `type` URI, the title, the detail of a validation
//! failure) belong to `plateau-contract`, which plugins and the edge use
//! too; this module adds the host's error enum and its axum response.
//!
//! Every 4xx and 5xx the server sends has this shape, including the ones
//! axum and tower produce themselves (unknown route, wrong method, body too
//! large): [`normalize`] rewrites those on the way out.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use plateau_contract::{ErrorCode, PROBLEM_CONTENT_TYPE};

pub use plateau_contract::{FieldError, Problem};

pub const PROBLEM_JSON: &str = PROBLEM_CONTENT_TYPE;

/// Marks a response a plugin produced (`name@version`).
pub const PLUGIN_HEADER: &str = "plateau-plugin";

/// Every error the API answers with.
#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{detail}")]
    BadRequest { code: &'static str, detail: String },
    #[error("the request has invalid fields")]
    Validation(Vec<FieldError>),
    #[error("{detail}")]
    Unauthenticated { code: &'static str, detail: String },
    #[error("this endpoint needs the scope {0}; use a token that carries it")]
    MissingScope(String),
    #[error("{detail}")]
    Forbidden { code: &'static str, detail: String },
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{detail}")]
    Conflict { code: &'static str, detail: String },
    #[error("{0}")]
    PayloadTooLarge(String),
    /// The client stopped sending the request body.
    #[error("{0}")]
    RequestTimeout(String),
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("{detail}")]
    Unprocessable { code: &'static str, detail: String },
    #[error("{detail}")]
    TooManyRequests {
        detail: String,
        retry_after_secs: u64,
    },
    /// Details are logged, never sent.
    #[error("internal error")]
    Internal(String),
    #[error("{0}")]
    Unavailable(String),
    /// A server this one called on the caller's behalf (an OCI registry)
    /// could not be reached or failed.
    #[error("{detail}")]
    BadGateway { code: &'static str, detail: String },
    /// An error in the contract's terms (a body that does not parse, an
    /// invalid `limit`, a [`plateau_contract::Validator`]'s fields), sent
    /// as the contract writes it, with its headers.
    #[error("{0}")]
    Contract(plateau_contract::ApiError),
    /// A plugin failed (trap, deadline, memory, fuel, conflict); the detail
    /// names the plugin.
    #[error("{detail}")]
    Plugin {
        status: StatusCode,
        code: &'static str,
        detail: String,
    },
}

impl ApiError {
    pub fn bad_request(code: &'static str, detail: impl Into<String>) -> Self {
        ApiError::BadRequest {
            code,
            detail: detail.into(),
        }
    }

    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError::Validation(vec![FieldError {
            field: field.into(),
            message: message.into(),
        }])
    }

    pub fn not_found(what: impl Into<String>) -> Self {
        ApiError::NotFound(what.into())
    }

    pub fn conflict(code: &'static str, detail: impl Into<String>) -> Self {
        ApiError::Conflict {
            code,
            detail: detail.into(),
        }
    }

    pub fn forbidden(code: &'static str, detail: impl Into<String>) -> Self {
        ApiError::Forbidden {
            code,
            detail: detail.into(),
        }
    }

    pub fn unauthenticated(code: &'static str, detail: impl Into<String>) -> Self {
        ApiError::Unauthenticated {
            code,
            detail: detail.into(),
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest { .. } | ApiError::Validation(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthenticated { .. } => StatusCode::UNAUTHORIZED,
            ApiError::MissingScope(_) | ApiError::Forbidden { .. } => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::RequestTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::Unprocessable { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::BadGateway { .. } => StatusCode::BAD_GATEWAY,
            ApiError::Plugin { status, .. } => *status,
            ApiError::Contract(e) => {
                StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
            }
        }
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::BadRequest { code, .. }
            | ApiError::Unauthenticated { code, .. }
            | ApiError::Forbidden { code, .. }
            | ApiError::Conflict { code, .. }
            | ApiError::Unprocessable { code, .. }
            | ApiError::BadGateway { code, .. }
            | ApiError::Plugin { code, .. } => code,
            // The codes plugins answer too: one list, in the contract.
            ApiError::Validation(_) => ErrorCode::ValidationFailed.as_str(),
            ApiError::MissingScope(_) => ErrorCode::MissingScope.as_str(),
            ApiError::NotFound(_) => ErrorCode::NotFound.as_str(),
            ApiError::MethodNotAllowed(_) => ErrorCode::MethodNotAllowed.as_str(),
            ApiError::PayloadTooLarge(_) => ErrorCode::PayloadTooLarge.as_str(),
            ApiError::RequestTimeout(_) => ErrorCode::RequestTimeout.as_str(),
            ApiError::UnsupportedMediaType(_) => ErrorCode::UnsupportedMediaType.as_str(),
            ApiError::TooManyRequests { .. } => ErrorCode::RateLimited.as_str(),
            ApiError::Internal(_) => ErrorCode::Internal.as_str(),
            ApiError::Unavailable(_) => ErrorCode::Unavailable.as_str(),
            ApiError::Contract(e) => e.code().as_str(),
        }
    }

    pub fn problem(&self) -> Problem {
        let status = self.status().as_u16();
        match self {
            ApiError::Contract(e) => e.problem(),
            ApiError::Validation(errors) => Problem {
                errors: errors.clone(),
                ..Problem::new(
                    status,
                    self.code(),
                    plateau_contract::validation_detail(errors),
                )
            },
            ApiError::MissingScope(scope) => Problem {
                scope: Some(scope.clone()),
                ..Problem::new(status, self.code(), self.to_string())
            },
            other => Problem::new(status, self.code(), other.to_string()),
        }
    }
}

impl From<plateau_contract::ApiError> for ApiError {
    fn from(e: plateau_contract::ApiError) -> Self {
        ApiError::Contract(e)
    }
}

impl From<plateau_store::Error> for ApiError {
    fn from(e: plateau_store::Error) -> Self {
        ApiError::Internal(e.to_string())
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(detail) = &self {
            tracing::error!(%detail, "internal error");
        }
        let mut response = problem_response(&self.problem());
        if let ApiError::TooManyRequests {
            retry_after_secs, ..
        } = &self
            && let Ok(v) = HeaderValue::from_str(&retry_after_secs.to_string())
        {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        if matches!(
            self,
            ApiError::PayloadTooLarge(_) | ApiError::RequestTimeout(_)
        ) {
            // The rest of the body is never read: the connection closes
            // after this answer instead of waiting for it.
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
        }
        if let ApiError::Contract(e) = &self {
            for (name, value) in e.headers() {
                if let (Ok(name), Ok(value)) = (
                    header::HeaderName::from_bytes(name.as_bytes()),
                    HeaderValue::from_str(value),
                ) {
                    response.headers_mut().insert(name, value);
                }
            }
        }
        response
    }
}

/// A problem as a response, `application/problem+json` with its status.
pub fn problem_response(problem: &Problem) -> Response {
    let body = problem.to_json();
    let status = StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = (status, body).into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    response
}

/// The challenge of RFC 6750 (section 3) on a 401 that has none: the API
/// takes bearer tokens, and a token that was sent and refused is
/// `invalid_token`. A route speaking a protocol with its own challenge
/// (the registry's) keeps it.
fn challenge(response: &mut Response, sent_credentials: bool) {
    if response.headers().contains_key(header::WWW_AUTHENTICATE) {
        return;
    }
    let value = if sent_credentials {
        r#"Bearer realm="plateau", error="invalid_token""#
    } else {
        r#"Bearer realm="plateau""#
    };
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static(value));
}

/// Middleware: gives every error response that is not already a problem
/// document the problem shape, keeping headers such as `Allow`.
pub async fn normalize(req: Request, next: Next) -> Response {
    let sent_credentials = req.headers().contains_key(header::AUTHORIZATION);
    let mut response = next.run(req).await;
    let status = response.status();
    if status == StatusCode::UNAUTHORIZED {
        challenge(&mut response, sent_credentials);
    }
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(PROBLEM_JSON.as_bytes()));
    // A plugin's own answers (an OFREP error body, say) are its contract.
    if is_problem || response.headers().contains_key(PLUGIN_HEADER) {
        return response;
    }
    let error = match status {
        StatusCode::NOT_FOUND => {
            ApiError::not_found("no such endpoint: check the method and the path")
        }
        StatusCode::METHOD_NOT_ALLOWED => ApiError::MethodNotAllowed(
            "this path does not accept that method: see the Allow header".to_owned(),
        ),
        StatusCode::PAYLOAD_TOO_LARGE => {
            ApiError::PayloadTooLarge("the request body is too large".to_owned())
        }
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ApiError::UnsupportedMediaType(
            "send the body as JSON with Content-Type: application/json".to_owned(),
        ),
        s if s.is_server_error() => ApiError::Internal(format!("unhandled {s}")),
        _ => ApiError::bad_request(ErrorCode::BadRequest.as_str(), "the request is malformed"),
    };
    let (mut parts, _) = response.into_parts();
    let problem = Problem::new(status.as_u16(), error.code(), error.to_string());
    let fresh = problem_response(&problem);
    parts
        .headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROBLEM_JSON));
    parts.headers.remove(header::CONTENT_LENGTH);
    let (_, body) = fresh.into_parts();
    Response::from_parts(parts, Body::new(body))
}
