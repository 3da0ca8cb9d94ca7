//! Delivery jobs against a mocked `smtp` capability: what is submitted, and
//! how each outcome is recorded (sent, deferred and retried with backoff,
//! failed with suppression, given up).

use plateau_sdk::smtp::{SmtpError, TlsMode};
use plateau_sdk::{Method, testing};
use serde_json::{Value, json};

use crate::{NOW, advance, call, json_of, message, mock_smtp, queue, reply, run_due_jobs, setup};

fn entry(id: &str) -> Value {
    json_of(&call(Method::Get, &format!("/email/messages/{id}"), None))
}

fn event_types() -> Vec<String> {
    testing::events()
        .into_iter()
        .map(|e| e.event_type)
        .filter(|t| t.starts_with("email.message."))
        .collect()
}

#[test]
fn a_message_is_submitted_as_sent_and_recorded() {
    setup();
    let seen = mock_smtp(vec![reply(250, "2.0.0 Ok: queued as ABC")]);
    let body = json!({
        "from": "Ann <ann@example.com>",
        "to": ["Bob <bob@example.net>"],
        "cc": "carl@example.net",
        "bcc": ["dan@example.net"],
        "replyTo": "support@example.com",
        "subject": "Invoice",
        "text": "see attached",
        "html": "<p>see attached</p>",
        "headers": {"X-Campaign": "nov"},
        "attachments": [{"filename": "invoice.txt", "contentType": "text/plain", "content": "aGVsbG8="}],
    });
    let id = queue(&body)["id"].as_str().unwrap().to_owned();
    assert_eq!(run_due_jobs(), 1);
    let seen = seen.borrow();
    let (server, message) = &seen[0];
    assert_eq!(
        (server.host.as_str(), server.port, server.tls),
        ("smtp.example.com", 587, TlsMode::StartTls)
    );
    assert_eq!(
        (server.username.as_deref(), server.password.as_deref()),
        (Some("relay"), Some("s3cret-password")),
        "the sealed password is opened for the submission"
    );
    assert_eq!(message.sender, "Ann <ann@example.com>");
    assert_eq!(message.to, ["Bob <bob@example.net>"]);
    assert_eq!(message.cc, ["carl@example.net"]);
    assert_eq!(message.bcc, ["dan@example.net"]);
    assert_eq!(message.reply_to.as_deref(), Some("support@example.com"));
    assert_eq!(
        (
            message.subject.as_str(),
            message.text.as_deref(),
            message.html.as_deref()
        ),
        ("Invoice", Some("see attached"), Some("<p>see attached</p>"))
    );
    assert_eq!(
        message.headers,
        [("X-Campaign".to_owned(), "nov".to_owned())]
    );
    assert_eq!(message.attachments[0].content, b"hello");
    assert_eq!(message.attachments[0].filename, "invoice.txt");

    let sent = entry(&id);
    assert_eq!(
        (
            &sent["status"],
            &sent["attempts"],
            &sent["smtpCode"],
            &sent["smtpMessage"],
            &sent["messageId"]
        ),
        (
            &json!("sent"),
            &json!(1),
            &json!(250),
            &json!("2.0.0 Ok: queued as ABC"),
            &json!("<m1@example.com>")
        )
    );
    assert_eq!(sent["sentAt"], "2026-11-22T10:00:00.000Z");
    assert_eq!(
        (sent["bccCount"].clone(), sent["attachments"].clone()),
        (json!(1), json!(1))
    );
    assert_eq!(
        event_types(),
        ["email.message.queued", "email.message.sent"]
    );
    // The content is gone once sent, the job too; a second delivery of the
    // job (at least once) sends nothing more.
    testing::set_organization(Some(crate::ORG));
    let left = plateau_sdk::Bucket::caller().unwrap().count("c:").unwrap();
    testing::set_organization(None);
    assert_eq!(left, 0);
    assert!(testing::jobs().is_empty());
    drop(seen);
    let again = plateau_sdk::jobs::Job {
        key: format!("send:{id}"),
        organization_id: Some(crate::ORG.to_owned()),
        payload: id.clone(),
        due: NOW,
        attempt: 2,
    };
    testing::run_job::<plateau_plugin_email::EmailPlugin>(&again).unwrap();
    assert_eq!(entry(&id)["attempts"], 1);
}

#[test]
fn temporary_failures_are_retried_with_backoff() {
    setup();
    let seen = mock_smtp(vec![
        reply(451, "4.3.0 try again later"),
        Err(SmtpError::ConnectionFailed("connection refused".into())),
        reply(250, "2.0.0 Ok"),
    ]);
    let id = queue(&message())["id"].as_str().unwrap().to_owned();
    run_due_jobs();
    let deferred = entry(&id);
    assert_eq!(
        (
            &deferred["status"],
            &deferred["attempts"],
            &deferred["smtpCode"],
            &deferred["smtpMessage"]
        ),
        (
            &json!("deferred"),
            &json!(1),
            &json!(451),
            &json!("4.3.0 try again later")
        )
    );
    assert_eq!(deferred["nextAttemptAt"], "2026-11-22T10:01:00.000Z");
    // Not due yet: nothing runs.
    advance(59_999);
    assert_eq!(run_due_jobs(), 0);
    advance(1);
    assert_eq!(run_due_jobs(), 1);
    let deferred = entry(&id);
    assert_eq!(
        (&deferred["attempts"], &deferred["smtpCode"]),
        (&json!(2), &Value::Null)
    );
    assert_eq!(deferred["error"], "connection failed: connection refused");
    assert_eq!(deferred["nextAttemptAt"], "2026-11-22T10:06:00.000Z");
    advance(5 * 60_000);
    run_due_jobs();
    let sent = entry(&id);
    assert_eq!(
        (&sent["status"], &sent["attempts"], &sent["error"]),
        (&json!("sent"), &json!(3), &Value::Null)
    );
    assert_eq!(sent["nextAttemptAt"], Value::Null);
    assert_eq!(seen.borrow().len(), 3);
    assert_eq!(
        event_types(),
        [
            "email.message.queued",
            "email.message.deferred",
            "email.message.deferred",
            "email.message.sent"
        ]
    );
}

