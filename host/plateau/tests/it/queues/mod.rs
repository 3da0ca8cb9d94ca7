//! The built-in queues plugin over HTTP: queue management, send, receive,
//! acknowledge, visibility, delays, deduplication, dead letters and
//! redrive on a manual clock, tenant isolation; (in [`history`]) a
//! Jepsen-style history test across a SIGKILL of the server; and (in
//! [`receive`]) concurrent receivers and long polling.

mod history;
mod receive;

use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::{Value, json};

use crate::plugins::admin;
use crate::{advance, create_org, mint, start_with};

crate::on_both_backends!(
    queues_deliver_at_least_once_with_receipts_delays_and_dedupe,
    dead_letters_redrive_purge_and_isolation,
);

fn options(backend: Backend) -> ServerOptions {
    ServerOptions::new(backend).env("PLATEAU_CLOCK", "manual")
}

/// Receives up to `max` messages; the messages.
async fn receive(c: &Client, queue: &str, body: Value) -> Vec<Value> {
    let r = c.post(&format!("/queues/{queue}/receive"), body).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()["messages"].as_array().unwrap().clone()
}

async fn stats(c: &Client, queue: &str) -> Value {
    let r = c.get(&format!("/queues/{queue}/stats")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn bodies(messages: &[Value]) -> Vec<&str> {
    let mut b: Vec<&str> = messages
        .iter()
        .map(|m| m["body"].as_str().unwrap())
        .collect();
    b.sort_unstable();
    b
}

async fn queues_deliver_at_least_once_with_receipts_delays_and_dedupe(backend: Backend) {
    let s = start_with(options(backend)).await;
    let c = s.client();
    let admin = admin(&s).await;

    // Create, validate, read, change.
    let r = c
        .post(
            "/queues",
            json!({ "name": "jobs", "visibilityTimeoutSeconds": 30 }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.json()["retentionSeconds"], 345_600);
    assert_eq!(
        c.post("/queues", json!({ "name": "jobs" })).await.status,
        409
    );
    let r = c
        .post(
            "/queues",
            json!({ "name": "bad name", "visibilityTimeoutSeconds": 50_000, "deadLetterQueue": "nope" }),
        )
        .await;
    assert_eq!((r.status, r.code().as_str()), (400, "validation_failed"));
    let problem = r.json();
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(
        fields,
        ["name", "visibilityTimeoutSeconds", "maxReceives"],
        "{}",
        r.text()
    );
    let r = c
        .patch("/queues/jobs", json!({ "visibilityTimeoutSeconds": 60 }))
        .await;
    assert_eq!(
        (r.status, r.json()["visibilityTimeoutSeconds"].clone()),
        (200, json!(60))
    );
    assert_eq!(c.get("/queues/missing").await.status, 404);
    assert_eq!(c.get("/queues").await.json()["total"], 1);

    // Send one and a batch; a delayed one; a deduplicated one.
    let r = c
        .post(
            "/queues/jobs/messages",
            json!({ "body": "a", "dedupeId": "once" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let first = r.json()["id"].as_str().unwrap().to_owned();
    let r = c
        .post(
            "/queues/jobs/messages",
            json!({ "body": "a again", "dedupeId": "once" }),
        )
        .await;
    assert_eq!(
        (
            r.status,
            r.json()["id"].as_str(),
            r.json()["duplicate"].clone()
        ),
        (200, Some(first.as_str()), json!(true)),
        "a duplicate within 5 minutes is dropped"
    );
    let r = c
        .post(
            "/queues/jobs/messages/batch",
            json!({ "messages": [{ "body": "b" }, { "body": "c" }, { "body": "later", "delaySeconds": 120 }] }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["messages"].as_array().unwrap().len(), 3);
    let too_big = "x".repeat(256 * 1024 + 1);
    let r = c
        .post("/queues/jobs/messages", json!({ "body": too_big }))
        .await;
    assert_eq!((r.status, r.code().as_str()), (400, "validation_failed"));
    let r = c
        .post(
            "/queues/jobs/messages",
            json!({ "body": "x", "delaySeconds": 901 }),
        )
        .await;
    assert_eq!(r.status, 400);
    let st = stats(&c, "jobs").await;
    assert_eq!(
        (st["visible"].clone(), st["delayed"].clone()),
        (json!(3), json!(1)),
        "{st}"
    );

    // Receive all visible: the delayed one stays hidden.
    let got = receive(&c, "jobs", json!({ "maxMessages": 10 })).await;
    assert_eq!(bodies(&got), ["a", "b", "c"]);
    assert!(
        receive(&c, "jobs", json!({ "maxMessages": 10 }))
            .await
            .is_empty()
    );
    let st = stats(&c, "jobs").await;
    assert_eq!(
        (st["inFlight"].clone(), st["visible"].clone()),
        (json!(3), json!(0)),
        "{st}"
    );
    let handle = |body: &str| {
        got.iter().find(|m| m["body"] == body).unwrap()["receiptHandle"]
            .as_str()
            .unwrap()
            .to_owned()
    };
    // Acknowledge one, then a batch with one bogus handle.
    let r = c
        .post("/queues/jobs/ack", json!({ "receiptHandle": handle("a") }))
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = c
        .post("/queues/jobs/ack", json!({ "receiptHandle": handle("a") }))
        .await;
    assert_eq!(r.status, 409, "an acknowledged message is gone");
    let r = c
        .post("/queues/jobs/ack", json!({ "receiptHandle": "nonsense" }))
        .await;
    assert_eq!(r.status, 400);

    // The visibility timeout (60 s) passes: b and c come back, with new
    // handles; the old handle of b no longer acknowledges.
    advance(&admin, 61_000).await;
    let again = receive(
        &c,
        "jobs",
        json!({ "maxMessages": 10, "visibilityTimeoutSeconds": 5 }),
    )
    .await;
    assert_eq!(bodies(&again), ["b", "c"]);
    assert!(again.iter().all(|m| m["receives"] == 2));
    let r = c
        .post(
            "/queues/jobs/ack",
            json!({ "receiptHandles": [handle("b")] }),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["failed"][0]["code"], "conflict", "{}", r.text());
    let handles: Vec<&str> = again
        .iter()
        .map(|m| m["receiptHandle"].as_str().unwrap())
        .collect();
    // Change visibility: c visible at once, b hidden for an hour.
    let c_handle = again.iter().find(|m| m["body"] == "c").unwrap()["receiptHandle"].clone();
    let b_handle = again.iter().find(|m| m["body"] == "b").unwrap()["receiptHandle"].clone();
    let r = c
        .post(
            "/queues/jobs/visibility",
            json!({ "receiptHandle": c_handle, "visibilityTimeoutSeconds": 0 }),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let r = c
        .post(
            "/queues/jobs/visibility",
            json!({ "receiptHandle": b_handle, "visibilityTimeoutSeconds": 3600 }),
        )
        .await;
    assert_eq!(r.status, 204, "{}", r.text());
    let now = receive(
        &c,
        "jobs",
        json!({ "maxMessages": 10, "visibilityTimeoutSeconds": 3600 }),
    )
    .await;
    assert_eq!(bodies(&now), ["c"]);
    // The delay of `later` (120 s) has passed by now.
    advance(&admin, 60_000).await;
    let now2 = receive(&c, "jobs", json!({ "maxMessages": 10 })).await;
    assert_eq!(bodies(&now2), ["later"]);
    let r = c
        .post(
            "/queues/jobs/ack",
            json!({ "receiptHandles": [handles[0], handles[1], now[0]["receiptHandle"], now2[0]["receiptHandle"]] }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    // b's handle is still its latest; c's earlier handle is stale.
    assert_eq!(
        r.json()["acked"].as_array().unwrap().len(),
        3,
        "{}",
        r.text()
    );
    let st = stats(&c, "jobs").await;
    assert_eq!(st["total"], 0, "{st}");

    // Past 5 minutes the dedupe id sends again.
    advance(&admin, 5 * 60_000).await;
    let r = c
        .post(
            "/queues/jobs/messages",
            json!({ "body": "a", "dedupeId": "once" }),
        )
        .await;
    assert_eq!(
        (r.status, r.json()["duplicate"].clone()),
        (201, json!(false))
    );

    // Scopes: a read token cannot receive.
    let reader = s
        .anonymous()
        .with_token(&mint(&s, json!({ "scopes": ["queues:read"] })).await);
    assert_eq!(reader.get("/queues/jobs/stats").await.status, 200);
    let r = reader.post("/queues/jobs/receive", json!({})).await;
    assert_eq!(
        (r.status, r.json()["scope"].as_str()),
        (403, Some("queues:write"))
    );

    // Changes are in the audit log.
    let audit = c.get("/audit?resourceType=queue").await.json();
    assert_eq!(audit["total"], 2, "{audit}");
}

async fn dead_letters_redrive_purge_and_isolation(backend: Backend) {
    let s = start_with(options(backend)).await;
    let c = s.client();
    let admin = admin(&s).await;
    assert_eq!(
        c.post("/queues", json!({ "name": "dlq" })).await.status,
        201
    );
    let r = c
        .post(
            "/queues",
            json!({ "name": "work", "visibilityTimeoutSeconds": 10, "maxReceives": 2, "deadLetterQueue": "dlq" }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        c.post("/queues/work/messages", json!({ "body": "poison" }))
            .await
            .status,
        201
    );
    // Received twice without an ack; the third receive moves it.
    for _ in 0..2 {
        assert_eq!(receive(&c, "work", json!({})).await.len(), 1);
        advance(&admin, 11_000).await;
    }
    assert!(receive(&c, "work", json!({})).await.is_empty());
    let st = stats(&c, "work").await;
    assert_eq!(
        (st["total"].clone(), st["deadLettered"].clone()),
        (json!(0), json!(1)),
        "{st}"
    );
    let dead = receive(&c, "dlq", json!({ "visibilityTimeoutSeconds": 0 })).await;
    assert_eq!(bodies(&dead), ["poison"]);

    // Redrive sends it back to `work`, received afresh.
    let r = c.post("/queues/dlq/redrive", json!({})).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        (r.json()["moved"].clone(), r.json()["remaining"].clone()),
        (json!(1), json!(false))
    );
    let back = receive(&c, "work", json!({})).await;
    assert_eq!(
        (bodies(&back), back[0]["receives"].clone()),
        (vec!["poison"], json!(1))
    );

    // Purge empties at once.
    let batch: Vec<Value> = (0..10)
        .map(|i| json!({ "body": format!("m{i}") }))
        .collect();
    let r = c
        .post("/queues/work/messages/batch", json!({ "messages": batch }))
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(c.post("/queues/work/purge", json!({})).await.status, 204);
    assert_eq!(stats(&c, "work").await["total"], 0);
    advance(&admin, 60_000).await;
    assert!(
        receive(&c, "work", json!({ "maxMessages": 10 }))
            .await
            .is_empty()
    );

    // Another organisation sees none of it, and has its own `work`.
    let other = s
        .anonymous()
        .with_token(&create_org(&s, "other", "free").await);
    assert_eq!(other.get("/queues/work").await.status, 404);
    assert_eq!(other.get("/queues").await.json()["total"], 0);
    assert_eq!(
        other
            .post("/queues", json!({ "name": "work" }))
            .await
            .status,
        201
    );
    assert!(receive(&other, "work", json!({})).await.is_empty());

    // Deleting a queue takes its messages; a new queue of the name is empty.
    c.post("/queues/work/messages", json!({ "body": "left" }))
        .await;
    assert_eq!(c.delete("/queues/work").await.status, 204);
    assert_eq!(c.get("/queues/work").await.status, 404);
    assert_eq!(
        c.post("/queues", json!({ "name": "work" })).await.status,
        201
    );
    assert!(receive(&c, "work", json!({})).await.is_empty());
}
