//! Native tests of the config plugin on the SDK's in-memory host: keys
//! and references, a refused cycle, secrets hidden from lists and read
//! only with `config:secrets` (audited), rollback, and the sync jobs a
//! change schedules.

use plateau_plugin_config::ConfigPlugin;
use plateau_sdk::{Caller, Method, Request, Response, testing};
use serde_json::{Value, json};

const ENV: &str = "/config/projects/shop/environments/production";

fn send_as(scopes: &[&str], method: Method, path: &str, body: Value) -> Response {
    let req = Request::new(method, path)
        .with_caller(Caller::new("org_1", scopes))
        .with_json(&body);
    testing::handle::<ConfigPlugin>(&req)
}

fn send(method: Method, path: &str, body: Value) -> Response {
    send_as(&["*"], method, path, body)
}

fn body(r: &Response) -> Value {
    testing::json_body(r)
}

#[test]
fn every_route_declares_its_answers() {
    let answer = testing::handle::<ConfigPlugin>(&Request::new(
        Method::Get,
        plateau_sdk::contract::api_schema::PATH,
    ));
    assert_eq!(answer.status, 200);
    let schema: plateau_sdk::contract::api_schema::ApiSchema = answer.json_body().unwrap();
    for route in &plateau_sdk::describe::<ConfigPlugin>().routes {
        let declared = schema
            .route(&route.method, &route.path)
            .unwrap_or_else(|| panic!("{} {} declares nothing", route.method, route.path));
        assert!(
            !declared.responses.is_empty(),
            "{} {}",
            route.method,
            route.path
        );
    }
}

#[test]
fn keys_references_secrets_and_versions() {
    let r = send(Method::Post, "/config/projects", json!({ "name": "shop" }));
    assert_eq!(r.status, 201, "{}", body(&r));
    let r = send(
        Method::Patch,
        &format!("{ENV}/keys"),
        json!({ "set": [
            { "key": "HOST", "value": "db" },
            { "key": "PASSWORD", "value": "pw", "secret": true },
            { "key": "URL", "value": "pg://u:${PASSWORD}@${HOST}" },
        ] }),
    );
    assert_eq!(r.status, 200, "{}", body(&r));
    assert_eq!(body(&r)["version"], 1);

    let r = send(
        Method::Put,
        &format!("{ENV}/keys/HOST"),
        json!({ "value": "${URL}" }),
    );
    assert_eq!(r.status, 400, "{}", body(&r));
    assert_eq!(body(&r)["errors"][0]["field"], "HOST");

    let listed = body(&send(Method::Get, &format!("{ENV}/keys"), json!(null)));
    assert!(!listed.to_string().contains("\"pw\""), "{listed}");
    assert!(!listed.to_string().contains("u:pw"), "{listed}");

    let r = send_as(
        &["config:read"],
        Method::Get,
        &format!("{ENV}/keys/URL"),
        json!(null),
    );
    assert_eq!(r.status, 403, "{}", body(&r));
    let before = testing::events().len();
    let r = send_as(
        &["config:read", "config:secrets"],
        Method::Get,
        &format!("{ENV}/keys/URL"),
        json!(null),
    );
    assert_eq!(r.status, 200, "{}", body(&r));
    assert_eq!(body(&r)["computed"], "pg://u:pw@db");
    let events = testing::events();
    let read = &events[before];
    assert_eq!(read.event_type, "config.secret.read");
    assert!(read.audit);

    let r = send(
        Method::Put,
        &format!("{ENV}/keys/HOST"),
        json!({ "value": "db2" }),
    );
    assert_eq!(body(&r)["version"], 2);
    let r = send(
        Method::Post,
        &format!("{ENV}/rollback"),
        json!({ "version": 1 }),
    );
    assert_eq!(body(&r)["version"], 3, "{}", body(&r));
    let r = send(Method::Get, &format!("{ENV}/keys/HOST"), json!(null));
    assert_eq!(body(&r)["computed"], "db");
}
