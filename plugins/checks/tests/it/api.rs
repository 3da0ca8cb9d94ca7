//! The management API: description, validation and plan limits, create,
//! read, list, change and delete with the job kept in step, the webhook
//! secret shown once, and tenant isolation.

use plateau_plugin_checks::ChecksPlugin;
use plateau_sdk::{Access, Caller, Method, testing};
use serde_json::{Value, json};

use crate::host::{
    HOOK, ORG, OTHER_ORG, START, TARGET, caller, create, get, job, json, send, send_as,
};

fn url_check(name: &str) -> Value {
    json!({"name": name, "kind": "url", "url": TARGET, "intervalSeconds": 60})
}

#[test]
fn description_declares_scopes_capabilities_and_routes() {
    let d = plateau_sdk::describe::<ChecksPlugin>();
    assert_eq!(d.problems(), Vec::<String>::new());
    assert_eq!(
        (d.name.as_str(), d.prefixes.as_slice()),
        ("checks", &["/checks".to_owned()][..])
    );
    let scopes: Vec<&str> = d.scopes.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(scopes, ["checks:read", "checks:write"]);
    for needed in ["http", "scheduler", "secrets", "kv", "events"] {
        assert!(d.capabilities.iter().any(|c| c == needed), "{needed}");
    }
    let routes: Vec<String> = d
        .routes
        .iter()
        .map(|r| {
            let access = match &r.access {
                Access::Scope(s) => s.clone(),
                Access::Public => "public".to_owned(),
                Access::Authenticated => "token".to_owned(),
            };
            format!("{} {} {access}", r.method, r.path)
        })
        .collect();
    assert_eq!(
        routes,
        [
            "GET /checks checks:read",
            "POST /checks checks:write",
            "GET /checks/{id} checks:read",
            "PATCH /checks/{id} checks:write",
            "PUT /checks/{id} checks:write",
            "DELETE /checks/{id} checks:write",
            "GET /checks/{id}/results checks:read",
            "GET /checks/{id}/alerts checks:read",
            "POST /checks/{id}/run checks:write",
            "GET /checks/ping/{token} public",
            "POST /checks/ping/{token} public",
        ]
    );
}

#[test]
fn validation_names_every_field_and_the_plan_minimum() {
    testing::reset();
    let res = send(
        Method::Post,
        "/checks",
        Some(&json!({"kind": "url", "url": "nope", "retries": -1})),
    );
    assert_eq!(res.status, 400);
    let problem = res.problem().unwrap();
    assert_eq!(problem.code, "validation_failed");
    let fields: Vec<&str> = problem.errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["name", "retries", "url"]);

    // Free plans: 5 minutes at least; paid plans: 1 minute.
    let free = caller(ORG, "free");
    let res = send_as(
        free.clone(),
        Method::Post,
        "/checks",
        Some(&url_check("fast")),
    );
    assert_eq!(res.status, 400);
    let problem = res.problem().unwrap();
    assert_eq!(problem.errors[0].field, "intervalSeconds");
    assert_eq!(
        problem.detail,
        "intervalSeconds must be at least 300 seconds (5 minutes) on the free plan; paid plans allow 60 seconds (1 minute)"
    );
    let mut slow = url_check("slow");
    slow["intervalSeconds"] = json!(300);
    assert_eq!(
        send_as(free.clone(), Method::Post, "/checks", Some(&slow)).status,
        201
    );
    let res = send(
        Method::Post,
        "/checks",
        Some(&json!({"name": "x", "kind": "url", "url": TARGET, "intervalSeconds": 59})),
    );
    assert_eq!(
        res.problem().unwrap().detail,
        "intervalSeconds must be at least 60 seconds (1 minute)"
    );
    assert_eq!(
        send(Method::Post, "/checks", Some(&url_check("fast"))).status,
        201
    );

    // A free caller cannot PATCH a check below its minimum either.
    let id = json(&send_as(free.clone(), Method::Post, "/checks", Some(&slow)))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let res = send_as(
        free,
        Method::Patch,
        &format!("/checks/{id}"),
        Some(&json!({"intervalSeconds": 60})),
    );
    assert_eq!(
        (res.status, res.problem().unwrap().errors[0].field.as_str()),
        (400, "intervalSeconds")
    );

    // Bodies that are not JSON objects.
    let res = send(Method::Post, "/checks", Some(&json!([1])));
    assert_eq!(res.problem().unwrap().errors[0].field, "body");
    let res = testing::handle::<ChecksPlugin>(
        &plateau_sdk::Request::new(Method::Post, "/checks")
            .with_caller(caller(ORG, "pro"))
            .with_header("content-type", "application/json")
            .with_body("{"),
    );
    assert_eq!(res.problem().unwrap().code, "invalid_json");
    // Scopes: the router refuses a reader's write.
    let reader = Caller {
        plan: Some("pro".into()),
        ..Caller::new(ORG, &["checks:read"])
    };
    let res = send_as(reader, Method::Post, "/checks", Some(&url_check("x")));
    assert_eq!(
        (res.status, res.problem().unwrap().scope.as_deref()),
        (403, Some("checks:write"))
    );
}

