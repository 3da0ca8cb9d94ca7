//! Runs driven by due jobs on a settable clock: results and their timing,
//! states with retries, exactly one alert per change (email event, timeline
//! event, signed webhook from its own job, retried with backoff under one
//! id), explained assertion failures, run now, and the result history cap.

use plateau_sdk::{Method, testing, webhooks};
use serde_json::{Value, json};

use crate::host::{
    HOOK, Mode, START, TARGET, create, event_types, get, job, json, remote, run_due, send, set_mode,
};

const MINUTE: u64 = 60_000;

fn results(id: &str) -> Vec<Value> {
    get(&format!("/checks/{id}/results"))["items"]
        .as_array()
        .unwrap()
        .clone()
}

fn alerts(id: &str) -> Vec<Value> {
    get(&format!("/checks/{id}/alerts"))["items"]
        .as_array()
        .unwrap()
        .clone()
}

fn count(types: &[String], wanted: &str) -> usize {
    types.iter().filter(|t| *t == wanted).count()
}

#[test]
fn states_move_with_retries_and_alert_once_per_change() {
    testing::reset();
    testing::set_now(START);
    let target = remote();
    let check = create(json!({
        "name": "Home", "kind": "url", "url": TARGET, "intervalSeconds": 60, "retries": 1,
        "degradedAfterMs": 500,
        "alerts": {"emails": ["ops@example.com"], "webhookUrl": HOOK},
    }));
    let id = check["id"].as_str().unwrap().to_owned();
    let secret = check["alerts"]["webhookSecret"]
        .as_str()
        .unwrap()
        .to_owned();

    // The first run: up, recorded, no alert.
    assert_eq!(run_due(START), 1);
    let c = get(&format!("/checks/{id}"));
    assert_eq!(
        (c["status"].clone(), c["runs"].clone()),
        (json!("up"), json!(1))
    );
    let first = &results(&id)[0];
    assert_eq!(first["outcome"], "ok");
    assert_eq!(first["statusCode"], 200);
    assert_eq!(
        (first["latencyMs"].clone(), first["connectMs"].clone()),
        (json!(12), json!(1))
    );
    assert_eq!(first["scheduledFor"], "2023-11-14T22:13:20.000Z");
    assert_eq!(first["trigger"], "schedule");
    assert_eq!(count(&event_types(), "checks.check.up"), 1);
    assert!(alerts(&id).is_empty());

    // Down, with one retry: the first failure is tolerated, the second is down.
    set_mode(&target, Mode::Down);
    run_due(START + MINUTE);
    let c = get(&format!("/checks/{id}"));
    assert_eq!(
        (c["status"].clone(), c["consecutiveFailures"].clone()),
        (json!("up"), json!(1))
    );
    run_due(START + 2 * MINUTE);
    let c = get(&format!("/checks/{id}"));
    assert_eq!(c["status"], "down");
    let failed = &results(&id)[0];
    assert_eq!(failed["outcome"], "failed");
    assert_eq!(failed["failure"]["reason"], "status");
    assert_eq!(failed["failure"]["expected"], "200-299");
    assert_eq!(failed["failure"]["actual"], 503);
    assert_eq!(
        failed["message"],
        "status 503 is not among the expected 200-299"
    );
    run_due(START + 3 * MINUTE);
    run_due(START + 4 * MINUTE);

    // Exactly one down: one timeline event, one email request, one webhook.
    let types = event_types();
    assert_eq!(count(&types, "checks.check.down"), 1);
    assert_eq!(count(&types, "checks.email.requested"), 1);
    let email = testing::events()
        .into_iter()
        .find(|e| e.event_type == "checks.email.requested")
        .unwrap();
    let data: Value = serde_json::from_str(&email.data).unwrap();
    assert_eq!(data["to"], json!(["ops@example.com"]));
    assert_eq!(data["subject"], "Check \"Home\" is down");
    assert!(
        data["text"]
            .as_str()
            .unwrap()
            .contains("status 503 is not among the expected 200-299")
    );
    assert_eq!(email.organization_id.as_deref(), Some(crate::host::ORG));
    let hooks = target.borrow().hooks.clone();
    assert_eq!(hooks.len(), 1);
    let hook = &hooks[0];
    let header = |n: &str| hook.header_value(n).unwrap().to_owned();
    let timestamp: u64 = header("webhook-timestamp").parse().unwrap();
    assert!(webhooks::verify(
        &secret,
        &header("webhook-id"),
        timestamp,
        &hook.body,
        &header("webhook-signature")
    ));
    let body: Value = serde_json::from_slice(&hook.body).unwrap();
    assert_eq!(body["type"], "check.down");
    assert_eq!(body["data"]["check"]["id"], json!(id));
    assert_eq!(
        (
            body["data"]["status"].clone(),
            body["data"]["previousStatus"].clone()
        ),
        (json!("down"), json!("up"))
    );
    assert_eq!(body["data"]["result"]["statusCode"], 503);
    let listed = alerts(&id);
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["id"], json!(header("webhook-id")));
    assert_eq!(listed[0]["webhook"]["state"], "delivered");

    // Slow is degraded, then up again: one alert each.
    set_mode(&target, Mode::Slow(900));
    run_due(START + 5 * MINUTE);
    run_due(START + 6 * MINUTE);
    assert_eq!(get(&format!("/checks/{id}"))["status"], "degraded");
    assert_eq!(
        results(&id)[0]["message"],
        "responded in 900 ms, over the degraded threshold of 500 ms"
    );
    set_mode(&target, Mode::Up);
    run_due(START + 7 * MINUTE);
    run_due(START + 8 * MINUTE);
    assert_eq!(get(&format!("/checks/{id}"))["status"], "up");
    let kinds: Vec<String> = target
        .borrow()
        .hooks
        .iter()
        .map(|h| {
            serde_json::from_slice::<Value>(&h.body).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(kinds, ["check.down", "check.degraded", "check.up"]);
    let types = event_types();
    assert_eq!(
        (
            count(&types, "checks.check.degraded"),
            count(&types, "checks.check.up"),
            count(&types, "checks.email.requested")
        ),
        (1, 2, 3)
    );
    assert_eq!(get(&format!("/checks/{id}"))["runs"], 9);
}

#[test]
fn a_failed_webhook_is_retried_with_backoff_under_the_same_id() {
    testing::reset();
    testing::set_now(START);
    let target = remote();
    target.borrow_mut().hook_answers = vec![500, 502];
    set_mode(&target, Mode::Hang);
    let check = create(json!({
        "name": "Api", "kind": "url", "url": TARGET, "intervalSeconds": 300,
        "timeoutMs": 1000, "alerts": {"webhookUrl": HOOK},
    }));
    let id = check["id"].as_str().unwrap().to_owned();
    run_due(START);
    let failed = &results(&id)[0];
    assert_eq!(failed["failure"]["reason"], "timeout");
    assert_eq!(
        failed["message"],
        "no response within the timeout of 1000 ms"
    );
    let alert = &alerts(&id)[0];
    assert_eq!(alert["type"], "check.down");
    assert_eq!(alert["previousStatus"], Value::Null);
    assert_eq!(alert["webhook"]["state"], "pending");
    assert_eq!(alert["webhook"]["attempts"], 1);
    assert_eq!(alert["webhook"]["lastError"], "the receiver answered 500");
    // Next attempt 10 s later, then 20 s after that.
    let alert_job = format!("alert:{}", alert["id"].as_str().unwrap());
    assert_eq!(job(&alert_job).unwrap().at, START + 10_000);
    run_due(START + 10_000);
    assert_eq!(job(&alert_job).unwrap().at, START + 30_000);
    run_due(START + 30_000);
    assert!(job(&alert_job).is_none());
    let hooks = target.borrow().hooks.clone();
    assert_eq!(hooks.len(), 3);
    let ids: Vec<&str> = hooks
        .iter()
        .map(|h| h.header_value("webhook-id").unwrap())
        .collect();
    assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
    let alert = &alerts(&id)[0];
    assert_eq!(
        (
            alert["webhook"]["state"].clone(),
            alert["webhook"]["attempts"].clone()
        ),
        (json!("delivered"), json!(3))
    );
    // A redelivered job (jobs run at least once) sends nothing more.
    let again = plateau_sdk::jobs::Job {
        key: alert_job,
        organization_id: Some(crate::host::ORG.to_owned()),
        payload: serde_json::to_string(
            &json!({"alertId": alert["id"], "key": format!("alert:{id}:01")}),
        )
        .unwrap(),
        due: START,
        attempt: 2,
    };
    testing::run_job::<plateau_plugin_checks::ChecksPlugin>(&again).unwrap();
    assert_eq!(target.borrow().hooks.len(), 3);
}

#[test]
fn assertion_failures_are_explained() {
    testing::reset();
    testing::set_now(START);
    let target = remote();
    let check = create(json!({
        "name": "Items API", "kind": "api", "url": format!("{TARGET}?page=1"), "method": "POST",
        "body": "{\"q\": 1}", "headers": {"content-type": "application/json"},
        "intervalSeconds": 60,
        "assertions": [
            {"type": "statusCode", "operator": "equals", "value": 200},
            {"type": "header", "name": "content-type", "operator": "contains", "value": "json"},
            {"type": "jsonPath", "path": "$.data.items[0].id", "operator": "equals", "value": "a1"},
            {"type": "responseTime", "operator": "lessThan", "value": 1000},
        ],
    }));
    let id = check["id"].as_str().unwrap().to_owned();
    run_due(START);
    assert_eq!(results(&id)[0]["outcome"], "ok");
    set_mode(
        &target,
        Mode::Json(json!({"data": {"items": [{"id": "zz"}]}})),
    );
    let res = send(Method::Post, &format!("/checks/{id}/run"), None);
    assert_eq!(res.status, 200);
    let result = json(&res);
    assert_eq!(
        (result["trigger"].clone(), result["scheduledFor"].clone()),
        (json!("manual"), Value::Null)
    );
    assert_eq!(result["outcome"], "failed");
    assert_eq!(result["status"], "down");
    let failure = &result["failure"];
    assert_eq!(failure["reason"], "assertion");
    assert_eq!(
        failure["assertion"],
        json!({"index": 2, "type": "jsonPath", "path": "$.data.items[0].id", "operator": "equals", "value": "a1"})
    );
    assert_eq!(
        (failure["expected"].clone(), failure["actual"].clone()),
        (json!("equals \"a1\""), json!("zz"))
    );
    assert_eq!(
        failure["message"],
        "assertion 2 (jsonPath $.data.items[0].id equals \"a1\") failed: the actual value is \"zz\""
    );
    assert_eq!(results(&id)[0], result);
    // Missing paths say so.
    set_mode(&target, Mode::Json(json!({"data": {}})));
    let result = json(&send(Method::Post, &format!("/checks/{id}/run"), None));
    assert!(
        result["message"]
            .as_str()
            .unwrap()
            .ends_with("failed: the path selects nothing")
    );
}

#[test]
fn results_are_newest_first_paginated_and_capped() {
    testing::reset();
    testing::set_now(START);
    remote();
    let check =
        create(json!({"name": "Busy", "kind": "url", "url": TARGET, "intervalSeconds": 60}));
    let id = check["id"].as_str().unwrap().to_owned();
    for minute in 0..105 {
        run_due(START + minute * MINUTE);
    }
    let all = get(&format!("/checks/{id}/results"));
    assert_eq!(all["total"], 100);
    let runs: Vec<u64> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["run"].as_u64().unwrap())
        .collect();
    assert_eq!(runs, (6..=105).rev().collect::<Vec<u64>>());
    let page = get(&format!("/checks/{id}/results?limit=30"));
    assert_eq!(page["items"][0]["run"], 105);
    let cursor = plateau_sdk::percent_encode(page["nextCursor"].as_str().unwrap());
    let next = get(&format!("/checks/{id}/results?limit=30&cursor={cursor}"));
    assert_eq!(next["items"][0]["run"], 75);
    assert_eq!(get(&format!("/checks/{id}"))["runs"], 105);
    // Deleting the check removes its results.
    send(Method::Delete, &format!("/checks/{id}"), None);
    assert!(testing::jobs().is_empty());
}
