//! Requests, responses and the caller: the HTTP shapes a handler sees.
//!
//! They mirror the WIT records of `plateau:plugin/types` but are plain Rust
//! values: the host converts its bindings to and from them, and a plugin's
//! tests build a [`Request`] and read a [`Response`] natively.

use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt;
use std::str::FromStr;

use crate::error::{ApiError, Problem};
use crate::query::Query;

/// The methods a route may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Method {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl Method {
    /// The method named by an uppercase name, if routes may have it.
    pub fn parse(name: &str) -> Option<Method> {
        match name {
            "GET" => Some(Method::Get),
            "POST" => Some(Method::Post),
            "PUT" => Some(Method::Put),
            "PATCH" => Some(Method::Patch),
            "DELETE" => Some(Method::Delete),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
            Method::Patch => "PATCH",
            Method::Delete => "DELETE",
        }
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Method {
    type Err = ApiError;

    /// Parses an uppercase method name.
    fn from_str(s: &str) -> Result<Self, ApiError> {
        Method::parse(s)
            .ok_or_else(|| ApiError::bad_request(format!("method {s} is not supported")))
    }
}

/// Who is calling. The host authenticated the caller and checked the
/// route's access rule before the plugin runs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    /// None on a public route called without a token.
    pub organization_id: Option<String>,
    /// The token's project, the `project` query parameter, or the
    /// organisation's default project.
    pub project_id: Option<String>,
    /// The token's scopes; `*` means every scope.
    pub scopes: Vec<String>,
    /// `user:<id>` or `token:<id>`; none on a public route.
    pub actor: Option<String>,
    /// free, starter, pro or scale.
    pub plan: Option<String>,
}

impl Caller {
    /// A caller of `organization_id` with `scopes`, for tests.
    pub fn new(organization_id: impl Into<String>, scopes: &[&str]) -> Self {
        Caller {
            organization_id: Some(organization_id.into()),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            actor: Some("user:test".to_owned()),
            ..Caller::default()
        }
    }

    /// A caller without a token, as on a public route.
    pub fn anonymous() -> Self {
        Caller::default()
    }

    pub fn is_anonymous(&self) -> bool {
        self.organization_id.is_none()
    }

    /// Whether the token carries `scope` (or `*`).
    pub fn has_scope(&self, scope: &str) -> bool {
        self.scopes.iter().any(|s| s == scope || s == "*")
    }

    /// 403 `missing_scope` unless the token carries `scope`.
    pub fn require_scope(&self, scope: &str) -> Result<(), ApiError> {
        if self.has_scope(scope) {
            Ok(())
        } else {
            Err(ApiError::missing_scope(scope))
        }
    }

    /// The caller's organisation, or 401 `unauthenticated`.
    pub fn organization(&self) -> Result<&str, ApiError> {
        self.organization_id
            .as_deref()
            .ok_or_else(|| ApiError::unauthenticated("send a bearer token of your organisation"))
    }
}

/// A request routed to the plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Request {
    /// Uppercase: `GET`, `POST`, ...
    pub method: String,
    /// Below the API base: `/notes/n1`.
    pub path: String,
    /// The route pattern the host matched, `/notes/{id}`; may be empty.
    pub route: String,
    /// Raw query string without the leading `?`.
    pub query: String,
    /// Names are lowercase.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub caller: Caller,
}

impl Request {
    /// A request for tests; `target` may carry a query: `/notes?limit=2`.
    pub fn new(method: Method, target: &str) -> Self {
        let (path, query) = target.split_once('?').unwrap_or((target, ""));
        Request {
            method: method.as_str().to_owned(),
            path: path.to_owned(),
            query: query.to_owned(),
            ..Request::default()
        }
    }

    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = caller;
        self
    }

    /// Adds a header; the name is lowercased as the host does.
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    pub fn with_body(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = body.into();
        self
    }

    /// A JSON body with `content-type: application/json`.
    pub fn with_json<T: Serialize + ?Sized>(self, value: &T) -> Self {
        let body = serde_json::to_vec(value).expect("test body serializes to json");
        self.with_header("content-type", "application/json")
            .with_body(body)
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The decoded query string.
    pub fn query(&self) -> Query {
        Query::parse(&self.query)
    }
}

/// The plugin's answer. A status of 500 or more rolls back every key-value
/// write and event of the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// An empty response with `status`.
    pub fn new(status: u16) -> Self {
        Response {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    /// `value` as JSON with `status`. A value that cannot be serialized
    /// (a map with non-string keys) gives a 500 problem instead.
    pub fn json<T: Serialize + ?Sized>(status: u16, value: &T) -> Self {
        match serde_json::to_vec(value) {
            Ok(body) => Response {
                body,
                ..Response::new(status)
            }
            .with_header("content-type", "application/json"),
            Err(e) => ApiError::internal(format!("response body does not serialize to json: {e}"))
                .into_response(),
        }
    }

    /// `problem` as the answer: its status, its JSON, and
    /// `application/problem+json` as the one content type.
    pub fn from_problem(problem: &Problem) -> Self {
        Response {
            body: problem.to_json(),
            ..Response::new(problem.status)
        }
        .with_header("content-type", crate::error::PROBLEM_CONTENT_TYPE)
    }

    /// 200 with a JSON body.
    pub fn ok<T: Serialize + ?Sized>(value: &T) -> Self {
        Self::json(200, value)
    }

    /// 201 with a JSON body.
    pub fn created<T: Serialize + ?Sized>(value: &T) -> Self {
        Self::json(201, value)
    }

    /// 204 without a body.
    pub fn no_content() -> Self {
        Self::new(204)
    }

    /// A `text/plain` body.
    pub fn text(status: u16, body: impl Into<String>) -> Self {
        Response {
            body: body.into().into_bytes(),
            ..Response::new(status)
        }
        .with_header("content-type", "text/plain; charset=utf-8")
    }

    /// Adds a header; the name is lowercased.
    pub fn with_header(mut self, name: &str, value: impl Into<String>) -> Self {
        self.headers.push((name.to_ascii_lowercase(), value.into()));
        self
    }

    /// The first value of header `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The body parsed as JSON, for tests and outbound calls.
    pub fn json_body<T: DeserializeOwned>(&self) -> serde_json::Result<T> {
        serde_json::from_slice(&self.body)
    }

    /// The problem body, if this is an error response.
    pub fn problem(&self) -> Option<Problem> {
        let problem = self.header("content-type")? == crate::error::PROBLEM_CONTENT_TYPE;
        if problem {
            serde_json::from_slice(&self.body).ok()
        } else {
            None
        }
    }
}

/// The first value of header `name` (case-insensitive) in `headers`.
pub fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}