#[test]
fn create_read_list_change_and_delete_keep_the_job_in_step() {
    testing::reset();
    testing::set_now(START);
    let check = create(json!({
        "name": "Home", "kind": "url", "url": TARGET, "intervalSeconds": 120, "retries": 2,
        "expectedStatus": ["200-299", 304], "degradedAfterMs": 800, "timeoutMs": 2000,
        "headers": {"Accept": "application/json"},
    }));
    let id = check["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("chk_"), "{id}");
    assert_eq!(check["expectedStatus"], json!(["200-299", "304"]));
    assert_eq!(check["headers"], json!({"accept": "application/json"}));
    assert_eq!(
        (check["status"].clone(), check["runs"].clone()),
        (Value::Null, json!(0))
    );
    assert_eq!(check["createdAt"], "2023-11-14T22:13:20.000Z");
    // The job runs the check at once, then every interval, with the id.
    let j = job(&format!("check:{id}")).expect("scheduled");
    assert_eq!(
        (j.at, j.every_ms, j.payload.as_str()),
        (START, Some(120_000), id.as_str())
    );
    assert_eq!(get(&format!("/checks/{id}")), check);

    // Ids sort by creation time; in the same millisecond their order is
    // random, so the second check is made a millisecond later.
    testing::set_now(START + 1);
    let second = create(url_check("Second"));
    let page = get("/checks?limit=1");
    assert_eq!(
        (page["total"].clone(), page["items"][0]["id"].clone()),
        (json!(2), json!(id))
    );
    let cursor = page["nextCursor"].as_str().unwrap();
    let page = get(&format!(
        "/checks?limit=1&cursor={}",
        plateau_sdk::percent_encode(cursor)
    ));
    assert_eq!(page["items"][0]["id"], second["id"]);
    assert_eq!(page["nextCursor"], Value::Null);
    assert_eq!(get("/checks")["items"].as_array().unwrap().len(), 2);

    // Renaming leaves the schedule alone; a new interval replaces it.
    testing::set_now(START + 5_000);
    let res = send(
        Method::Patch,
        &format!("/checks/{id}"),
        Some(&json!({"name": "Homepage"})),
    );
    assert_eq!(res.status, 200);
    assert_eq!(json(&res)["retries"], 2);
    assert_eq!(job(&format!("check:{id}")).unwrap().at, START);
    let res = send(
        Method::Patch,
        &format!("/checks/{id}"),
        Some(&json!({"intervalSeconds": 600, "degradedAfterMs": null})),
    );
    let changed = json(&res);
    assert_eq!(
        (
            changed["intervalSeconds"].clone(),
            changed.get("degradedAfterMs")
        ),
        (json!(600), None)
    );
    let j = job(&format!("check:{id}")).unwrap();
    assert_eq!((j.at, j.every_ms), (START + 5_000, Some(600_000)));
    // PUT replaces: what is left out takes its default.
    let res = send(
        Method::Put,
        &format!("/checks/{id}"),
        Some(&json!({"name": "Bare", "kind": "url", "url": TARGET})),
    );
    let replaced = json(&res);
    assert_eq!(
        (
            replaced["retries"].clone(),
            replaced["intervalSeconds"].clone()
        ),
        (json!(0), json!(300))
    );
    assert_eq!(replaced.get("headers"), None);
    // The kind is fixed.
    let res = send(
        Method::Patch,
        &format!("/checks/{id}"),
        Some(&json!({"kind": "heartbeat"})),
    );
    assert_eq!(res.problem().unwrap().errors[0].field, "kind");
    // Pausing cancels the job; resuming schedules it again.
    send(
        Method::Patch,
        &format!("/checks/{id}"),
        Some(&json!({"enabled": false})),
    );
    assert!(job(&format!("check:{id}")).is_none());
    send(
        Method::Patch,
        &format!("/checks/{id}"),
        Some(&json!({"enabled": true})),
    );
    assert!(job(&format!("check:{id}")).is_some());

    let types: Vec<String> = testing::events()
        .into_iter()
        .filter(|e| e.audit)
        .map(|e| e.event_type)
        .collect();
    assert_eq!(
        types
            .iter()
            .filter(|t| *t == "checks.check.created")
            .count(),
        2
    );
    assert!(types.iter().any(|t| t == "checks.check.updated"));

    assert_eq!(
        send(Method::Delete, &format!("/checks/{id}"), None).status,
        204
    );
    assert!(job(&format!("check:{id}")).is_none());
    assert_eq!(
        send(Method::Get, &format!("/checks/{id}"), None).status,
        404
    );
    assert_eq!(
        send(Method::Delete, &format!("/checks/{id}"), None).status,
        404
    );
    assert_eq!(send(Method::Get, "/checks/not-an-id", None).status, 404);
    assert_eq!(get("/checks")["total"], 1);
}

#[test]
fn the_webhook_secret_is_shown_once_and_rotates_on_request() {
    testing::reset();
    let mut body = url_check("Hooked");
    body["alerts"] = json!({"emails": ["ops@example.com"], "webhookUrl": HOOK});
    let check = create(body);
    let id = check["id"].as_str().unwrap();
    let secret = check["alerts"]["webhookSecret"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(secret.starts_with("whsec_"), "{secret}");
    let read = get(&format!("/checks/{id}"));
    assert_eq!(
        read["alerts"],
        json!({"emails": ["ops@example.com"], "webhookUrl": HOOK})
    );
    assert!(!get("/checks").to_string().contains(&secret));
    // Nothing about the secret in events either.
    assert!(testing::events().iter().all(|e| !e.data.contains(&secret)));
    // A change that keeps the webhook keeps the secret, unseen.
    let res = json(&send(
        Method::Patch,
        &format!("/checks/{id}"),
        Some(&json!({"name": "Renamed"})),
    ));
    assert_eq!(res["alerts"].get("webhookSecret"), None);
    let rotated = json(&send(
        Method::Patch,
        &format!("/checks/{id}"),
        Some(&json!({"alerts": {"rotateWebhookSecret": true}})),
    ));
    let new_secret = rotated["alerts"]["webhookSecret"].as_str().unwrap();
    assert!(new_secret.starts_with("whsec_") && new_secret != secret);
    assert_eq!(rotated["alerts"]["emails"], json!(["ops@example.com"]));
}

#[test]
fn other_organisations_see_nothing() {
    testing::reset();
    let check = create(url_check("Mine"));
    let id = check["id"].as_str().unwrap();
    let other = caller(OTHER_ORG, "pro");
    for (method, path) in [
        (Method::Get, format!("/checks/{id}")),
        (Method::Patch, format!("/checks/{id}")),
        (Method::Delete, format!("/checks/{id}")),
        (Method::Get, format!("/checks/{id}/results")),
        (Method::Post, format!("/checks/{id}/run")),
    ] {
        let res = send_as(other.clone(), method, &path, Some(&json!({"name": "x"})));
        assert_eq!(res.status, 404, "{method} {path}");
    }
    let listed = json(&send_as(other, Method::Get, "/checks", None));
    assert_eq!(listed["total"], 0);
    assert_eq!(get(&format!("/checks/{id}"))["name"], "Mine");
}
