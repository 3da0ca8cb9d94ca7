//! [`Problem`]: the JSON body of every error the platform sends (RFC 9457
//! problem details with Plateau's `code`), its `title` per status, and the
//! invalid fields of a `validation_failed` one.

use serde::{Deserialize, Serialize};

/// The media type of every error body.
pub const PROBLEM_CONTENT_TYPE: &str = "application/problem+json";

/// Where the `type` URIs of problems live; the code is appended.
pub const PROBLEM_TYPE_BASE: &str = "https://plateau.dev/problems/";

/// The reason phrase of an error status (RFC 9110), a problem's `title`;
/// `Error` for a status the RFC does not name.
pub fn status_title(status: u16) -> &'static str {
    match status {
        400 => "Bad Request",
        401 => "Unauthorized",
        402 => "Payment Required",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        407 => "Proxy Authentication Required",
        408 => "Request Timeout",
        409 => "Conflict",
        410 => "Gone",
        411 => "Length Required",
        412 => "Precondition Failed",
        413 => "Payload Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        416 => "Range Not Satisfiable",
        417 => "Expectation Failed",
        421 => "Misdirected Request",
        422 => "Unprocessable Entity",
        425 => "Too Early",
        426 => "Upgrade Required",
        428 => "Precondition Required",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        451 => "Unavailable For Legal Reasons",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        507 => "Insufficient Storage",
        _ => "Error",
    }
}

/// The `detail` of a `validation_failed` problem: the field and its
/// message when one field is invalid, else how many to fix.
pub fn validation_detail(errors: &[FieldError]) -> String {
    match errors {
        [one] => format!("{} {}", one.field, one.message),
        many => format!("fix the {} invalid fields listed in errors", many.len()),
    }
}

/// One invalid field of a `validation_failed` error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct FieldError {
    /// A JSON path into the request body: `title`, `variants[2].name`.
    pub field: String,
    pub message: String,
}

/// The JSON body of every error the platform sends (RFC 9457 problem
/// details with Plateau's `code`), member order as sent: the API's own
/// errors, plugins' and the edge's. Tests read it back with
/// [`crate::http::Response::problem`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Problem {
    /// A URI naming the kind of problem: [`PROBLEM_TYPE_BASE`] and the code.
    #[serde(rename = "type")]
    pub problem_type: String,
    /// The HTTP reason phrase.
    pub title: String,
    pub status: u16,
    /// Stable and machine-readable: `missing_scope`, `validation_failed`, ...
    pub code: String,
    /// What went wrong and what to do about it.
    pub detail: String,
    /// The invalid fields, on `validation_failed`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
    /// The scope the token lacks, on `missing_scope`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl Problem {
    /// The body of an error with `status` and `code`; the `type` URI and
    /// the `title` follow from them. Codes outside [`crate::ErrorCode`] (the
    /// edge's `app_paused`, a service's `plan_limit`) are written the same
    /// way.
    pub fn new(status: u16, code: &str, detail: impl Into<String>) -> Problem {
        Problem {
            problem_type: format!("{PROBLEM_TYPE_BASE}{code}"),
            title: status_title(status).to_owned(),
            status,
            code: code.to_owned(),
            detail: detail.into(),
            errors: Vec::new(),
            scope: None,
        }
    }

    /// The body as sent, `application/problem+json`.
    pub fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a problem always serializes")
    }
}
