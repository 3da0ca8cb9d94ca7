//! `/anomalies`: monitors over six weeks of a weekly series written into
//! the series store find the spike and the dip injected into the last
//! week, and nothing in the same series without them; each anomaly is
//! one `anomaly.detected` event, with an email requested for the listed
//! addresses; a day is judged once; bad input names its field; another
//! organisation sees nothing.

use std::time::Duration;

use plateau_testkit::{Backend, Client, ServerOptions};
use serde_json::{Value, json};

use crate::spend::{events_of, inject};
use crate::{create_org, eventually, start_with};

/// Six weeks of a weekly pattern (two quiet days in seven) with a little
/// noise, `days_ago` 42 to 1.
fn weeks() -> Vec<(i64, f64)> {
    (1..=42)
        .map(|ago| {
            let quiet = if ago % 7 < 2 { 400.0 } else { 0.0 };
            let noise = ((ago * 37) % 11 - 5) as f64 * 4.0;
            (ago, 1000.0 - quiet + noise)
        })
        .collect()
}

async fn monitor(c: &Client, body: Value) -> Value {
    let r = c.post("/anomalies", body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn monitors_find_what_was_injected() {
    let s =
        start_with(ServerOptions::new(Backend::Sqlite).env("PLATEAU_ALARMS_EVALUATE_MS", "200"))
            .await;
    let c = s
        .client()
        .with_token(&create_org(&s, "watched", "free").await);
    let org = c.get("/me").await.json()["organization"]["id"]
        .as_str()
        .unwrap()
        .to_owned();

    // Bad input names each field.
    let r = c
        .post("/anomalies", json!({ "metric": "app_requests" }))
        .await;
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["errors"][0]["field"], "name", "{}", r.text());
    for (body, field) in [
        (json!({ "metric": "bandwidth_zettabytes" }), "metric"),
        (json!({ "sensitivity": "extreme" }), "sensitivity"),
        (json!({ "notifyEmails": ["ops"] }), "notifyEmails[0]"),
    ] {
        let mut full = json!({ "name": "x", "metric": "app_requests" });
        for (k, v) in body.as_object().unwrap() {
            full[k] = v.clone();
        }
        let r = c.post("/anomalies", full).await;
        assert_eq!(r.status, 400, "{field}: {}", r.text());
        assert_eq!(r.json()["errors"][0]["field"], field, "{}", r.text());
    }

    let busy = weeks()
        .into_iter()
        .map(|(ago, q)| match ago {
            1 => (ago, q + 1500.0),
            4 => (ago, 100.0),
            _ => (ago, q),
        })
        .collect::<Vec<_>>();
    inject(&s, &org, None, "cch_busy", "app_requests", &busy).await;
    inject(&s, &org, None, "cch_calm", "app_requests", &weeks()).await;
    let watched = monitor(
        &c,
        json!({ "name": "busy requests", "metric": "app_requests", "resourceId": "cch_busy",
                "notifyEmails": ["ops@example.com"] }),
    )
    .await;
    assert_eq!(watched["sensitivity"], "medium");
    assert_eq!(watched["checkedDay"], Value::Null);
    let watched = watched["id"].as_str().unwrap().to_owned();
    let calm = monitor(
        &c,
        json!({ "name": "calm requests", "metric": "app_requests", "resourceId": "cch_calm",
                "sensitivity": "high" }),
    )
    .await["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let within = Duration::from_secs(30);
    for id in [&watched, &calm] {
        eventually(&format!("monitor {id} judged"), within, || async {
            let m = c.get(&format!("/anomalies/monitors/{id}")).await.json();
            m["checkedDay"].as_str().map(str::to_owned)
        })
        .await;
    }
    let found = c
        .get(&format!("/anomalies?monitorId={watched}"))
        .await
        .json();
    let items = found["items"].as_array().unwrap();
    let mut seen: Vec<(String, String)> = items
        .iter()
        .map(|a| {
            (
                a["direction"].as_str().unwrap().to_owned(),
                a["day"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    seen.sort();
    eprintln!(
        "found {seen:?}; calm: {}",
        c.get(&format!("/anomalies?monitorId={calm}")).await.text()
    );
    assert_eq!(seen.len(), 2, "{found}");
    assert_eq!(
        (seen[0].0.as_str(), seen[1].0.as_str()),
        ("dip", "spike"),
        "{found}"
    );
    assert!(seen[0].1 < seen[1].1, "the dip came first: {seen:?}");
    let spike = items.iter().find(|a| a["direction"] == "spike").unwrap();
    assert!(spike["score"].as_f64().unwrap() > 3.5, "{spike}");
    assert!(spike["value"].as_f64().unwrap() > spike["expected"].as_f64().unwrap() + 1000.0);
    let calm_found = c.get(&format!("/anomalies?monitorId={calm}")).await.json();
    assert_eq!(calm_found["items"], json!([]), "{calm_found}");

    let detected = events_of(&c, "anomaly.detected", &watched).await;
    assert_eq!(detected.len(), 2, "{detected:?}");
    let mail = events_of(&c, "anomalies.email.requested", &watched).await;
    assert_eq!(mail.len(), 1, "one email for the span judged: {mail:?}");
    assert_eq!(mail[0]["data"]["to"], json!(["ops@example.com"]));
    assert!(
        events_of(&c, "anomalies.email.requested", &calm)
            .await
            .is_empty()
    );

    // Judged days are not judged again; a change keeps the place.
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(events_of(&c, "anomaly.detected", &watched).await.len(), 2);
    let r = c
        .patch(
            &format!("/anomalies/monitors/{watched}"),
            json!({ "sensitivity": "low" }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["checkedDay"], seen[1].1.as_str());

    // Another organisation sees none of it.
    let other = c.with_token(&create_org(&s, "watched-other", "free").await);
    assert_eq!(
        other
            .get(&format!("/anomalies/monitors/{watched}"))
            .await
            .status,
        404
    );
    assert_eq!(other.get("/anomalies").await.json()["items"], json!([]));
    assert_eq!(
        other.get("/anomalies/monitors").await.json()["items"],
        json!([])
    );

    let r = c.delete(&format!("/anomalies/monitors/{calm}")).await;
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        c.get("/anomalies/monitors").await.json()["items"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // What a deleted monitor found stays listed; the rest too.
    assert_eq!(
        c.get("/anomalies").await.json()["items"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}