#[test]
fn temporary_failures_give_up_after_six_attempts() {
    setup();
    let seen = mock_smtp(vec![Err(SmtpError::Timeout)]);
    let id = queue(&message())["id"].as_str().unwrap().to_owned();
    for wait in [0, 60_000, 300_000, 900_000, 3_600_000, 14_400_000] {
        advance(wait);
        assert_eq!(run_due_jobs(), 1);
    }
    let failed = entry(&id);
    assert_eq!(
        (&failed["status"], &failed["attempts"]),
        (&json!("failed"), &json!(6))
    );
    assert_eq!(
        failed["error"],
        "gave up after 6 attempts; the last: the SMTP exchange timed out"
    );
    assert!(testing::jobs().is_empty());
    assert_eq!(seen.borrow().len(), 6);
}

#[test]
fn permanent_failures_are_recorded_and_suppress_the_mailbox() {
    setup();
    mock_smtp(vec![reply(
        550,
        "5.1.1 <gone@example.net>: Recipient address rejected",
    )]);
    let mut body = message();
    body["to"] = json!(["gone@example.net", "bob@example.net"]);
    let id = queue(&body)["id"].as_str().unwrap().to_owned();
    run_due_jobs();
    let failed = entry(&id);
    assert_eq!(
        (&failed["status"], &failed["attempts"], &failed["smtpCode"]),
        (&json!("failed"), &json!(1), &json!(550))
    );
    assert!(
        testing::jobs().is_empty(),
        "a permanent failure is not retried"
    );
    let list = json_of(&call(Method::Get, "/email/suppressions", None));
    assert_eq!(list["total"], 1);
    assert_eq!(list["items"][0]["address"], "gone@example.net");
    assert_eq!(list["items"][0]["smtpCode"], 550);
    assert_eq!(list["items"][0]["message"], id.as_str());
    let failed_event = testing::events().pop().unwrap();
    assert_eq!(failed_event.event_type, "email.message.failed");
    let data: Value = serde_json::from_str(&failed_event.data).unwrap();
    assert_eq!(data["nowSuppressed"], json!(["gone@example.net"]));

    // A policy refusal suppresses nobody.
    mock_smtp(vec![reply(554, "5.7.1 rejected as spam")]);
    queue(&message());
    run_due_jobs();
    assert_eq!(
        json_of(&call(Method::Get, "/email/suppressions", None))["total"],
        1
    );

    // Lifting the suppression lets the address receive again.
    let res = call(Method::Delete, "/email/suppressions/Gone@Example.net", None);
    assert_eq!(res.status, 204);
    assert_eq!(
        call(Method::Delete, "/email/suppressions/gone@example.net", None).status,
        404
    );
    let audited = testing::events().pop().unwrap();
    assert_eq!(
        (audited.event_type.as_str(), audited.audit),
        ("email.suppression.deleted", true)
    );
}

#[test]
fn a_removed_configuration_or_sender_fails_the_message() {
    setup();
    let seen = mock_smtp(vec![reply(250, "ok")]);
    let first = queue(&message())["id"].as_str().unwrap().to_owned();
    let mut config = crate::smtp_config();
    config["allowedSenders"] = json!(["*@example.org"]);
    assert_eq!(
        call(Method::Put, "/email/config", Some(&config)).status,
        200
    );
    run_due_jobs();
    assert_eq!(
        entry(&first)["error"],
        "ann@example.com is no longer an allowed sender of the configuration"
    );

    let mut body = message();
    body["from"] = json!("billing@example.org");
    let second = queue(&body)["id"].as_str().unwrap().to_owned();
    assert_eq!(call(Method::Delete, "/email/config", None).status, 204);
    run_due_jobs();
    let failed = entry(&second);
    assert_eq!(failed["status"], "failed");
    assert!(
        failed["error"].as_str().unwrap().contains("not configured"),
        "{failed}"
    );
    assert!(seen.borrow().is_empty());
}

#[test]
fn large_attachments_are_stored_in_chunks_and_sent_whole() {
    setup();
    let seen = mock_smtp(vec![reply(250, "ok")]);
    let bytes: Vec<u8> = (0..2_500_000u32).map(|i| (i % 251) as u8).collect();
    use base64::Engine as _;
    let mut body = message();
    body["attachments"] = json!([
        {"filename": "big.bin", "content": base64::engine::general_purpose::STANDARD.encode(&bytes)},
        {"filename": "empty.txt", "contentType": "text/plain", "content": ""},
    ]);
    queue(&body);
    testing::set_organization(Some(crate::ORG));
    let chunks = plateau_sdk::Bucket::caller().unwrap().count("c:").unwrap();
    testing::set_organization(None);
    assert_eq!(
        chunks,
        1 + 1 + 3,
        "head, text, three chunks of the attachment"
    );
    run_due_jobs();
    let seen = seen.borrow();
    assert_eq!(seen[0].1.attachments[0].content, bytes);
    assert!(seen[0].1.attachments[1].content.is_empty());
}
