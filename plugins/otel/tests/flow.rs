//! The otel plugin through the SDK's in-memory host: a token, OTLP/JSON
//! and protobuf exports, the queries, partial success, isolation between
//! organisations and projects, and retention by plan.

use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use plateau_plugin_otel::OtelPlugin;
use plateau_sdk::contract::Caller;
use plateau_sdk::jobs::Job;
use plateau_sdk::serde_json::{Value, json};
use plateau_sdk::{Method, Request, Response, testing};
use prost::Message;

const DAY: u64 = 86_400_000;
const NOW: u64 = 20_000 * DAY + 3_600_000;
const TRACE: &str = "5b8efff798038103d269b633813fc60c";

fn caller(org: &str, project: &str, plan: &str) -> Caller {
    let mut c = Caller::new(org, &["otel:read", "otel:write"]);
    c.project_id = Some(project.to_owned());
    c.plan = Some(plan.to_owned());
    c
}

fn call(req: Request) -> Response {
    testing::handle::<OtelPlugin>(&req)
}

fn get(c: &Caller, target: &str) -> Value {
    let res = call(Request::new(Method::Get, target).with_caller(c.clone()));
    assert_eq!(
        res.status,
        200,
        "{target}: {}",
        String::from_utf8_lossy(&res.body)
    );
    testing::json_body(&res)
}

fn token(c: &Caller) -> String {
    let res = call(Request::new(Method::Post, "/otel/tokens").with_caller(c.clone()));
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    testing::json_body(&res)["token"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn export(signal: &str, token: &str, body: &Value) -> Response {
    call(
        Request::new(Method::Post, &format!("/otel/ingest/v1/{signal}"))
            .with_header("content-type", "application/json")
            .with_header("plateau-otel-token", token)
            .with_body(plateau_sdk::serde_json::to_vec(body).unwrap()),
    )
}

fn span(id: &str, parent: &str, name: &str, start_ms: u64, ms: u64) -> Value {
    json!({
        "traceId": TRACE, "spanId": id, "parentSpanId": parent, "name": name, "kind": 2,
        "startTimeUnixNano": (start_ms * 1_000_000).to_string(),
        "endTimeUnixNano": ((start_ms + ms) * 1_000_000).to_string(),
        "attributes": [{"key": "http.route", "value": {"stringValue": name}}],
    })
}

fn spans(list: Vec<Value>) -> Value {
    json!({"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "shop"}}]},
        "scopeSpans": [{"scope": {"name": "test"}, "spans": list}],
    }]})
}

#[test]
fn spans_logs_and_metrics_come_back_and_stay_in_their_organisation() {
    testing::reset();
    testing::set_now(NOW);
    let alice = caller("org_a", "prj_a", "free");
    let t = token(&alice);
    let res = export(
        "traces",
        &t,
        &spans(vec![
            span("eee19b7ec3c1b174", "", "GET /cart", NOW - 50, 40),
            span(
                "aaa19b7ec3c1b174",
                "eee19b7ec3c1b174",
                "SELECT",
                NOW - 45,
                30,
            ),
            json!({"traceId": "00", "spanId": "01", "name": "bad"}),
        ]),
    );
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    let answer = testing::json_body(&res);
    assert_eq!(answer["partialSuccess"]["rejectedSpans"], 1, "{answer}");

    let logs = json!({"resourceLogs": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "shop"}}]},
        "scopeLogs": [{"logRecords": [
            {"timeUnixNano": ((NOW - 44) * 1_000_000).to_string(), "severityNumber": 17,
             "severityText": "ERROR", "body": {"stringValue": "card declined"},
             "traceId": TRACE, "spanId": "aaa19b7ec3c1b174"},
            {"timeUnixNano": ((NOW - 40) * 1_000_000).to_string(), "severityNumber": 9,
             "body": {"stringValue": "unrelated"}},
        ]}],
    }]});
    assert_eq!(export("logs", &t, &logs).status, 200);
    let metrics = json!({"resourceMetrics": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "shop"}}]},
        "scopeMetrics": [{"metrics": [{"name": "orders", "unit": "1", "sum": {
            "aggregationTemporality": 2, "isMonotonic": true,
            "dataPoints": [{"asInt": "3", "timeUnixNano": (NOW * 1_000_000).to_string(),
                            "attributes": [{"key": "region", "value": {"stringValue": "eu"}}]}],
        }}]}],
    }]});
    assert_eq!(export("metrics", &t, &metrics).status, 200);

    let list = get(&alice, "/otel/traces?service=shop&minDurationMs=35");
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "{list}");
    assert_eq!(list["items"][0]["rootName"], "GET /cart");
    assert_eq!(list["items"][0]["spanCount"], 2);
    let none = get(&alice, "/otel/traces?maxDurationMs=10");
    assert_eq!(none["items"], json!([]));
    let by_attr = get(&alice, "/otel/traces?attr.http.route=SELECT&name=SELECT");
    assert_eq!(by_attr["items"][0]["traceId"], TRACE);
    let tree = get(&alice, &format!("/otel/traces/{TRACE}"));
    assert_eq!(tree["spans"][0]["name"], "GET /cart");
    assert_eq!(tree["spans"][0]["children"][0]["name"], "SELECT");
    let correlated = get(&alice, &format!("/otel/logs?traceId={TRACE}"));
    assert_eq!(
        correlated["items"].as_array().unwrap().len(),
        1,
        "{correlated}"
    );
    assert_eq!(correlated["items"][0]["body"], "card declined");
    assert_eq!(
        get(&alice, "/otel/logs")["items"].as_array().unwrap().len(),
        2
    );
    let series = get(&alice, "/otel/metrics?name=orders&attr.region=eu");
    assert_eq!(series["items"][0]["points"][0]["value"], 3, "{series}");
    assert_eq!(
        get(&alice, "/otel/metrics?attr.region=us")["items"],
        json!([])
    );

    // Another organisation, and another project of the same one, see nothing.
    let bob = caller("org_b", "prj_b", "free");
    assert_eq!(get(&bob, "/otel/traces")["items"], json!([]));
    assert_eq!(get(&bob, "/otel/logs")["items"], json!([]));
    let res = call(Request::new(Method::Get, &format!("/otel/traces/{TRACE}")).with_caller(bob));
    assert_eq!(res.status, 404);
    let other_project = caller("org_a", "prj_other", "free");
    assert_eq!(get(&other_project, "/otel/metrics")["items"], json!([]));
}

