//! The management API: create, read, list, change, delete, rotate, and the
//! validation problems.

use plateau_sdk::{Caller, Method, testing};
use serde_json::{Value, json};

use crate::host::{OTHER_ORG, create, events, get, json, ping, send, send_as};

fn setup() {
    testing::reset();
    testing::set_now(crate::ms("2026-01-10T12:00:00Z"));
}

#[test]
fn create_answers_the_ping_url_and_the_webhook_secret_once() {
    setup();
    let created = create(json!({
        "name": "nightly backup",
        "periodSeconds": 3600,
        "graceSeconds": 300,
        "alertEmails": ["ops@example.com"],
        "webhookUrl": "https://hooks.example.com/hb",
    }));
    let id = created["id"].as_str().unwrap();
    assert!(id.starts_with("hb_") && id.len() == 29, "{id}");
    assert_eq!(created["state"], "new");
    assert_eq!(created["paused"], false);
    let ping_url = created["pingUrl"].as_str().unwrap();
    let token = ping_url
        .strip_prefix("http://plateau.test/api/v1/heartbeats/ping/")
        .unwrap();
    assert_eq!(token.len(), 32, "192 bits in base64url: {token}");
    let secret = created["webhookSecret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_"), "{secret}");

    // Never again: not in a read, a list or an event.
    let read = send(Method::Get, &format!("/heartbeats/{id}"), None);
    let text = String::from_utf8_lossy(&read.body).into_owned();
    assert!(!text.contains(&secret[6..]), "{text}");
    let masked = json(&read)["webhookSecret"].as_str().unwrap().to_owned();
    assert_eq!(masked, format!("whsec_…{}", &secret[secret.len() - 4..]));
    assert_eq!(json(&read)["pingUrl"], ping_url);
    let listed = send(Method::Get, "/heartbeats", None);
    assert!(!String::from_utf8_lossy(&listed.body).contains(&secret[6..]));
    for event in testing::events() {
        assert!(!event.data.contains(&secret[6..]) && !event.data.contains(token));
    }
    let created_events = events("heartbeats.heartbeat.created");
    assert_eq!(created_events.len(), 1);
    assert_eq!(created_events[0].0.as_deref(), Some(id));

    // Without a webhook there is no secret.
    let plain = create(json!({"name": "no hook"}));
    assert!(plain.get("webhookSecret").unwrap().is_null());
    assert_eq!(plain["periodSeconds"], 86_400, "a day by default");
    assert_eq!(plain["graceSeconds"], 3_600, "an hour by default");
}

#[test]
fn the_ping_url_base_comes_from_the_setting_or_the_forwarded_headers() {
    setup();
    let req = |headers: &[(&str, &str)]| {
        let mut req = plateau_sdk::Request::new(Method::Post, "/heartbeats")
            .with_caller(crate::host::caller())
            .with_json(&json!({"name": "x"}));
        for (name, value) in headers {
            req = req.with_header(name, *value);
        }
        let res = testing::handle::<plateau_plugin_heartbeats::HeartbeatsPlugin>(&req);
        assert_eq!(res.status, 201);
        json(&res)["pingUrl"].as_str().unwrap().to_owned()
    };
    let url = req(&[
        ("host", "10.0.0.5:8080"),
        ("x-forwarded-proto", "https"),
        ("x-forwarded-host", "cloud.example.com, proxy.internal"),
    ]);
    assert!(
        url.starts_with("https://cloud.example.com/api/v1/heartbeats/ping/"),
        "{url}"
    );
    let url = req(&[("host", "127.0.0.1:8080")]);
    assert!(
        url.starts_with("http://127.0.0.1:8080/api/v1/heartbeats/ping/"),
        "{url}"
    );
    testing::set_config("publicBaseUrl", "https://hb.example.com/");
    let url = req(&[("host", "ignored")]);
    assert!(
        url.starts_with("https://hb.example.com/api/v1/heartbeats/ping/"),
        "{url}"
    );
    testing::set_config("publicBaseUrl", "https://hb.example.com/api/v1");
    let url = req(&[]);
    assert!(
        url.starts_with("https://hb.example.com/api/v1/heartbeats/ping/"),
        "{url}"
    );
}

