//! The management API over HTTP: create and replace, validation, lists and cursors, 404s,
//! project and environment isolation, scopes, and the audited events.

use crate::client::{
    PROJECT, admin, bool_flag, caller, get, json, put_flag, request, save_flag, send,
};
use plateau_plugin_flags::FlagsPlugin;
use plateau_sdk::{Access, Caller, Method, Request, percent_encode, testing};
use serde_json::{Value, json};

#[test]
fn description_declares_scopes_capabilities_and_routes() {
    let description = plateau_sdk::describe::<FlagsPlugin>();
    assert_eq!(description.problems(), Vec::<String>::new());
    assert_eq!(description.name, "flags");
    assert_eq!(description.version, env!("CARGO_PKG_VERSION"));
    assert_eq!(description.prefixes, ["/flags"]);
    let scopes: Vec<&str> = description.scopes.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(scopes, ["flags:read", "flags:write", "flags:evaluate"]);
    assert_eq!(
        description.capabilities,
        ["kv", "events", "clock", "cursors"]
    );
    let routes: Vec<String> = description
        .routes
        .iter()
        .map(|r| {
            assert!(
                !r.summary.is_empty(),
                "{} {} has no summary",
                r.method,
                r.path
            );
            let Access::Scope(scope) = &r.access else {
                panic!("{} {} is not scoped", r.method, r.path)
            };
            format!("{} {} {scope}", r.method, r.path)
        })
        .collect();
    assert_eq!(
        routes,
        [
            "GET /flags flags:read",
            "GET /flags/{key} flags:read",
            "PUT /flags/{key} flags:write",
            "DELETE /flags/{key} flags:write",
            "GET /flags/evaluators flags:read",
            "GET /flags/evaluators/{name} flags:read",
            "PUT /flags/evaluators/{name} flags:write",
            "DELETE /flags/evaluators/{name} flags:write",
            "POST /flags/ofrep/v1/evaluate/flags/{key} flags:evaluate",
            "POST /flags/ofrep/v1/evaluate/flags flags:evaluate",
            "POST /flags/environments/{environment}/ofrep/v1/evaluate/flags/{key} flags:evaluate",
            "POST /flags/environments/{environment}/ofrep/v1/evaluate/flags flags:evaluate",
        ]
    );
}

#[test]
fn put_creates_then_replaces_and_records_events() {
    testing::set_now(1_700_000_000_000);
    let first = bool_flag(Value::Null);
    let res = put_flag("new-checkout", &first);
    assert_eq!(res.status, 201);
    assert_eq!(
        res.header("location"),
        Some("/flags/new-checkout?project=prj_main&environment=production")
    );
    let created = json(&res);
    assert_eq!(res.header("etag"), created["etag"].as_str());
    assert_eq!(
        (
            &created["key"],
            &created["project"],
            &created["environment"]
        ),
        (
            &json!("new-checkout"),
            &json!(PROJECT),
            &json!("production")
        )
    );
    assert_eq!(created["version"], 1);
    assert_eq!(created["createdAt"], "2023-11-14T22:13:20.000Z");
    assert_eq!(created["variants"], first["variants"]);

    testing::set_now(1_700_000_060_000);
    let second = json!({"state": "DISABLED", "variants": {"a": "x", "b": "y"}, "defaultVariant": "b",
                        "metadata": {"team": "growth"}});
    let res = put_flag("new-checkout", &second);
    assert_eq!(res.status, 200);
    assert!(res.header("location").is_none());
    let replaced = json(&res);
    assert_eq!(replaced["version"], 2);
    assert_eq!(replaced["createdAt"], created["createdAt"]);
    assert_eq!(replaced["updatedAt"], "2023-11-14T22:14:20.000Z");
    assert_ne!(replaced["etag"], created["etag"]);

    // What GET answers is the stored record: the definition as sent plus its bookkeeping.
    let fetched = json(&get("/flags/new-checkout"));
    assert_eq!(fetched, replaced);
    for field in ["state", "variants", "defaultVariant", "metadata"] {
        assert_eq!(fetched[field], second[field], "{field}");
    }

    // Each event as a user of the timeline sees it; the data holds nothing secret.
    let events: Vec<Value> = testing::events()
        .into_iter()
        .map(|e| {
            json!({
                "type": e.event_type, "action": e.action, "audit": e.audit,
                "resource": [e.resource_type, e.resource_id],
                "data": serde_json::from_str::<Value>(&e.data).unwrap(),
            })
        })
        .collect();
    assert_eq!(
        events,
        [
            json!({"type": "flags.flag.created", "action": "create", "audit": true,
                   "resource": ["flag", "new-checkout"],
                   "data": {"project": PROJECT, "environment": "production", "state": "ENABLED",
                            "type": "boolean", "version": 1}}),
            json!({"type": "flags.flag.updated", "action": "update", "audit": true,
                   "resource": ["flag", "new-checkout"],
                   "data": {"project": PROJECT, "environment": "production", "state": "DISABLED",
                            "type": "string", "version": 2}}),
        ]
    );
}

