//! `/alarms`: threshold alarms on the series store. An alarm above a
//! count of plugin requests triggers once the requests are made; one
//! below it starts triggered and resolves; each change is one event on
//! the timeline, with an email requested for the listed addresses; bad
//! input names its field; another organisation sees nothing.

use std::time::Duration;

use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::{Value, json};

use crate::{create_org, eventually, start_with};

/// The alarm `id` once its state is `state`.
async fn in_state(c: &Client, id: &str, state: &str) -> Value {
    eventually(
        &format!("alarm {id} {state}"),
        Duration::from_secs(30),
        || async {
            let a = c.get(&format!("/alarms/{id}")).await.json();
            (a["state"] == state).then_some(a)
        },
    )
    .await
}

/// The events of `kind` about alarm `id`.
async fn events(c: &Client, kind: &str, id: &str) -> Vec<Value> {
    let page = c
        .get(&format!("/events?type={kind}&limit=100"))
        .await
        .json();
    page["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["resourceId"] == id)
        .cloned()
        .collect()
}

async fn create(c: &Client, body: Value) -> String {
    let r = c.post("/alarms", body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alarms_trigger_and_resolve() {
    let s =
        start_with(ServerOptions::new(Backend::Sqlite).env("PLATEAU_ALARMS_EVALUATE_MS", "200"))
            .await;
    let c = s.client();

    // Bad input names each field.
    let r = c.post("/alarms", json!({})).await;
    assert_eq!(r.status, 400, "{}", r.text());
    let problem = r.json();
    let fields: Vec<&str> = problem["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    for field in ["name", "metric", "comparison", "threshold"] {
        assert!(fields.contains(&field), "{field} in {fields:?}");
    }
    for (body, field) in [
        (json!({ "metric": "bandwidth_zettabytes" }), "metric"),
        (json!({ "comparison": "near" }), "comparison"),
        (json!({ "threshold": -1 }), "threshold"),
        (json!({ "windowDays": 0 }), "windowDays"),
        (json!({ "measure": "bytes" }), "measure"),
        (json!({ "notifyEmails": ["ops"] }), "notifyEmails[0]"),
    ] {
        let mut full = json!({
            "name": "x", "metric": "plugin_requests", "comparison": "above", "threshold": 1
        });
        for (k, v) in body.as_object().unwrap() {
            full[k] = v.clone();
        }
        let r = c.post("/alarms", full).await;
        assert_eq!(r.status, 400, "{field}: {}", r.text());
        assert_eq!(r.json()["errors"][0]["field"], field, "{}", r.text());
    }

    let r = c
        .post(
            "/alarms",
            json!({ "name": "x", "metric": "plugin_requests", "comparison": "above",
                    "threshold": 1, "projectId": "prj_nope" }),
        )
        .await;
    assert_eq!(r.status, 404, "{}", r.text());
    assert!(r.text().contains("projectId"), "{}", r.text());

    let above = create(
        &c,
        json!({ "name": "busy", "metric": "plugin_requests", "comparison": "above",
                "threshold": 4, "notifyEmails": ["ops@example.com"] }),
    )
    .await;
    let below = create(
        &c,
        json!({ "name": "quiet", "metric": "plugin_requests", "comparison": "below",
                "threshold": 3 }),
    )
    .await;
    let first = c.get(&format!("/alarms/{above}")).await.json();
    assert_eq!(first["state"], "pending", "{first}");
    assert_eq!(first["windowDays"], 1);
    assert_eq!(first["measure"], "quantity");

    // Nothing has called a plugin yet: one is fine, the other not.
    let ok = in_state(&c, &above, "ok").await;
    assert_eq!(ok["value"], 0.0, "{ok}");
    in_state(&c, &below, "triggered").await;

    // Plugin requests reach the series store within the meter's flush.
    for _ in 0..6 {
        assert_eq!(c.get("/flags").await.status, 200);
    }
    let triggered = in_state(&c, &above, "triggered").await;
    assert!(triggered["value"].as_f64().unwrap() > 4.0, "{triggered}");
    in_state(&c, &below, "ok").await;

    let fired = events(&c, "alarm.triggered", &above).await;
    assert_eq!(fired.len(), 1, "{fired:?}");
    assert_eq!(fired[0]["data"]["threshold"], 4.0);
    assert_eq!(events(&c, "alarm.triggered", &below).await.len(), 1);
    assert_eq!(events(&c, "alarm.resolved", &below).await.len(), 1);
    assert!(events(&c, "alarm.resolved", &above).await.is_empty());
    let mail = events(&c, "alarms.email.requested", &above).await;
    assert_eq!(mail.len(), 1, "{mail:?}");
    assert_eq!(mail[0]["data"]["to"], json!(["ops@example.com"]));
    // No addresses, no email.
    assert!(
        events(&c, "alarms.email.requested", &below)
            .await
            .is_empty()
    );

    // A change starts the evaluation over; a disabled alarm stays put.
    let r = c
        .patch(
            &format!("/alarms/{above}"),
            json!({ "threshold": 1e9, "enabled": false }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["state"], "pending");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        c.get(&format!("/alarms/{above}")).await.json()["state"],
        "pending"
    );

    // Another organisation sees none of it.
    let other = c.with_token(&create_org(&s, "alarms-other", "free").await);
    assert_eq!(other.get(&format!("/alarms/{above}")).await.status, 404);
    assert_eq!(other.get("/alarms").await.json()["items"], json!([]));
    assert_eq!(
        other
            .patch(&format!("/alarms/{above}"), json!({ "enabled": true }))
            .await
            .status,
        404
    );

    let r = c.delete(&format!("/alarms/{below}")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(c.get(&format!("/alarms/{below}")).await.status, 404);
    let listed = c.get("/alarms").await.json();
    assert_eq!(listed["items"].as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(events(&c, "alarm.deleted", &below).await.len(), 1);
}
