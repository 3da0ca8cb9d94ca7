//! Shared evaluators over HTTP: stored once, used by flags with `$ref`, checked on save,
//! resolved on evaluation, and protected from deletion while in use.

use crate::client::{admin, bool_flag, evaluate, get, json, put_flag, save_flag, send};
use plateau_sdk::{Method, testing};
use serde_json::{Value, json};

fn put_evaluator(target: &str, body: &Value) -> plateau_sdk::Response {
    send(
        Method::Put,
        &format!("/flags/evaluators/{target}"),
        admin(),
        Some(body),
    )
}

#[test]
fn flags_use_shared_evaluators_by_reference() {
    let staff = json!({"logic": {"ends_with": [{"var": "email"}, "@plateau.dev"]}});
    let res = put_evaluator("staff", &staff);
    assert_eq!(res.status, 201);
    let record = json(&res);
    assert_eq!(
        (&record["name"], &record["logic"], &record["version"]),
        (&json!("staff"), &staff["logic"], &json!(1))
    );
    save_flag(
        "beta",
        &bool_flag(json!({"if": [{"$ref": "staff"}, "on", "off"]})),
    );

    let staff_user = json!({"targetingKey": "u1", "email": "ann@plateau.dev"});
    let customer = json!({"targetingKey": "u2", "email": "bob@example.com"});
    assert_eq!(evaluate("beta", &staff_user).1["value"], true);
    assert_eq!(evaluate("beta", &customer).1["value"], false);

    // Replacing the evaluator changes every flag that uses it.
    let everyone = json!({"logic": {"!!": [{"var": "email"}]}});
    assert_eq!(put_evaluator("staff", &everyone).status, 200);
    assert_eq!(evaluate("beta", &customer).1["value"], true);

    let list = json(&get("/flags/evaluators"));
    assert_eq!(
        (&list["total"], &list["items"][0]["version"]),
        (&json!(1), &json!(2))
    );
    assert_eq!(get("/flags/evaluators/staff").status, 200);
    assert_eq!(
        get("/flags/evaluators/staff?environment=staging").status,
        404
    );
    let kinds: Vec<String> = testing::events()
        .into_iter()
        .map(|e| e.event_type)
        .collect();
    assert_eq!(
        kinds,
        [
            "flags.evaluator.created",
            "flags.flag.created",
            "flags.evaluator.updated"
        ]
    );
}

#[test]
fn an_evaluator_in_use_cannot_be_deleted() {
    assert_eq!(
        put_evaluator("always", &json!({"logic": {"==": [1, 1]}})).status,
        201
    );
    save_flag("a", &bool_flag(json!({"if": [{"$ref": "always"}, "on"]})));
    save_flag("b", &bool_flag(json!({"and": [{"$ref": "always"}, "on"]})));

    let res = send(Method::Delete, "/flags/evaluators/always", admin(), None);
    assert_eq!(res.status, 409);
    assert_eq!(
        res.problem().unwrap().detail,
        "evaluator always is used by the flags a, b: change their targeting first"
    );
    for key in ["a", "b"] {
        assert_eq!(
            send(Method::Delete, &format!("/flags/{key}"), admin(), None).status,
            204
        );
    }
    let res = send(Method::Delete, "/flags/evaluators/always", admin(), None);
    assert_eq!(res.status, 204);
    assert_eq!(
        testing::events().pop().unwrap().event_type,
        "flags.evaluator.deleted"
    );
    assert_eq!(
        send(Method::Delete, "/flags/evaluators/always", admin(), None).status,
        404
    );
}

#[test]
fn references_and_evaluators_are_validated() {
    put_evaluator("staff", &json!({"logic": {"in": ["@", {"var": "email"}]}}));
    // A flag's dangling reference names the field and the evaluators that exist.
    let res = put_flag(
        "beta",
        &bool_flag(json!({"or": [false, {"$ref": "admins"}]})),
    );
    let problem = res.problem().unwrap();
    assert_eq!(problem.errors[0].field, "targeting.or[1].$ref");
    assert_eq!(
        problem.errors[0].message,
        "unknown evaluator \"admins\"; defined evaluators: staff"
    );

    // (body, field, message)
    let cases = [
        (
            json!({"logic": {"if": [{"nope": []}, true]}}),
            "logic.if[0]",
            "unknown operator \"nope\"",
        ),
        (
            json!({"logic": {"$ref": "staff"}}),
            "logic.$ref",
            "shared evaluators cannot reference other evaluators (\"staff\")",
        ),
        (
            json!({"logic": {}}),
            "logic",
            "logic must be a non-empty JsonLogic object",
        ),
        (
            json!({"logic": 3}),
            "logic",
            "logic must be a non-empty JsonLogic object",
        ),
    ];
    for (body, field, message) in cases {
        let problem = put_evaluator("bad", &body).problem().unwrap();
        assert_eq!(problem.code, "validation_failed", "{body}");
        assert_eq!(
            (
                problem.errors[0].field.as_str(),
                problem.errors[0].message.as_str()
            ),
            (field, message),
            "{body}"
        );
    }
    // A body of the wrong shape names the field, as the host's own
    // endpoints do.
    let res = put_evaluator("bad", &json!({"rule": {}}));
    let problem = res.problem().unwrap();
    assert_eq!(
        (problem.code.as_str(), problem.errors[0].field.as_str()),
        ("validation_failed", "rule")
    );
    let res = put_evaluator("no%20spaces", &json!({"logic": {"==": [1, 1]}}));
    assert_eq!(res.problem().unwrap().errors[0].field, "name");
    assert_eq!(get("/flags/evaluators/bad").status, 404);
}

#[test]
fn fractional_in_an_evaluator_needs_a_targeting_key() {
    put_evaluator(
        "half",
        &json!({"logic": {"fractional": [["on", 50], ["off", 50]]}}),
    );
    save_flag("split", &bool_flag(json!({"$ref": "half"})));
    let (status, body) = evaluate("split", &json!({}));
    assert_eq!(
        (status, &body["errorCode"]),
        (400, &json!("TARGETING_KEY_MISSING"))
    );
    let (status, body) = evaluate("split", &json!({"targetingKey": "u1"}));
    assert_eq!((status, &body["reason"]), (200, &json!("TARGETING_MATCH")));
}