#[test]
fn get_with_the_current_etag_is_not_modified() {
    save_flag("banner", &bool_flag(Value::Null));
    let etag = get("/flags/banner").header("etag").unwrap().to_owned();
    let req = |tag: &str| {
        let req = request(Method::Get, "/flags/banner", admin()).with_header("if-none-match", tag);
        testing::handle::<FlagsPlugin>(&req).status
    };
    assert_eq!(req(&etag), 304);
    assert_eq!(req(&format!("W/{etag}")), 304);
    assert_eq!(req("\"0\""), 200);
    save_flag("banner", &bool_flag(json!({"if": [true, "on"]})));
    assert_eq!(req(&etag), 200);
}

#[test]
fn invalid_definitions_name_the_field() {
    let valid = bool_flag(Value::Null);
    let with = |field: &str, value: Value| {
        let mut flag = valid.clone();
        flag[field] = value;
        flag
    };
    // (definition, field of the error, start of its message)
    let cases = [
        (
            json!({"variants": {"on": true}}),
            "state",
            "state is required",
        ),
        (with("state", json!("ON")), "state", "state must be"),
        (
            with("defaultVariant", json!("maybe")),
            "defaultVariant",
            "defaultVariant \"maybe\" is not one of the variants",
        ),
        (
            with("variants", json!({"on": true, "off": "no"})),
            "variants.on",
            "variant \"on\" is a boolean but variant \"off\" is a string",
        ),
        (
            with("targeting", json!({"if": [{"bogus": [1]}, "on", "off"]})),
            "targeting.if[0]",
            "unknown operator \"bogus\"",
        ),
        (
            with("targeting", json!({"if": [{"$ref": "beta-users"}, "on"]})),
            "targeting.if[0].$ref",
            "unknown evaluator \"beta-users\": store it first with PUT /flags/evaluators/{name}",
        ),
        (
            with("defaultvariant", json!("on")),
            "defaultvariant",
            "unknown field",
        ),
        (json!([1, 2]), "body", "a flag must be a JSON object"),
    ];
    for (definition, field, message) in cases {
        let res = put_flag("checkout", &definition);
        assert_eq!(res.status, 400, "{definition}");
        let problem = res.problem().expect("a problem document");
        assert_eq!(problem.code, "validation_failed", "{definition}");
        assert_eq!(problem.errors.len(), 1, "{definition}");
        assert_eq!(problem.errors[0].field, field, "{definition}");
        assert!(
            problem.errors[0].message.starts_with(message),
            "{definition}: {}",
            problem.errors[0].message
        );
    }
    // Bad keys, and a body that is not JSON at all.
    for (target, code, field) in [
        ("bad%20key", "validation_failed", Some("key")),
        ("evaluators", "validation_failed", Some("key")),
        (&"k".repeat(129), "validation_failed", Some("key")),
        (
            "checkout?environment=Prod",
            "validation_failed",
            Some("environment"),
        ),
    ] {
        let res = put_flag(target, &valid);
        let problem = res.problem().unwrap();
        assert_eq!((res.status, problem.code.as_str()), (400, code), "{target}");
        assert_eq!(problem.errors.first().map(|e| e.field.as_str()), field);
    }
    let req = request(Method::Put, "/flags/checkout", admin())
        .with_header("content-type", "application/json")
        .with_body("{\"state\": ");
    let res = testing::handle::<FlagsPlugin>(&req);
    assert_eq!(res.problem().unwrap().code, "invalid_json");

    assert!(testing::events().is_empty());
    assert_eq!(get("/flags/checkout").status, 404);
}

#[test]
fn lists_page_with_cursors_in_key_order() {
    let keys = ["delta", "alpha", "echo", "charlie", "bravo"];
    for key in keys {
        save_flag(key, &bool_flag(Value::Null));
    }
    save_flag("zulu?environment=staging", &bool_flag(Value::Null));

    let all = json(&get("/flags"));
    let names: Vec<&str> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["key"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["alpha", "bravo", "charlie", "delta", "echo"]);
    assert_eq!(
        (&all["total"], &all["nextCursor"]),
        (&json!(5), &Value::Null)
    );

    let mut seen = Vec::new();
    let mut pages = 0;
    let mut target = "/flags?limit=2".to_owned();
    loop {
        let page = json(&get(&target));
        assert_eq!(page["total"], 5);
        pages += 1;
        seen.extend(
            page["items"]
                .as_array()
                .unwrap()
                .iter()
                .map(|f| f["key"].clone()),
        );
        match page["nextCursor"].as_str() {
            Some(cursor) => target = format!("/flags?limit=2&cursor={}", percent_encode(cursor)),
            None => break,
        }
    }
    assert_eq!(pages, 3);
    let mut sorted = keys.to_vec();
    sorted.sort_unstable();
    assert_eq!(seen, sorted.iter().map(|k| json!(k)).collect::<Vec<_>>());

    // A cursor is bound to its project and environment.
    let cursor = json(&get("/flags?limit=2"))["nextCursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let res = get(&format!(
        "/flags?limit=2&environment=staging&cursor={}",
        percent_encode(&cursor)
    ));
    assert_eq!(res.problem().unwrap().code, "invalid_cursor");
    for bad in ["/flags?limit=0", "/flags?limit=201", "/flags?limit=x"] {
        assert_eq!(get(bad).problem().unwrap().code, "invalid_limit", "{bad}");
    }
}

