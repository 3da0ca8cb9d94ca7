//! Native tests of the queues plugin: the rules of the request bodies, the
//! shapes of ids and receipt handles, and the plugin served by the SDK's
//! in-memory host on a set clock.

use plateau_plugin_queues::QueuesPlugin;
use plateau_plugin_queues::input::{NewBatch, NewMessage, NewQueue};
use plateau_plugin_queues::record;
use plateau_sdk::{Caller, Method, Request, Response, testing};
use serde_json::{Value, json};

fn send(method: Method, path: &str, body: Value) -> Response {
    let req = Request::new(method, path)
        .with_caller(Caller::new("org_1", &["*"]))
        .with_json(&body);
    testing::handle::<QueuesPlugin>(&req)
}

#[test]
fn the_description_is_valid() {
    let d = plateau_sdk::describe::<QueuesPlugin>();
    assert!(d.problems().is_empty(), "{:?}", d.problems());
    assert_eq!(d.routes.len(), 13);
}

/// The OpenAPI document shows every route's answers, and the bodies of
/// the routes that need one, from the types the handlers use.
#[test]
fn every_route_declares_its_bodies() {
    let answer = testing::handle::<QueuesPlugin>(&Request::new(
        Method::Get,
        plateau_sdk::contract::api_schema::PATH,
    ));
    assert_eq!(answer.status, 200, "the host's question is answered");
    let schema: plateau_sdk::contract::api_schema::ApiSchema = answer.json_body().unwrap();
    let d = plateau_sdk::describe::<QueuesPlugin>();
    for route in &d.routes {
        let declared = schema
            .route(&route.method, &route.path)
            .unwrap_or_else(|| panic!("{} {} declares nothing", route.method, route.path));
        assert!(
            !declared.responses.is_empty(),
            "{} {}",
            route.method,
            route.path
        );
        let optional_body = route.path.ends_with("/receive") || route.path.ends_with("/purge");
        if route.method != "GET" && route.method != "DELETE" && !optional_body {
            assert!(
                declared.request.is_some(),
                "{} {}",
                route.method,
                route.path
            );
        }
    }
    let view = &schema.components["QueueView"];
    assert_eq!(
        view["properties"]["visibilityTimeoutSeconds"]["type"],
        "integer"
    );
    assert!(
        schema.components.contains_key("Sent"),
        "nested schemas are named too"
    );
}

#[test]
fn bodies_are_checked_all_at_once() {
    let q: NewQueue = serde_json::from_value(json!({
        "name": "a.b", "retentionSeconds": 10, "deadLetterQueue": "a.b"
    }))
    .unwrap();
    let err = q.check().unwrap_err();
    let fields: Vec<&str> = err.errors().iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        ["name", "retentionSeconds", "deadLetterQueue", "maxReceives"]
    );
    let m: NewMessage = serde_json::from_value(json!({ "body": "", "delaySeconds": 901 })).unwrap();
    assert_eq!(m.check().unwrap_err().errors().len(), 2);
    let big = "é".repeat(128 * 1024 + 1);
    let m: NewMessage = serde_json::from_value(json!({ "body": big })).unwrap();
    assert_eq!(
        m.check().unwrap_err().errors()[0].field,
        "body",
        "bytes, not characters"
    );
    let b: NewBatch = serde_json::from_value(json!({ "messages": [] })).unwrap();
    assert_eq!(b.check().unwrap_err().errors()[0].field, "messages");
    let b: NewBatch = serde_json::from_value(
        json!({ "messages": [{ "body": "x" }, { "body": "y", "dedupeId": "a/b" }] }),
    )
    .unwrap();
    assert_eq!(
        b.check().unwrap_err().errors()[0].field,
        "messages[1].dedupeId"
    );
}

#[test]
fn receipt_handles_and_index_keys_round_trip() {
    let id = record::new_message_id(1_700_000_000_000);
    assert!(record::is_message_id(&id), "{id}");
    let token = record::new_token();
    let handle = record::receipt_handle(&id, &token);
    assert_eq!(
        record::parse_receipt_handle(&handle),
        Some((id.as_str(), token.as_str()))
    );
    assert_eq!(record::parse_receipt_handle("msg_x.y"), None);
    let key = record::index_key("q.1", 42, &id);
    assert_eq!(record::parse_index_key(&key), Some((42, id.as_str())));
    // The index sorts by visibility time.
    assert!(record::index_key("q.1", 999, &id) < record::index_key("q.1", 1000, &id));
}

#[test]
fn a_receive_hides_a_message_until_its_timeout_and_only_its_handle_acks() {
    testing::reset();
    testing::set_now(1_000_000);
    let r = send(
        Method::Post,
        "/queues",
        json!({ "name": "q", "visibilityTimeoutSeconds": 10 }),
    );
    assert_eq!(r.status, 201);
    assert_eq!(
        send(Method::Post, "/queues/q/messages", json!({ "body": "hi" })).status,
        201
    );
    let first = testing::json_body(&send(Method::Post, "/queues/q/receive", json!({})));
    let old = first["messages"][0]["receiptHandle"].clone();
    let none = testing::json_body(&send(Method::Post, "/queues/q/receive", json!({})));
    assert_eq!(none["messages"], json!([]));
    testing::set_now(1_010_000);
    let second = testing::json_body(&send(Method::Post, "/queues/q/receive", json!({})));
    assert_eq!(second["messages"][0]["receives"], 2);
    let r = send(
        Method::Post,
        "/queues/q/ack",
        json!({ "receiptHandle": old }),
    );
    assert_eq!(r.status, 409);
    let new = second["messages"][0]["receiptHandle"].clone();
    assert_eq!(
        send(
            Method::Post,
            "/queues/q/ack",
            json!({ "receiptHandle": new })
        )
        .status,
        204
    );
    let stats = testing::json_body(&send(Method::Get, "/queues/q/stats", json!({})));
    assert_eq!(stats["total"], 0);
}
