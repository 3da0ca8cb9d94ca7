//! `POST /email/send`: what it queues (entry, content, job, event), the
//! checks before it (configuration, sender, validation, suppressions) and
//! the per-plan rate limit.

use plateau_sdk::{Method, testing};
use serde_json::{Value, json};

use crate::{
    NOW, ORG, OTHER, advance, call, caller_of, invalid_fields, json_of, message, queue, send_as,
    setup,
};

#[test]
fn a_send_queues_an_entry_a_job_and_an_event() {
    setup();
    let res = call(Method::Post, "/email/send", Some(&message()));
    assert_eq!(res.status, 202);
    let entry = json_of(&res);
    let id = entry["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("em_") && id.len() == 29, "{id}");
    assert_eq!(
        res.header("location"),
        Some(format!("/email/messages/{id}").as_str())
    );
    assert_eq!(
        entry,
        json!({
            "id": id,
            "status": "queued",
            "source": "api",
            "from": "ann@example.com",
            "to": ["bob@example.net"],
            "cc": [],
            "bccCount": 0,
            "suppressed": [],
            "subject": "Hello",
            "attachments": 0,
            "attempts": 0,
            "smtpCode": null,
            "smtpMessage": null,
            "error": null,
            "messageId": null,
            "createdAt": "2026-11-22T10:00:00.000Z",
            "updatedAt": "2026-11-22T10:00:00.000Z",
            "sentAt": null,
            "nextAttemptAt": null,
        })
    );
    let jobs = testing::jobs();
    assert_eq!(jobs.len(), 1);
    let (namespace, job) = &jobs[0];
    assert_eq!(namespace, &format!("org:{ORG}"));
    assert_eq!(
        (job.key.clone(), job.at, job.payload.clone()),
        (format!("send:{id}"), NOW, id.clone())
    );
    let event = testing::events().pop().unwrap();
    assert_eq!(
        (event.event_type.as_str(), event.audit),
        ("email.message.queued", false)
    );
    assert_eq!(event.resource_id.as_deref(), Some(id.as_str()));
    assert_eq!(
        json_of(&call(Method::Get, &format!("/email/messages/{id}"), None)),
        entry
    );
}

#[test]
fn without_configuration_or_an_allowed_sender_nothing_is_queued() {
    setup();
    let res = send_as(
        caller_of(OTHER, "pro"),
        Method::Post,
        "/email/send",
        Some(&message()),
    );
    assert_eq!(
        (res.status, json_of(&res)["code"].clone()),
        (409, json!("conflict"))
    );
    let mut body = message();
    body["from"] = json!("mallory@example.com");
    let res = call(Method::Post, "/email/send", Some(&body));
    assert_eq!(invalid_fields(&res), ["from"]);
    assert!(
        json_of(&res)["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("ann@example.com, *@example.org")
    );
    body["from"] = json!("Billing <billing@EXAMPLE.org>");
    assert_eq!(call(Method::Post, "/email/send", Some(&body)).status, 202);
    assert_eq!(testing::jobs().len(), 1);
}

#[test]
fn invalid_messages_are_refused_with_every_field_named() {
    setup();
    let res = call(
        Method::Post,
        "/email/send",
        Some(&json!({
            "from": "ann@example.com",
            "to": ["bob@example.net", "not an address"],
            "cc": "x@y",
            "subject": "Hi\r\nBcc: eve@example.net",
            "headers": {"X-Ok": "yes", "Bcc": "eve@example.net", "X-Evil": "a\r\nBcc: eve@example.net"},
        })),
    );
    assert_eq!(
        invalid_fields(&res),
        [
            "cc[0]",
            "headers.Bcc",
            "headers.X-Evil",
            "subject",
            "text",
            "to[1]"
        ]
    );
    let res = call(
        Method::Post,
        "/email/send",
        Some(&json!({"from": "ann@example.com"})),
    );
    assert_eq!(invalid_fields(&res), ["subject", "text", "to"]);
    let req = plateau_sdk::Request::new(Method::Post, "/email/send")
        .with_caller(caller_of(ORG, "pro"))
        .with_header("content-type", "text/plain")
        .with_body("hello");
    assert_eq!(
        testing::handle::<plateau_plugin_email::EmailPlugin>(&req).status,
        415
    );
    assert!(testing::jobs().is_empty());
}

#[test]
fn the_rate_limit_follows_the_plan_and_says_when_to_retry() {
    setup();
    let free = caller_of(ORG, "free");
    // 10 a minute on free: the 11th in the same minute is refused.
    advance(15_000);
    for i in 0..10 {
        let res = send_as(free.clone(), Method::Post, "/email/send", Some(&message()));
        assert_eq!(res.status, 202, "message {i}");
    }
    let res = send_as(free.clone(), Method::Post, "/email/send", Some(&message()));
    assert_eq!(res.status, 429);
    assert_eq!(res.header("retry-after"), Some("45"));
    let problem = json_of(&res);
    assert_eq!(problem["code"], "rate_limited");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("10 messages a minute"),
        "{problem}"
    );
    assert_eq!(testing::jobs().len(), 10);
    // A pro caller of the same organisation has more room; the counters
    // are the organisation's.
    let res = send_as(
        caller_of(ORG, "pro"),
        Method::Post,
        "/email/send",
        Some(&message()),
    );
    assert_eq!(res.status, 202);
    // The next minute opens again, and old counters are pruned.
    advance(45_000);
    assert_eq!(
        send_as(free.clone(), Method::Post, "/email/send", Some(&message())).status,
        202
    );
    testing::set_organization(Some(ORG));
    let counters: Vec<String> = plateau_sdk::Bucket::caller()
        .unwrap()
        .list_all("rate:")
        .unwrap()
        .into_iter()
        .map(|e| format!("{}={}", e.key, String::from_utf8_lossy(&e.value)))
        .collect();
    testing::set_organization(None);
    assert_eq!(
        counters,
        [
            format!("rate:d:{}=12", NOW / 86_400_000),
            format!("rate:m:{}=1", NOW / 60_000 + 1)
        ]
    );
}

#[test]
fn the_daily_limit_holds_across_minutes() {
    setup();
    testing::set_config("limits.free.perDay", "3");
    let free = caller_of(ORG, "free");
    for _ in 0..3 {
        assert_eq!(
            send_as(free.clone(), Method::Post, "/email/send", Some(&message())).status,
            202
        );
        advance(60_000);
    }
    let res = send_as(free, Method::Post, "/email/send", Some(&message()));
    assert_eq!(res.status, 429);
    // 10:03 UTC: 13 h 57 min to midnight.
    assert_eq!(res.header("retry-after"), Some("50220"));
    assert!(
        json_of(&res)["detail"]
            .as_str()
            .unwrap()
            .contains("3 messages a day")
    );
}

#[test]
fn suppressed_recipients_are_skipped_or_the_message_refused() {
    setup();
    testing::set_organization(Some(ORG));
    let bucket = plateau_sdk::Bucket::caller().unwrap();
    bucket
        .set("sup:gone@example.net", &json!({"address": "gone@example.net", "smtpCode": 550,
            "smtpMessage": "no such user", "message": "em_x", "createdAt": "2026-11-22T09:00:00.000Z"}))
        .unwrap();
    testing::set_organization(None);
    let mut body = message();
    body["to"] = json!(["Gone <GONE@example.net>", "bob@example.net"]);
    let entry = queue(&body);
    assert_eq!(entry["to"], json!(["bob@example.net"]));
    assert_eq!(entry["suppressed"], json!(["GONE@example.net"]));
    body["to"] = json!(["gone@example.net"]);
    let res = call(Method::Post, "/email/send", Some(&body));
    assert_eq!(res.status, 422);
    let problem: Value = json_of(&res);
    assert_eq!(problem["code"], "unprocessable");
    assert!(
        problem["detail"]
            .as_str()
            .unwrap()
            .contains("DELETE /email/suppressions")
    );
    assert_eq!(testing::jobs().len(), 1);
}