#[test]
fn unknown_flags_are_404_and_delete_is_audited() {
    for (method, target) in [
        (Method::Get, "/flags/nope"),
        (Method::Delete, "/flags/nope"),
        (Method::Get, "/flags/not%20a%20key"),
    ] {
        let res = send(method, target, admin(), None);
        assert_eq!(res.status, 404, "{method} {target}");
        assert_eq!(res.problem().unwrap().code, "not_found");
    }
    save_flag("doomed", &bool_flag(Value::Null));
    let res = send(Method::Delete, "/flags/doomed", admin(), None);
    assert_eq!(res.status, 204);
    assert_eq!(get("/flags/doomed").status, 404);
    assert_eq!(
        send(Method::Delete, "/flags/doomed", admin(), None).status,
        404
    );
    let last = testing::events().pop().unwrap();
    assert_eq!(
        (last.event_type.as_str(), last.action.as_str(), last.audit),
        ("flags.flag.deleted", "delete", true)
    );
    assert_eq!(last.resource_id.as_deref(), Some("doomed"));
    // Re-created, it is a new flag again.
    assert_eq!(put_flag("doomed", &bool_flag(Value::Null)).status, 201);
}

#[test]
fn projects_and_environments_are_isolated() {
    let flag = |variant: &str| json!({"state": "ENABLED", "variants": {"a": "a", "b": "b", "c": "c"}, "defaultVariant": variant});
    save_flag("theme", &flag("a"));
    save_flag("theme?environment=staging", &flag("b"));
    save_flag("theme?project=prj_other", &flag("c"));

    // (target, expected default variant)
    let cases = [
        ("/flags/theme", "a"),
        ("/flags/theme?environment=production", "a"),
        (&format!("/flags/theme?project={PROJECT}"), "a"),
        ("/flags/theme?environment=staging", "b"),
        ("/flags/theme?project=prj_other", "c"),
    ];
    for (target, variant) in cases {
        let body = json(&get(target));
        assert_eq!(body["defaultVariant"], variant, "{target}");
    }
    assert_eq!(get("/flags/theme?environment=dev").status, 404);
    assert_eq!(json(&get("/flags?environment=staging"))["total"], 1);
    assert_eq!(json(&get("/flags?environment=dev"))["total"], 0);

    let res = send(
        Method::Delete,
        "/flags/theme?environment=staging",
        admin(),
        None,
    );
    assert_eq!(res.status, 204);
    assert_eq!(get("/flags/theme").status, 200);

    // A token bound to a project cannot name another one; without any project, ask for one.
    let res = get("/flags/theme?project=prj_main&project=x");
    assert_eq!(res.status, 200, "the first value counts");
    let bound = Caller {
        project_id: Some("prj_bound".to_owned()),
        ..Caller::new("org_1", &["flags:read"])
    };
    let res = send(Method::Get, "/flags/theme?project=prj_main", bound, None);
    assert_eq!(
        (res.status, res.problem().unwrap().code.as_str()),
        (403, "forbidden")
    );
    let no_project = Request::new(Method::Get, "/flags").with_caller(caller(&["flags:read"]));
    let res = testing::handle::<FlagsPlugin>(&no_project);
    assert_eq!(res.problem().unwrap().errors[0].field, "project");

    // Organisations never see each other's flags.
    let other = Caller::new("org_2", &["flags:read"]);
    assert_eq!(send(Method::Get, "/flags/theme", other, None).status, 404);
}

#[test]
fn routes_need_their_scope() {
    let definition = bool_flag(Value::Null);
    // (caller's scopes, method, target, expected status)
    let cases: [(&[&str], Method, &str, u16); 6] = [
        (&["flags:read"], Method::Put, "/flags/a", 403),
        (&["flags:evaluate"], Method::Get, "/flags", 403),
        (&["flags:write"], Method::Get, "/flags/a", 403),
        (
            &["flags:read"],
            Method::Post,
            "/flags/ofrep/v1/evaluate/flags",
            403,
        ),
        (&["flags:write"], Method::Put, "/flags/a", 201),
        (&["*"], Method::Get, "/flags/a", 200),
    ];
    for (scopes, method, target, status) in cases {
        let res = send(method, target, caller(scopes), Some(&definition));
        assert_eq!(res.status, status, "{scopes:?} {method} {target}");
        if status == 403 {
            let problem = res.problem().expect("403 is a problem document");
            assert_eq!(problem.code, "missing_scope");
        }
    }
    let res = send(Method::Get, "/flags", Caller::anonymous(), None);
    assert_eq!(res.status, 401);
}
