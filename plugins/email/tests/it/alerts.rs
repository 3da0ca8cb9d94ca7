//! Alert events of other plugins (`checks.email.requested`,
//! `heartbeats.email.requested`) delivered to `on_event`, at least once.

use plateau_plugin_email::EmailPlugin;
use plateau_sdk::{Event, Method, testing};
use serde_json::{Value, json};

use crate::{NOW, ORG, OTHER, call, json_of, mock_smtp, reply, run_due_jobs, setup, smtp_config};

fn alert(id: &str, organization: &str, event_type: &str, data: Value) -> Event {
    Event {
        id: id.to_owned(),
        organization_id: organization.to_owned(),
        event_type: event_type.to_owned(),
        resource_type: Some("check".to_owned()),
        resource_id: Some("chk_1".to_owned()),
        data: data.to_string(),
        at: NOW,
    }
}

fn down() -> Value {
    json!({
        "to": ["oncall@example.net"],
        "subject": "[down] api.example.com",
        "text": "api.example.com is down since 10:00 UTC",
        "html": "<p>api.example.com is <b>down</b></p>",
    })
}

fn ledger() -> Value {
    json_of(&call(Method::Get, "/email/messages", None))
}

#[test]
fn an_alert_is_queued_once_and_sent_from_the_alert_sender() {
    setup();
    let seen = mock_smtp(vec![reply(250, "ok")]);
    let event = alert("evt_1", ORG, "checks.email.requested", down());
    testing::deliver::<EmailPlugin>(&event).unwrap();
    // At least once: the same event again queues nothing.
    testing::deliver::<EmailPlugin>(&event).unwrap();
    let list = ledger();
    assert_eq!(list["total"], 1);
    let entry = &list["items"][0];
    assert_eq!(
        (
            &entry["source"],
            &entry["eventId"],
            &entry["eventType"],
            &entry["from"]
        ),
        (
            &json!("event"),
            &json!("evt_1"),
            &json!("checks.email.requested"),
            &json!("ann@example.com")
        )
    );
    assert_eq!(testing::jobs().len(), 1);
    let queued = testing::events()
        .into_iter()
        .find(|e| e.event_type == "email.message.queued")
        .unwrap();
    assert_eq!(queued.organization_id.as_deref(), Some(ORG));
    run_due_jobs();
    let seen = seen.borrow();
    assert_eq!(
        seen[0].1.sender, "ann@example.com",
        "the first plain allowed sender"
    );
    assert_eq!(seen[0].1.to, ["oncall@example.net"]);
    assert_eq!(
        seen[0].1.html.as_deref(),
        Some("<p>api.example.com is <b>down</b></p>")
    );
    assert_eq!(ledger()["items"][0]["status"], "sent");
}

#[test]
fn alerts_from_is_used_and_heartbeats_alerts_too() {
    setup();
    let mut config = smtp_config();
    config["alertsFrom"] = json!("Plateau Alerts <alerts@example.org>");
    call(Method::Put, "/email/config", Some(&config));
    let seen = mock_smtp(vec![reply(250, "ok")]);
    let mut data = down();
    data["to"] = json!("oncall@example.net");
    testing::deliver::<EmailPlugin>(&alert("evt_2", ORG, "heartbeats.email.requested", data))
        .unwrap();
    run_due_jobs();
    assert_eq!(
        seen.borrow()[0].1.sender,
        "Plateau Alerts <alerts@example.org>"
    );
}

#[test]
fn alerts_that_cannot_be_sent_are_logged_and_dropped() {
    setup();
    // No configuration for this organisation.
    testing::deliver::<EmailPlugin>(&alert("evt_3", OTHER, "checks.email.requested", down()))
        .unwrap();
    // Invalid data: no recipient, then an injected subject.
    testing::deliver::<EmailPlugin>(&alert(
        "evt_4",
        ORG,
        "checks.email.requested",
        json!({"subject": "x", "text": "y"}),
    ))
    .unwrap();
    let mut injected = down();
    injected["subject"] = json!("down\r\nBcc: eve@example.net");
    testing::deliver::<EmailPlugin>(&alert("evt_5", ORG, "checks.email.requested", injected))
        .unwrap();
    // Only domain patterns and no alertsFrom: no sender for alerts.
    let mut config = smtp_config();
    config["allowedSenders"] = json!(["*@example.org"]);
    call(Method::Put, "/email/config", Some(&config));
    testing::deliver::<EmailPlugin>(&alert("evt_6", ORG, "checks.email.requested", down()))
        .unwrap();
    // Other event types are ignored.
    testing::deliver::<EmailPlugin>(&alert("evt_7", ORG, "checks.check.down", down())).unwrap();

    assert!(testing::jobs().is_empty());
    assert_eq!(ledger()["total"], 0);
    let warnings: Vec<String> = testing::logs().into_iter().map(|(_, line)| line).collect();
    for (event, why) in [
        ("evt_3", "no email configuration"),
        ("evt_4", "recipient"),
        ("evt_5", "subject"),
        ("evt_6", "no alertsFrom"),
    ] {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains(event) && w.contains(why)),
            "{event}: {warnings:?}"
        );
    }
}
