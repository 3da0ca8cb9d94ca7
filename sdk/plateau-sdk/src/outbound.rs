//! Outbound HTTP through the host's egress guard.
//!
//! Only hosts granted to the plugin are reachable, and never loopback,
//! private or metadata addresses. Bodies and timeouts are capped by the host.
//! [`send_many`] sends a list of requests concurrently in one host call.
//!
//! ```no_run
//! # fn run() -> Result<(), plateau_sdk::ApiError> {
//! use plateau_sdk::outbound::OutgoingRequest;
//! let res = OutgoingRequest::post("https://hooks.example.com/notify")
//!     .json(&serde_json::json!({"text": "hello"}))
//!     .timeout_ms(2_000)
//!     .send()?;
//! if !res.is_success() {
//!     plateau_sdk::log::warn(&format!("webhook answered {}", res.status));
//! }
//! # Ok(()) }
//! ```

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::http::find_header;
use crate::sys;

/// A request to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutgoingRequest {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Capped by the host.
    pub timeout_ms: Option<u32>,
    /// Keep at most this many bytes of the response body and drop the rest
    /// ([`IncomingResponse::body_truncated`]); none fails a body over the
    /// host's cap with [`HttpError::ResponseTooLarge`].
    pub keep_body_bytes: Option<u32>,
}

impl OutgoingRequest {
    pub fn new(method: impl Into<String>, url: impl Into<String>) -> Self {
        OutgoingRequest {
            method: method.into(),
            url: url.into(),
            headers: Vec::new(),
            body: Vec::new(),
            timeout_ms: None,
            keep_body_bytes: None,
        }
    }

    pub fn get(url: impl Into<String>) -> Self {
        Self::new("GET", url)
    }

    pub fn post(url: impl Into<String>) -> Self {
        Self::new("POST", url)
    }

    /// Adds a header; the name is lowercased.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    pub fn body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// A JSON body with its content type. Panics if `value` does not
    /// serialize (a map with non-string keys), a bug in the caller.
    pub fn json<T: Serialize + ?Sized>(self, value: &T) -> Self {
        let body = serde_json::to_vec(value).expect("outbound json body serializes");
        self.header("content-type", "application/json").body(body)
    }

    pub fn timeout_ms(mut self, timeout_ms: u32) -> Self {
        self.timeout_ms = Some(timeout_ms);
        self
    }

    /// Keeps at most `bytes` of the response body: a longer answer is cut
    /// there, not an error.
    pub fn keep_body_bytes(mut self, bytes: u32) -> Self {
        self.keep_body_bytes = Some(bytes);
        self
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header_value(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    pub fn send(&self) -> Result<IncomingResponse, HttpError> {
        sys::http_send(self)
    }
}

/// The most requests one [`send_many`] takes.
pub const SEND_MANY_MAX: usize = 256;

/// Sends every request concurrently (the host keeps up to 64 in flight),
/// each under its own timeout; the answers in the order of `reqs`. The
/// host answers before the call's deadline: a request that would run past
/// it fails with [`HttpError::Timeout`]. More than [`SEND_MANY_MAX`]
/// requests fail each with [`HttpError::InvalidRequest`].
pub fn send_many(reqs: &[OutgoingRequest]) -> Vec<Result<IncomingResponse, HttpError>> {
    sys::http_send_many(reqs)
}

/// Shorthand for `OutgoingRequest::get(url).send()`.
pub fn get(url: &str) -> Result<IncomingResponse, HttpError> {
    OutgoingRequest::get(url).send()
}

/// The answer of the remote server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IncomingResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The answer had more body than the request's `keep_body_bytes`.
    pub body_truncated: bool,
    /// Time to an established connection (TCP and TLS); 0 when a
    /// connection the host kept alive carried the request.
    pub connect_ms: u32,
    /// Time to the whole response.
    pub total_ms: u32,
}

impl IncomingResponse {
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_slice(&self.body)
    }
}

/// Why a request was not answered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    /// The host is not among the plugin's granted outbound hosts.
    #[error("outbound host is not allowed: {0}")]
    HostNotAllowed(String),
    /// The address is loopback, private, link-local, multicast or metadata.
    #[error("outbound address is refused: {0}")]
    AddressRefused(String),
    #[error("outbound request is not valid: {0}")]
    InvalidRequest(String),
    #[error("outbound request timed out")]
    Timeout,
    /// The body is over the host's cap.
    #[error("outbound response is too large")]
    ResponseTooLarge,
    #[error("outbound connection failed: {0}")]
    ConnectionFailed(String),
}

impl From<HttpError> for ApiError {
    /// Timeouts and failed connections are 503 `unavailable` (retry later);
    /// the rest are the plugin's or operator's mistakes, 500 `internal`.
    fn from(error: HttpError) -> ApiError {
        match error {
            HttpError::Timeout | HttpError::ConnectionFailed(_) => {
                ApiError::unavailable(format!("{error}: retry later"))
            }
            HttpError::HostNotAllowed(_)
            | HttpError::AddressRefused(_)
            | HttpError::InvalidRequest(_)
            | HttpError::ResponseTooLarge => ApiError::internal(error.to_string()),
        }
    }
}
