//! Heartbeat checks: the public ping URL, the job due when a ping is
//! overdue (interval plus grace), down with an alert, up again on a ping.

use plateau_plugin_checks::ChecksPlugin;
use plateau_sdk::{Caller, Method, Request, testing};
use serde_json::{Value, json};

use crate::host::{START, create, event_types, get, job, json, run_due, send};

fn ping(url: &str, method: Method) -> plateau_sdk::Response {
    let path = url.strip_prefix("http://plateau.test/api/v1").unwrap();
    testing::handle::<ChecksPlugin>(&Request::new(method, path).with_caller(Caller::anonymous()))
}

#[test]
fn missed_pings_go_down_and_a_ping_recovers() {
    testing::reset();
    testing::set_now(START);
    let check = create(json!({
        "name": "Nightly backup", "kind": "heartbeat", "intervalSeconds": 3600, "graceSeconds": 600,
        "alerts": {"emails": ["ops@example.com"]},
    }));
    let id = check["id"].as_str().unwrap().to_owned();
    let url = check["pingUrl"].as_str().unwrap().to_owned();
    assert!(
        url.starts_with("http://plateau.test/api/v1/checks/ping/"),
        "{url}"
    );
    assert_eq!(check["graceSeconds"], 600);
    assert_eq!(check.get("url"), None);
    // Due when the first ping is overdue.
    let key = format!("check:{id}");
    assert_eq!(job(&key).unwrap().at, START + 4_200_000);

    // A ping within the window: up, and the deadline moves.
    testing::set_now(START + 1_000_000);
    let res = ping(&url, Method::Post);
    assert_eq!(
        (res.status, json(&res)),
        (200, json!({"ok": true, "recorded": true}))
    );
    assert_eq!(job(&key).unwrap().at, START + 1_000_000 + 4_200_000);
    let c = get(&format!("/checks/{id}"));
    assert_eq!(
        (c["status"].clone(), c["lastPingAt"].clone()),
        (json!("up"), json!("2023-11-14T22:30:00.000Z"))
    );

    // Nothing overdue yet: the job is not due.
    assert_eq!(run_due(START + 5_000_000), 0);
    // Overdue: down, once, with the reason.
    run_due(START + 5_200_000);
    let c = get(&format!("/checks/{id}"));
    assert_eq!(c["status"], "down");
    let last = &c["lastResult"];
    assert_eq!(last["failure"]["reason"], "missedPing");
    assert_eq!(
        last["message"],
        "the last ping came at 2023-11-14T22:30:00.000Z; a ping is expected every 3600 s with 600 s of grace"
    );
    run_due(START + 5_200_000 + 3_600_000);
    assert_eq!(get(&format!("/checks/{id}"))["consecutiveFailures"], 2);
    let types = event_types();
    assert_eq!(
        types.iter().filter(|t| *t == "checks.check.down").count(),
        1
    );
    assert_eq!(
        types
            .iter()
            .filter(|t| *t == "checks.email.requested")
            .count(),
        1
    );

    // A ping brings it back up, with a recovery alert.
    testing::set_now(START + 9_000_000);
    assert_eq!(ping(&url, Method::Get).status, 200);
    assert_eq!(get(&format!("/checks/{id}"))["status"], "up");
    let results = get(&format!("/checks/{id}/results"));
    let triggers: Vec<&str> = results["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["trigger"].as_str().unwrap())
        .collect();
    assert_eq!(triggers, ["ping", "schedule", "schedule", "ping"]);
    assert_eq!(
        event_types()
            .iter()
            .filter(|t| *t == "checks.email.requested")
            .count(),
        2
    );

    // Unknown tokens are 404; a deleted check's URL stops working.
    let wrong = format!("http://plateau.test/api/v1/checks/ping/{}", "A".repeat(43));
    assert_eq!(ping(&wrong, Method::Get).status, 404);
    assert_eq!(
        send(Method::Delete, &format!("/checks/{id}"), None).status,
        204
    );
    assert_eq!(ping(&url, Method::Get).status, 404);
}

#[test]
fn a_new_heartbeat_never_pinged_goes_down_after_its_window() {
    testing::reset();
    testing::set_now(START);
    let check = create(json!({"name": "Cron", "kind": "heartbeat", "intervalSeconds": 300}));
    let id = check["id"].as_str().unwrap().to_owned();
    // Default grace: 60 s.
    run_due(START + 359_999);
    assert_eq!(get(&format!("/checks/{id}"))["status"], Value::Null);
    run_due(START + 360_000);
    let c = get(&format!("/checks/{id}"));
    assert_eq!(c["status"], "down");
    assert!(
        c["lastResult"]["message"]
            .as_str()
            .unwrap()
            .starts_with("no ping came since the check was created")
    );
}
