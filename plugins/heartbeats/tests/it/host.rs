//! A client for the plugin's API over the SDK's in-memory host, and a
//! stand-in of the host's job runner.

use plateau_plugin_heartbeats::HeartbeatsPlugin;
use plateau_sdk::{Caller, Method, Request, Response, testing};
use serde_json::Value;

pub const ORG: &str = "org_1";
pub const OTHER_ORG: &str = "org_2";

pub fn caller() -> Caller {
    Caller::new(ORG, &["heartbeats:read", "heartbeats:write"])
}

/// Sends a request as [`caller`], with a JSON body when one is given, from
/// `Host: plateau.test`.
pub fn send(method: Method, target: &str, body: Option<&Value>) -> Response {
    send_as(caller(), method, target, body)
}

pub fn send_as(caller: Caller, method: Method, target: &str, body: Option<&Value>) -> Response {
    let mut req = Request::new(method, target)
        .with_caller(caller)
        .with_header("host", "plateau.test");
    if let Some(body) = body {
        req = req.with_json(body);
    }
    testing::handle::<HeartbeatsPlugin>(&req)
}

/// A ping without a token, as a cron job's `curl` sends it.
pub fn ping(method: Method, url: &str) -> Response {
    let path = url
        .strip_prefix("http://plateau.test/api/v1")
        .unwrap_or_else(|| panic!("ping URL {url} is not under the request's host"));
    let req = Request::new(method, path)
        .with_caller(Caller::anonymous())
        .with_header("x-forwarded-for", "203.0.113.7, 10.0.0.1")
        .with_header("user-agent", "curl/8.5.0");
    testing::handle::<HeartbeatsPlugin>(&req)
}

pub use plateau_sdk::testing::json_body as json;

/// Creates a heartbeat, which must succeed; returns the body.
pub fn create(body: Value) -> Value {
    let res = send(Method::Post, "/heartbeats", Some(&body));
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    json(&res)
}

pub fn get(id: &str) -> Value {
    let res = send(Method::Get, &format!("/heartbeats/{id}"), None);
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    json(&res)
}

/// The scheduled jobs as `(key, due)`, in key order.
pub fn scheduled() -> Vec<(String, u64)> {
    testing::jobs()
        .into_iter()
        .map(|(_, job)| (job.key, job.at))
        .collect()
}

/// Runs every job due at `now` like the host's runner
/// (`testing::run_due_jobs`): each run's key and result, in order.
pub fn run_due(now: u64) -> Vec<(String, Result<(), String>)> {
    testing::run_due_jobs::<HeartbeatsPlugin>(now)
}

/// The events recorded so far of type `event_type`, as `(resource id, data)`.
pub fn events(event_type: &str) -> Vec<(Option<String>, Value)> {
    testing::events()
        .into_iter()
        .filter(|e| e.event_type == event_type)
        .map(|e| (e.resource_id, serde_json::from_str(&e.data).unwrap()))
        .collect()
}
