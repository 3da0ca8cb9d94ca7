//! The registry's one error type, answered in the OCI error format
//! (`{"errors":[{"code","message","detail"}]}`), never as a problem document.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Every error a `/v2` request can end with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    BlobUnknown(String),
    #[error("{0}")]
    BlobUploadInvalid(String),
    #[error("{0}")]
    BlobUploadUnknown(String),
    /// A chunk that does not start where the upload stands (416).
    #[error("the chunk must start at byte {size}: get the upload status and resume from there")]
    RangeNotSatisfiable { size: u64, location: String },
    #[error("{0}")]
    DigestInvalid(String),
    #[error("{0}")]
    ManifestBlobUnknown(String),
    #[error("{0}")]
    ManifestInvalid(String),
    #[error("{0}")]
    ManifestUnknown(String),
    #[error("{0}")]
    NameInvalid(String),
    #[error("{0}")]
    NameUnknown(String),
    #[error("{0}")]
    SizeInvalid(String),
    /// A manifest over the size limit (413).
    #[error("{0}")]
    TooLarge(String),
    /// Missing or invalid credentials; `challenge` is the `WWW-Authenticate` value.
    #[error("{message}")]
    Unauthorized { message: String, challenge: String },
    #[error("{0}")]
    Denied(String),
    #[error("{0}")]
    Unsupported(String),
    #[error("{0}")]
    UnknownEndpoint(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{message}")]
    TooManyRequests {
        message: String,
        retry_after_secs: u64,
    },
    #[error("database error: {0}")]
    Store(#[from] plateau_store::Error),
    #[error("blob storage error: {0}")]
    Object(#[from] object_store::Error),
    #[error("{0}")]
    Internal(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn status(&self) -> StatusCode {
        match self {
            Error::BlobUnknown(_)
            | Error::BlobUploadUnknown(_)
            | Error::ManifestUnknown(_)
            | Error::NameUnknown(_)
            | Error::UnknownEndpoint(_) => StatusCode::NOT_FOUND,
            Error::BlobUploadInvalid(_)
            | Error::DigestInvalid(_)
            | Error::ManifestBlobUnknown(_)
            | Error::ManifestInvalid(_)
            | Error::NameInvalid(_)
            | Error::SizeInvalid(_)
            | Error::Unsupported(_) => StatusCode::BAD_REQUEST,
            Error::RangeNotSatisfiable { .. } => StatusCode::RANGE_NOT_SATISFIABLE,
            Error::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Error::Unauthorized { .. } => StatusCode::UNAUTHORIZED,
            Error::Denied(_) => StatusCode::FORBIDDEN,
            Error::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            Error::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            Error::Store(_) | Error::Object(_) | Error::Internal(_) => {
                StatusCode::INTERNAL_SERVER_ERROR
            }
        }
    }

    /// The OCI error code (distribution-spec "Error Codes"); `UNKNOWN` for
    /// server faults, which the spec leaves open.
    pub fn code(&self) -> &'static str {
        match self {
            Error::BlobUnknown(_) => "BLOB_UNKNOWN",
            Error::BlobUploadInvalid(_) | Error::RangeNotSatisfiable { .. } => {
                "BLOB_UPLOAD_INVALID"
            }
            Error::BlobUploadUnknown(_) => "BLOB_UPLOAD_UNKNOWN",
            Error::DigestInvalid(_) => "DIGEST_INVALID",
            Error::ManifestBlobUnknown(_) => "MANIFEST_BLOB_UNKNOWN",
            Error::ManifestInvalid(_) => "MANIFEST_INVALID",
            Error::ManifestUnknown(_) => "MANIFEST_UNKNOWN",
            Error::NameInvalid(_) => "NAME_INVALID",
            Error::NameUnknown(_) => "NAME_UNKNOWN",
            Error::SizeInvalid(_) | Error::TooLarge(_) => "SIZE_INVALID",
            Error::Unauthorized { .. } => "UNAUTHORIZED",
            Error::Denied(_) => "DENIED",
            Error::Unsupported(_) | Error::UnknownEndpoint(_) | Error::MethodNotAllowed(_) => {
                "UNSUPPORTED"
            }
            Error::TooManyRequests { .. } => "TOOMANYREQUESTS",
            Error::Store(_) | Error::Object(_) | Error::Internal(_) => "UNKNOWN",
        }
    }

    pub fn name_unknown(name: &str) -> Self {
        Error::NameUnknown(format!("repository {name} is not known to this registry"))
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        let message = if status.is_server_error() {
            tracing::error!(error = %self, "registry request failed");
            "internal error".to_owned()
        } else {
            self.to_string()
        };
        let body =
            json!({ "errors": [{ "code": self.code(), "message": message, "detail": null }] });
        let mut response = (status, body.to_string()).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        headers.insert(
            "docker-distribution-api-version",
            HeaderValue::from_static("registry/2.0"),
        );
        match &self {
            Error::Unauthorized { challenge, .. } => {
                if let Ok(v) = HeaderValue::from_str(challenge) {
                    headers.insert(header::WWW_AUTHENTICATE, v);
                }
            }
            Error::TooManyRequests {
                retry_after_secs, ..
            } => {
                headers.insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
            }
            Error::TooLarge(_) => {
                // The rest of the body is never read.
                headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            Error::RangeNotSatisfiable { size, location } => {
                if let Ok(v) = HeaderValue::from_str(location) {
                    headers.insert(header::LOCATION, v);
                }
                if let Ok(v) = HeaderValue::from_str(&crate::routes::range_header(*size)) {
                    headers.insert(header::RANGE, v);
                }
            }
            _ => {}
        }
        response
    }
}