#[test]
fn protobuf_is_answered_in_protobuf_and_bad_tokens_and_types_are_refused() {
    testing::reset();
    testing::set_now(NOW);
    let alice = caller("org_a", "prj_a", "pro");
    let t = token(&alice);
    let message: ExportTraceServiceRequest =
        plateau_sdk::serde_json::from_value(spans(vec![span("eee19b7ec3c1b174", "", "x", NOW, 1)]))
            .unwrap();
    let post = |token: &str, content_type: &str, body: Vec<u8>| {
        call(
            Request::new(Method::Post, "/otel/ingest/v1/traces")
                .with_header("content-type", content_type)
                .with_header("plateau-otel-token", token)
                .with_body(body),
        )
    };
    let res = post(&t, "application/x-protobuf", message.encode_to_vec());
    assert_eq!(res.status, 200);
    assert_eq!(res.header("content-type"), Some("application/x-protobuf"));
    let answer = ExportTraceServiceResponse::decode(res.body.as_slice()).unwrap();
    assert_eq!(answer.partial_success, None);
    assert_eq!(
        post("plto_wrong", "application/x-protobuf", vec![]).status,
        401
    );
    assert_eq!(post(&t, "text/plain", vec![]).status, 415);
    assert_eq!(
        post(&t, "application/x-protobuf", vec![0xff, 0xff]).status,
        400
    );

    // A revoked token stops working at once.
    let id = get(&alice, "/otel/tokens")["items"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let res = call(Request::new(Method::Delete, &format!("/otel/tokens/{id}")).with_caller(alice));
    assert_eq!(res.status, 204);
    assert_eq!(
        post(&t, "application/x-protobuf", message.encode_to_vec()).status,
        401
    );
}

#[test]
fn retention_deletes_the_days_past_the_plan() {
    testing::reset();
    testing::set_now(NOW);
    let alice = caller("org_a", "prj_a", "starter");
    let t = token(&alice);
    assert_eq!(
        export(
            "traces",
            &t,
            &spans(vec![span("eee19b7ec3c1b174", "", "x", NOW, 1)])
        )
        .status,
        200
    );
    let job = Job {
        key: "retention".to_owned(),
        organization_id: Some("org_a".to_owned()),
        payload: String::new(),
        due: NOW,
        attempt: 1,
    };
    // Seven days later the starter plan still keeps it.
    testing::set_now(NOW + 7 * DAY);
    testing::run_job::<OtelPlugin>(&job).unwrap();
    assert_eq!(
        get(&alice, "/otel/traces")["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // The day after, it is gone, keys and all.
    testing::set_now(NOW + 8 * DAY);
    testing::run_job::<OtelPlugin>(&job).unwrap();
    assert_eq!(get(&alice, "/otel/traces")["items"], json!([]));
    let left = plateau_sdk::Bucket::organization("org_a")
        .unwrap()
        .list_all("s/")
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
}
