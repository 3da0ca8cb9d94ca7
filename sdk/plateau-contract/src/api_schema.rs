//! The typed shape of a plugin's routes: request and response bodies as
//! OpenAPI schemas, which the host puts in its OpenAPI document.
//!
//! A released WIT world's self-description carries no schemas, and its
//! meaning never changes; so the schemas travel in band. At load, right
//! after `describe` and under the same limits (no data, no network), the
//! host sends the component one `GET` [`PATH`]; a component built with the
//! SDK answers [`ApiSchema`] as JSON, from the types its routes declare.
//! Any other answer (a component of another toolkit, or one built before
//! the SDK knew this path) leaves the plugin's operations untyped, as
//! before. [`PATH`] is under a prefix no plugin may claim.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The path the host asks at load; under the reserved prefix [`PREFIX`].
pub const PATH: &str = "/.plateau/api-schema";

/// The prefix no plugin may claim.
pub const PREFIX: &str = "/.plateau";

/// Every route's bodies and the schemas they refer to.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiSchema {
    pub routes: Vec<RouteSchema>,
    /// Named schemas that bodies refer to as `#/components/schemas/<name>`.
    /// The host renames them `<plugin>.<name>` (and their references) so
    /// two plugins' names never meet.
    #[serde(default)]
    pub components: BTreeMap<String, Value>,
}

/// One route's bodies; a route left out, or without a body here, is
/// documented as before (any JSON).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteSchema {
    /// Uppercase, as in the description.
    pub method: String,
    /// The pattern, as in the description.
    pub path: String,
    /// What the operation does, beyond its summary (Markdown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The request body's schema: JSON unless [`RouteSchema::request_type`]
    /// names another media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<Value>,
    /// The request body's media type when it is not `application/json`
    /// (a binary body, or a foreign protocol's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_type: Option<String>,
    /// The body may be left out: the route then reads every field's
    /// default.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub request_optional: bool,
    /// The success answers, by status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub responses: Vec<ResponseSchema>,
}

/// One success answer of a route.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseSchema {
    /// 200, 201, 202 or 204.
    pub status: u16,
    /// The body's schema; none for a body-less answer (204).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// The body's media type when it is not `application/json`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
}

/// The schema of a body of raw bytes (`format: binary`).
pub fn binary() -> Value {
    serde_json::json!({ "type": "string", "format": "binary" })
}

impl ApiSchema {
    /// The entry of `method` and `path`.
    pub fn route(&self, method: &str, path: &str) -> Option<&RouteSchema> {
        self.routes
            .iter()
            .find(|r| r.method == method && r.path == path)
    }
}