/// `(body, invalid fields)`.
fn invalid_bodies() -> Vec<(Value, Vec<&'static str>)> {
    vec![
        (json!({}), vec!["name"]),
        (json!({"name": "  "}), vec!["name"]),
        (json!({"name": "x".repeat(101)}), vec!["name"]),
        (
            json!({"name": "x", "periodSeconds": 10}),
            vec!["periodSeconds"],
        ),
        (
            json!({"name": "x", "graceSeconds": 5}),
            vec!["graceSeconds"],
        ),
        (
            json!({"name": "x", "periodSeconds": 60, "schedule": "* * * * *"}),
            vec!["schedule"],
        ),
        (
            json!({"name": "x", "periodSeconds": 60, "timezone": "UTC"}),
            vec!["timezone"],
        ),
        (
            json!({"name": "x", "timezone": "Europe/Paris"}),
            vec!["timezone"],
        ),
        (
            json!({"name": "x", "schedule": "0 3 * * * *"}),
            vec!["schedule"],
        ),
        (
            json!({"name": "x", "schedule": "0 0 30 2 *"}),
            vec!["schedule"],
        ),
        (
            json!({"name": "x", "schedule": "0 3 * * *", "timezone": "Europe/Pariss"}),
            vec!["timezone"],
        ),
        (
            json!({"name": "x", "alertEmails": ["not-an-address"]}),
            vec!["alertEmails[0]"],
        ),
        (
            json!({"name": "x", "alertEmails": ["a@example.com", "A@example.com"]}),
            vec!["alertEmails[1]"],
        ),
        (
            json!({"name": "x", "alertEmails": ["Ops <ops@example.com>"]}),
            vec!["alertEmails[0]"],
        ),
        (
            json!({"name": "x", "alertEmails": ["ops@example.com\r\nBcc: x@y.z"]}),
            vec!["alertEmails[0]"],
        ),
        (
            json!({"name": "x", "webhookUrl": "ftp://example.com/x"}),
            vec!["webhookUrl"],
        ),
        (
            json!({"name": "x", "webhookUrl": "https://"}),
            vec!["webhookUrl"],
        ),
        (
            json!({"name": "", "periodSeconds": 1, "graceSeconds": 1}),
            vec!["name", "periodSeconds", "graceSeconds"],
        ),
    ]
}

#[test]
fn invalid_fields_are_named_in_one_problem() {
    setup();
    for (body, fields) in invalid_bodies() {
        let res = send(Method::Post, "/heartbeats", Some(&body));
        assert_eq!(res.status, 400, "{body}");
        let problem = res.problem().unwrap();
        assert_eq!(problem.code, "validation_failed", "{body}");
        let named: Vec<&str> = problem.errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(named, fields, "{body}: {:?}", problem.errors);
    }
    // Unknown fields and wrong types are refused before validation, as
    // the core refuses them: validation_failed naming the field.
    let res = send(
        Method::Post,
        "/heartbeats",
        Some(&json!({"name": "x", "period": 60})),
    );
    assert_eq!(
        (res.status, res.problem().unwrap().code.as_str()),
        (400, "validation_failed")
    );
    let res = send(
        Method::Post,
        "/heartbeats",
        Some(&json!({"name": "x", "periodSeconds": -1})),
    );
    let problem = res.problem().unwrap();
    assert_eq!(
        (res.status, problem.code.as_str()),
        (400, "validation_failed")
    );
    assert_eq!(
        problem.errors[0].field, "periodSeconds",
        "{:?}",
        problem.errors
    );
    assert!(send(Method::Get, "/heartbeats", None).status == 200);
    assert_eq!(
        json(&send(Method::Get, "/heartbeats", None))["total"],
        0,
        "nothing was stored"
    );
}

