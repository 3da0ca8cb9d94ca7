//! `GET/PUT/DELETE /email/config`: validation, the sealed password that is
//! never returned, keeping or removing it, audited events, isolation.

use plateau_sdk::{Bucket, Method, testing};
use serde_json::{Value, json};

use crate::{
    NOW, ORG, OTHER, call, caller_of, invalid_fields, json_of, send_as, setup, smtp_config,
};

#[test]
fn the_password_is_sealed_and_never_returned() {
    setup();
    let res = call(Method::Get, "/email/config", None);
    assert_eq!(res.status, 200);
    let body = json_of(&res);
    assert_eq!(
        body,
        json!({
            "host": "smtp.example.com",
            "port": 587,
            "tlsMode": "starttls",
            "username": "relay",
            "passwordSet": true,
            "allowedSenders": ["ann@example.com", "*@example.org"],
            "alertsFrom": null,
            "createdAt": "2026-11-22T10:00:00.000Z",
            "updatedAt": "2026-11-22T10:00:00.000Z",
            "updatedBy": "user:test",
        })
    );
    // Neither the answer, nor the stored value, nor the event holds it.
    testing::set_organization(Some(ORG));
    let stored = Bucket::caller()
        .unwrap()
        .get_raw("config")
        .unwrap()
        .unwrap();
    testing::set_organization(None);
    for text in [
        String::from_utf8_lossy(&res.body).into_owned(),
        String::from_utf8_lossy(&stored).into_owned(),
        format!("{:?}", testing::events()),
    ] {
        assert!(!text.contains("s3cret-password"), "{text}");
    }
    let event = &testing::events()[0];
    assert_eq!(
        (event.event_type.as_str(), event.audit),
        ("email.config.updated", true)
    );
    let data: Value = serde_json::from_str(&event.data).unwrap();
    assert_eq!(data["passwordSet"], true);
}

#[test]
fn a_replace_keeps_the_password_unless_told_otherwise() {
    setup();
    testing::set_now(NOW + 1000);
    let mut body = smtp_config();
    body.as_object_mut().unwrap().remove("password");
    body["port"] = json!(465);
    body["tlsMode"] = json!("implicit");
    let res = call(Method::Put, "/email/config", Some(&body));
    assert_eq!(res.status, 200, "{}", String::from_utf8_lossy(&res.body));
    let view = json_of(&res);
    assert_eq!(
        (view["port"].clone(), view["passwordSet"].clone()),
        (json!(465), json!(true))
    );
    assert_eq!(view["createdAt"], "2026-11-22T10:00:00.000Z");
    assert_eq!(view["updatedAt"], "2026-11-22T10:00:01.000Z");

    // No username: no credentials at all.
    let mut body = smtp_config();
    let object = body.as_object_mut().unwrap();
    object.remove("username");
    object.remove("password");
    let view = json_of(&call(Method::Put, "/email/config", Some(&body)));
    assert_eq!(
        (view["username"].clone(), view["passwordSet"].clone()),
        (Value::Null, json!(false))
    );

    // A username again needs a password, since none is stored now.
    let mut body = smtp_config();
    body.as_object_mut().unwrap().remove("password");
    let res = call(Method::Put, "/email/config", Some(&body));
    assert_eq!(invalid_fields(&res), ["password"]);
    body["password"] = Value::Null;
    assert_eq!(
        invalid_fields(&call(Method::Put, "/email/config", Some(&body))),
        ["password"]
    );
}

#[test]
fn every_field_is_validated() {
    setup();
    let table = [
        (json!({"host": "smtp example.com"}), "host"),
        (json!({"host": ""}), "host"),
        (json!({"port": 0}), "port"),
        (json!({"port": 70000}), "port"),
        (json!({"tlsMode": "ssl"}), "tlsMode"),
        (json!({"username": "relay\r\nX"}), "username"),
        (json!({"password": "a\nb"}), "password"),
        (json!({"allowedSenders": []}), "allowedSenders"),
        (
            json!({"allowedSenders": ["*@localhost"]}),
            "allowedSenders[0]",
        ),
        (
            json!({"allowedSenders": ["Ann <ann@example.com>"]}),
            "allowedSenders[0]",
        ),
        (json!({"alertsFrom": "alerts@other.net"}), "alertsFrom"),
        (json!({"alertsFrom": "not an address"}), "alertsFrom"),
    ];
    for (change, field) in table {
        let mut body = smtp_config();
        for (k, v) in change.as_object().unwrap() {
            body[k] = v.clone();
        }
        let res = call(Method::Put, "/email/config", Some(&body));
        assert_eq!(invalid_fields(&res), [field], "{change}");
    }
    let res = call(Method::Put, "/email/config", Some(&json!({})));
    assert_eq!(
        invalid_fields(&res),
        ["allowedSenders", "host", "port", "tlsMode"]
    );
    let res = call(
        Method::Put,
        "/email/config",
        Some(&json!({"hostname": "x"})),
    );
    assert_eq!(json_of(&res)["code"], "validation_failed");
    assert_eq!(json_of(&res)["errors"][0]["field"], "hostname");
    // Nothing was changed by the refused requests.
    assert_eq!(
        json_of(&call(Method::Get, "/email/config", None))["port"],
        587
    );
}

#[test]
fn alerts_from_must_be_an_allowed_sender() {
    setup();
    let mut body = smtp_config();
    body["alertsFrom"] = json!("Plateau Alerts <alerts@example.org>");
    let res = call(Method::Put, "/email/config", Some(&body));
    assert_eq!(res.status, 200);
    assert_eq!(
        json_of(&res)["alertsFrom"],
        "Plateau Alerts <alerts@example.org>"
    );
}

#[test]
fn delete_then_404_and_organisations_do_not_see_each_other() {
    setup();
    let other = caller_of(OTHER, "free");
    assert_eq!(
        send_as(other.clone(), Method::Get, "/email/config", None).status,
        404
    );
    assert_eq!(
        send_as(other.clone(), Method::Delete, "/email/config", None).status,
        404
    );
    assert_eq!(call(Method::Delete, "/email/config", None).status, 204);
    let res = call(Method::Get, "/email/config", None);
    assert_eq!(res.status, 404);
    assert!(
        json_of(&res)["detail"]
            .as_str()
            .unwrap()
            .contains("PUT /email/config")
    );
    let kinds: Vec<(String, bool)> = testing::events()
        .iter()
        .map(|e| (e.event_type.clone(), e.audit))
        .collect();
    assert_eq!(
        kinds,
        [
            ("email.config.updated".to_owned(), true),
            ("email.config.deleted".to_owned(), true)
        ]
    );
}
