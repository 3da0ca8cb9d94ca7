//! Receives as kv@0.4.0 lets them run: concurrent receivers claim distinct
//! messages (a lost race skips to the next candidate, never a 409), and
//! long polling (`waitSeconds`) answers a message sent while it waits, or
//! nothing once the wait is over.

use std::collections::HashSet;
use std::time::Duration;

use plateau_testkit::{Backend, Client};
use serde_json::{Value, json};

use super::{options, receive};
use crate::start_with;

crate::on_both_backends!(concurrent_receivers_and_long_polls);

/// Receives until the queue answers empty; every receive answers 200.
async fn drain(c: Client) -> Vec<String> {
    let mut ids = Vec::new();
    loop {
        let r = c
            .post("/queues/work/receive", json!({ "maxMessages": 10 }))
            .await;
        assert_eq!(r.status, 200, "a lost race is not a conflict: {}", r.text());
        let messages = r.json()["messages"].as_array().unwrap().clone();
        if messages.is_empty() {
            return ids;
        }
        ids.extend(
            messages
                .iter()
                .map(|m| m["id"].as_str().unwrap().to_owned()),
        );
    }
}

async fn concurrent_receivers_and_long_polls(backend: Backend) {
    let s = start_with(options(backend)).await;
    let c = s.client();
    for name in ["work", "lp"] {
        let r = c
            .post(
                "/queues",
                json!({ "name": name, "visibilityTimeoutSeconds": 600 }),
            )
            .await;
        assert_eq!(r.status, 201, "{}", r.text());
    }

    // 200 messages, 8 receivers at once: each message is received exactly
    // once (the manual clock never ends a visibility timeout).
    let mut sent = HashSet::new();
    for batch in 0..20 {
        let messages: Vec<Value> = (0..10)
            .map(|i| json!({ "body": format!("m{batch}-{i}") }))
            .collect();
        let r = c
            .post(
                "/queues/work/messages/batch",
                json!({ "messages": messages }),
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.text());
        for m in r.json()["messages"].as_array().unwrap() {
            sent.insert(m["id"].as_str().unwrap().to_owned());
        }
    }
    let receivers: Vec<_> = (0..8).map(|_| tokio::spawn(drain(c.clone()))).collect();
    let mut received = Vec::new();
    for receiver in receivers {
        received.extend(receiver.await.unwrap());
    }
    let distinct: HashSet<String> = received.iter().cloned().collect();
    assert_eq!(
        distinct.len(),
        received.len(),
        "a message was received twice within its visibility timeout"
    );
    assert_eq!(distinct, sent, "every message was received");

    // A long poll started on an empty queue answers the message sent
    // while it waits.
    let polling = {
        let c = c.clone();
        tokio::spawn(async move {
            receive(&c, "lp", json!({ "maxMessages": 10, "waitSeconds": 20 })).await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let r = c
        .post("/queues/lp/messages", json!({ "body": "while waiting" }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let got = polling.await.unwrap();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0]["body"], "while waiting");

    // On an empty queue it answers an empty list once the wait is over.
    let got = receive(&c, "lp", json!({ "waitSeconds": 1 })).await;
    assert!(got.is_empty(), "{got:?}");

    let r = c
        .post("/queues/lp/receive", json!({ "waitSeconds": 21 }))
        .await;
    assert_eq!((r.status, r.code().as_str()), (400, "validation_failed"));
    assert_eq!(r.json()["errors"][0]["field"], "waitSeconds");
}