#[test]
fn patch_changes_the_fields_sent() {
    setup();
    let created = create(json!({"name": "a", "periodSeconds": 600}));
    let id = created["id"].as_str().unwrap();
    let path = format!("/heartbeats/{id}");
    let patch = |body: Value| send(Method::Patch, &path, Some(&body));

    let res = patch(json!({"schedule": "0 3 * * *", "timezone": "Europe/Paris"}));
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    let body = json(&res);
    assert_eq!(
        (body["schedule"].clone(), body["timezone"].clone()),
        (json!("0 3 * * *"), json!("Europe/Paris"))
    );
    assert!(body["periodSeconds"].is_null());
    // The time zone alone keeps the expression.
    let body = json(&patch(json!({"timezone": "America/New_York"})));
    assert_eq!(body["schedule"], "0 3 * * *");
    assert_eq!(body["timezone"], "America/New_York");
    // Back to a period.
    let body = json(&patch(json!({"periodSeconds": 120, "name": "b"})));
    assert_eq!(
        (body["periodSeconds"].clone(), body["name"].clone()),
        (json!(120), json!("b"))
    );
    assert!(body["schedule"].is_null() && body["timezone"].is_null());
    let res = patch(json!({"timezone": "UTC"}));
    assert_eq!(res.problem().unwrap().errors[0].field, "timezone");
    assert_eq!(patch(json!({"graceSeconds": 1})).status, 400);

    // Adding a webhook makes a secret, answered once; removing it drops it.
    let body = json(&patch(json!({"webhookUrl": "https://hooks.example.com/a"})));
    let first = body["webhookSecret"].as_str().unwrap().to_owned();
    assert!(first.starts_with("whsec_"));
    let body = json(&patch(json!({"webhookUrl": "https://hooks.example.com/b"})));
    assert_eq!(
        body["webhookSecret"],
        format!("whsec_…{}", &first[first.len() - 4..]),
        "kept, masked"
    );
    let rotated = send(Method::Post, &format!("{path}/webhook-secret"), None);
    assert_eq!(rotated.status, 200);
    let second = json(&rotated)["webhookSecret"].as_str().unwrap().to_owned();
    assert!(second.starts_with("whsec_") && second != first);
    assert_eq!(events("heartbeats.heartbeat.secret_rotated").len(), 1);
    let body = json(&patch(json!({"webhookUrl": null})));
    assert!(body["webhookUrl"].is_null() && body["webhookSecret"].is_null());
    let res = send(Method::Post, &format!("{path}/webhook-secret"), None);
    assert_eq!(
        (res.status, res.problem().unwrap().code.as_str()),
        (409, "conflict")
    );

    // Pause and unpause.
    let body = json(&patch(json!({"paused": true})));
    assert_eq!(
        (body["state"].clone(), body["paused"].clone()),
        (json!("paused"), json!(true))
    );
    let body = json(&patch(json!({"paused": false})));
    assert_eq!(body["state"], "new", "unpausing waits for the next ping");
    assert_eq!(events("heartbeats.heartbeat.updated").len(), 8);
}

#[test]
fn delete_removes_the_heartbeat_and_its_ping_url() {
    setup();
    let created = create(json!({"name": "gone"}));
    let id = created["id"].as_str().unwrap();
    let url = created["pingUrl"].as_str().unwrap();
    assert_eq!(ping(Method::Post, url).status, 200);
    assert!(!testing::jobs().is_empty());
    assert_eq!(
        send(Method::Delete, &format!("/heartbeats/{id}"), None).status,
        204
    );
    assert_eq!(
        send(Method::Get, &format!("/heartbeats/{id}"), None).status,
        404
    );
    assert_eq!(
        send(Method::Delete, &format!("/heartbeats/{id}"), None).status,
        404
    );
    assert_eq!(ping(Method::Post, url).status, 404);
    assert!(testing::jobs().is_empty(), "the deadline job is cancelled");
    let deleted = events("heartbeats.heartbeat.deleted");
    assert_eq!(deleted.len(), 1);
    assert_eq!(
        testing::events().iter().filter(|e| e.audit).count(),
        2,
        "created and deleted are audited"
    );
}

#[test]
fn other_organisations_see_nothing() {
    setup();
    let created = create(json!({"name": "mine"}));
    let id = created["id"].as_str().unwrap();
    let other = Caller::new(OTHER_ORG, &["heartbeats:read", "heartbeats:write"]);
    for (method, path) in [
        (Method::Get, format!("/heartbeats/{id}")),
        (Method::Patch, format!("/heartbeats/{id}")),
        (Method::Delete, format!("/heartbeats/{id}")),
        (Method::Get, format!("/heartbeats/{id}/pings")),
        (Method::Post, format!("/heartbeats/{id}/webhook-secret")),
    ] {
        let res = send_as(
            other.clone(),
            method,
            &path,
            Some(&json!({"name": "theirs"})),
        );
        assert_eq!(res.status, 404, "{method} {path}");
    }
    let listed = json(&send_as(other, Method::Get, "/heartbeats", None));
    assert_eq!(listed["total"], 0);
    assert_eq!(get(id)["name"], "mine");
}

