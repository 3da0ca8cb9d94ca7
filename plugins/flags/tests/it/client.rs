//! A small client for the plugin's HTTP API, served by the SDK's in-memory host
//! (`plateau_sdk::testing`) exactly as the host would serve it.

use plateau_plugin_flags::FlagsPlugin;
use plateau_sdk::{Caller, Method, Query, Request, Response, testing};
use serde_json::Value;

pub const ORG: &str = "org_1";
/// The organisation's default project, which the host puts in the caller info when neither
/// the token nor the request names one.
pub const PROJECT: &str = "prj_main";

/// A caller of [`ORG`] with `scopes` and a token bound to no project.
pub fn caller(scopes: &[&str]) -> Caller {
    Caller::new(ORG, scopes)
}

/// A caller with every scope of the plugin.
pub fn admin() -> Caller {
    caller(&["flags:read", "flags:write", "flags:evaluate"])
}

/// A request to `target` from `caller`, whose project is filled in as the host does: a token
/// bound to a project keeps it; otherwise the `project` query parameter, or [`PROJECT`].
pub fn request(method: Method, target: &str, mut caller: Caller) -> Request {
    if caller.project_id.is_none() && !caller.is_anonymous() {
        let query = Query::parse(target.split_once('?').map_or("", |(_, query)| query));
        caller.project_id = Some(query.get("project").unwrap_or(PROJECT).to_owned());
    }
    Request::new(method, target).with_caller(caller)
}

/// Sends a request, with a JSON body when one is given.
pub fn send(method: Method, target: &str, caller: Caller, body: Option<&Value>) -> Response {
    let mut req = request(method, target, caller);
    if let Some(body) = body {
        req = req.with_json(body);
    }
    testing::handle::<FlagsPlugin>(&req)
}

pub use plateau_sdk::testing::json_body as json;

/// `PUT /flags/{target}` as [`admin`]; `target` may carry a query.
pub fn put_flag(target: &str, definition: &Value) -> Response {
    send(
        Method::Put,
        &format!("/flags/{target}"),
        admin(),
        Some(definition),
    )
}

/// `PUT` that must succeed with 201 or 200.
pub fn save_flag(target: &str, definition: &Value) {
    let res = put_flag(target, definition);
    assert!(
        matches!(res.status, 200 | 201),
        "PUT /flags/{target}: {} {}",
        res.status,
        String::from_utf8_lossy(&res.body)
    );
}

/// `GET` as [`admin`].
pub fn get(target: &str) -> Response {
    send(Method::Get, target, admin(), None)
}

/// An OFREP `POST` with a raw body, as [`admin`]: the status and the JSON body.
pub fn ofrep_raw(path: &str, body: &[u8]) -> (u16, Value) {
    let req = request(Method::Post, path, admin())
        .with_header("content-type", "application/json")
        .with_body(body.to_vec());
    let res = testing::handle::<FlagsPlugin>(&req);
    let body = json(&res);
    (res.status, body)
}

/// An OFREP `POST /flags/ofrep/v1/evaluate/flags/{key}` with `{"context": context}`.
pub fn evaluate(key: &str, context: &Value) -> (u16, Value) {
    let body = serde_json::json!({ "context": context }).to_string();
    ofrep_raw(
        &format!("/flags/ofrep/v1/evaluate/flags/{key}"),
        body.as_bytes(),
    )
}

/// A boolean flag with the given targeting (`null`: none).
pub fn bool_flag(targeting: Value) -> Value {
    serde_json::json!({
        "state": "ENABLED",
        "variants": {"on": true, "off": false},
        "defaultVariant": "off",
        "targeting": targeting,
    })
}
