//! Native tests of the workflows plugin: the rules of the request bodies,
//! the shapes of ids and index keys, and the plugin served by the SDK's
//! in-memory host on a set clock (claims, leases, retries, sleeps).

use plateau_plugin_workflows::WorkflowsPlugin;
use plateau_plugin_workflows::input::{NextRequest, SleepRequest, StartRequest};
use plateau_plugin_workflows::record;
use plateau_sdk::{Caller, Method, Request, Response, testing};
use serde_json::{Value, json};

fn send(method: Method, path: &str, body: Value) -> Response {
    let req = Request::new(method, path)
        .with_caller(Caller::new("org_1", &["*"]))
        .with_json(&body);
    testing::handle::<WorkflowsPlugin>(&req)
}

fn post(path: &str, body: Value) -> (u16, Value) {
    let r = send(Method::Post, path, body);
    let value = if r.body.is_empty() {
        Value::Null
    } else {
        testing::json_body(&r)
    };
    (r.status, value)
}

#[test]
fn the_description_is_valid() {
    let d = plateau_sdk::describe::<WorkflowsPlugin>();
    assert!(d.problems().is_empty(), "{:?}", d.problems());
    assert_eq!(d.routes.len(), 8);
}

#[test]
fn bodies_are_checked_all_at_once() {
    let s: StartRequest = serde_json::from_value(json!({
        "workflow": "a/b", "step": "x y", "maxAttempts": 51, "input": "x".repeat(70_000)
    }))
    .unwrap();
    let fields: Vec<String> = s
        .check()
        .unwrap_err()
        .errors()
        .iter()
        .map(|e| e.field.clone())
        .collect();
    assert_eq!(fields, ["workflow", "input", "step", "maxAttempts"]);
    let n: NextRequest =
        serde_json::from_value(json!({ "workflows": ["ok", "not ok"], "leaseSeconds": 3601 }))
            .unwrap();
    let fields: Vec<String> = n
        .check()
        .unwrap_err()
        .errors()
        .iter()
        .map(|e| e.field.clone())
        .collect();
    assert_eq!(fields, ["workflows[1]", "leaseSeconds"]);
    let z: SleepRequest = serde_json::from_value(json!({ "seconds": 7_776_001 })).unwrap();
    let fields: Vec<String> = z
        .check()
        .unwrap_err()
        .errors()
        .iter()
        .map(|e| e.field.clone())
        .collect();
    assert_eq!(fields, ["leaseToken", "seconds"]);
}

#[test]
fn ids_and_ready_keys_round_trip_and_sort_by_time() {
    let id = record::new_run_id(1_700_000_000_000);
    assert!(record::is_run_id(&id), "{id}");
    assert!(!record::is_run_id("run_x"));
    let key = record::ready_key(42, &id);
    assert_eq!(record::parse_ready_key(&key), Some((42, id.as_str())));
    assert!(record::ready_key(999, &id) < record::ready_key(1000, &id));
}

#[test]
fn a_step_is_leased_retried_and_slept_on_the_clock() {
    testing::reset();
    testing::set_now(1_000_000);
    let (status, run) = post(
        "/workflows/runs",
        json!({ "workflow": "w", "maxAttempts": 2 }),
    );
    assert_eq!(status, 201, "{run}");
    let (status, first) = post("/workflows/next", json!({ "leaseSeconds": 5 }));
    assert_eq!(
        (status, first["attempt"].clone()),
        (200, json!(1)),
        "{first}"
    );
    assert_eq!(post("/workflows/next", json!({})).0, 204);
    // The lease runs out: claimed again, the old token is stale.
    testing::set_now(1_005_000);
    let (_, second) = post("/workflows/next", json!({ "leaseSeconds": 5 }));
    assert_eq!(second["attempt"], 2, "{second}");
    let id = run["id"].as_str().unwrap();
    let (status, problem) = post(
        &format!("/workflows/runs/{id}/complete"),
        json!({ "leaseToken": first["leaseToken"] }),
    );
    assert_eq!(status, 409, "{problem}");
    // Sleeping a day, then claimable again.
    let (status, slept) = post(
        &format!("/workflows/runs/{id}/sleep"),
        json!({ "leaseToken": second["leaseToken"], "seconds": 86_400, "nextStep": "later" }),
    );
    assert_eq!(
        (status, slept["status"].clone()),
        (200, json!("sleeping")),
        "{slept}"
    );
    testing::set_now(1_005_000 + 86_399_000);
    assert_eq!(post("/workflows/next", json!({})).0, 204);
    testing::set_now(1_005_000 + 86_400_000);
    let (_, woke) = post("/workflows/next", json!({}));
    assert_eq!(
        (woke["step"].clone(), woke["attempt"].clone()),
        (json!("later"), json!(1))
    );
    // Its last attempt's lease runs out: the run fails.
    testing::set_now(1_005_000 + 86_460_000);
    assert_eq!(post("/workflows/next", json!({})).0, 200);
    testing::set_now(1_005_000 + 86_520_000);
    assert_eq!(post("/workflows/next", json!({})).0, 204);
    let run = testing::json_body(&send(
        Method::Get,
        &format!("/workflows/runs/{id}"),
        json!({}),
    ));
    assert_eq!(run["status"], "failed", "{run}");
}