#[test]
fn scopes_are_checked() {
    setup();
    let reader = Caller::new(crate::host::ORG, &["heartbeats:read"]);
    let res = send_as(
        reader.clone(),
        Method::Post,
        "/heartbeats",
        Some(&json!({"name": "x"})),
    );
    assert_eq!(
        (res.status, res.problem().unwrap().scope.as_deref()),
        (403, Some("heartbeats:write"))
    );
    assert_eq!(
        send_as(reader, Method::Get, "/heartbeats", None).status,
        200
    );
    let res = send_as(Caller::anonymous(), Method::Get, "/heartbeats", None);
    assert_eq!(res.status, 401);
}

#[test]
fn lists_paginate_like_core_lists() {
    setup();
    let ids: Vec<String> = (0..5)
        .map(|i| {
            testing::set_now(crate::ms("2026-01-10T12:00:00Z") + i * 1000);
            create(json!({"name": format!("hb {i}")}))["id"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let all = json(&send(Method::Get, "/heartbeats", None));
    assert_eq!(all["total"], 5);
    assert!(all["nextCursor"].is_null());
    let listed: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["id"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ids, "oldest first");
    let page = json(&send(Method::Get, "/heartbeats?limit=2", None));
    assert_eq!(page["items"].as_array().unwrap().len(), 2);
    assert_eq!(page["total"], 5);
    let cursor = page["nextCursor"].as_str().unwrap();
    let next = json(&send(
        Method::Get,
        &format!("/heartbeats?limit=2&cursor={cursor}"),
        None,
    ));
    assert_eq!(next["items"][0]["id"], ids[2].as_str());
    let res = send(Method::Get, "/heartbeats?limit=0", None);
    assert_eq!(res.problem().unwrap().code, "invalid_limit");
}

#[test]
fn the_plugin_describes_itself_without_problems() {
    let description = plateau_sdk::describe::<plateau_plugin_heartbeats::HeartbeatsPlugin>();
    assert_eq!(description.problems(), Vec::<String>::new());
    let public: Vec<String> = description
        .routes
        .iter()
        .filter(|r| r.access == plateau_sdk::Access::Public)
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert_eq!(
        public,
        [
            "GET /heartbeats/ping/{token}",
            "POST /heartbeats/ping/{token}",
            "GET /heartbeats/ping/{token}/start",
            "POST /heartbeats/ping/{token}/start",
            "GET /heartbeats/ping/{token}/fail",
            "POST /heartbeats/ping/{token}/fail",
        ]
    );
}

#[test]
fn ids_are_lowercase_ulids_and_upper_case_ids_of_before_still_resolve() {
    setup();
    let now = crate::ms("2026-01-10T12:00:00Z");
    let id = create(json!({"name": "new"}))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(id, id.to_ascii_lowercase(), "{id}");
    assert_eq!(plateau_sdk::ids::id_time(&id, "hb"), Some(now), "{id}");

    // A heartbeat created before ids were lowercase: the same record under
    // an upper-case id.
    testing::set_organization(Some(crate::host::ORG));
    let bucket = plateau_sdk::Bucket::organization(crate::host::ORG).unwrap();
    let mut record: Value = bucket.get(&format!("hb/{id}")).unwrap().unwrap();
    let old = format!("hb_{}", id[3..].to_ascii_uppercase());
    record["id"] = json!(old);
    record["name"] = json!("old");
    bucket.set(&format!("hb/{old}"), &record).unwrap();
    testing::set_organization(None);

    assert_eq!(get(&old)["name"], "old");
    let res = send(
        Method::Patch,
        &format!("/heartbeats/{old}"),
        Some(&json!({"name": "renamed"})),
    );
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    assert_eq!(get(&old)["name"], "renamed");
    // It lists before the newer one, as it was made first.
    let listed = json(&send(Method::Get, "/heartbeats", None));
    let names: Vec<&str> = listed["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["renamed", "new"]);
}
