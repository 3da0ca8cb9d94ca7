//! Pings, deadlines and alerts, on a frozen clock: each test moves the
//! clock, runs the jobs that are due like the host would, and looks at the
//! state, the timeline events, the email requests and the webhooks sent.

use std::cell::RefCell;
use std::rc::Rc;

use plateau_sdk::outbound::{HttpError, IncomingResponse, OutgoingRequest};
use plateau_sdk::{Method, testing, webhooks};
use serde_json::{Value, json};

use crate::host::{create, events, get, json, ping, run_due, scheduled, send};
use crate::{ms, rfc};

const T0: &str = "2026-01-10T12:00:00Z";

/// Receives outbound requests; answers each with the next status.
fn receiver(statuses: Vec<u16>) -> Rc<RefCell<Vec<OutgoingRequest>>> {
    let seen = Rc::new(RefCell::new(Vec::new()));
    let log = seen.clone();
    let statuses = RefCell::new(statuses.into_iter());
    testing::mock_http(
        move |req: &OutgoingRequest| -> Result<IncomingResponse, HttpError> {
            log.borrow_mut().push(req.clone());
            let status = statuses.borrow_mut().next().unwrap_or(200);
            Ok(IncomingResponse {
                status,
                headers: vec![],
                body: vec![],
                body_truncated: false,
                connect_ms: 1,
                total_ms: 2,
            })
        },
    );
    seen
}

/// A heartbeat every 60 s with 60 s of grace, alerting by email and webhook.
fn watched() -> (String, String, String) {
    testing::reset();
    testing::set_now(ms(T0));
    let created = create(json!({
        "name": "billing sync",
        "periodSeconds": 60,
        "graceSeconds": 60,
        "alertEmails": ["ops@example.com", "oncall@example.com"],
        "webhookUrl": "https://hooks.example.com/hb",
    }));
    (
        created["id"].as_str().unwrap().to_owned(),
        created["pingUrl"].as_str().unwrap().to_owned(),
        created["webhookSecret"].as_str().unwrap().to_owned(),
    )
}

fn at(offset_s: u64) -> u64 {
    ms(T0) + offset_s * 1000
}

/// Checks a delivered webhook like a Standard Webhooks receiver; returns its body.
fn verified(req: &OutgoingRequest, secret: &str) -> Value {
    assert_eq!(req.method, "POST");
    assert_eq!(req.url, "https://hooks.example.com/hb");
    let id = req.header_value("webhook-id").unwrap();
    let timestamp: u64 = req
        .header_value("webhook-timestamp")
        .unwrap()
        .parse()
        .unwrap();
    let signature = req.header_value("webhook-signature").unwrap();
    assert!(
        webhooks::verify(secret, id, timestamp, &req.body, signature),
        "signature of {id}"
    );
    serde_json::from_slice(&req.body).unwrap()
}

#[test]
fn up_late_down_up_alerts_once_per_change() {
    let (id, url, secret) = watched();
    let hooks = receiver(vec![]);
    assert!(scheduled().is_empty(), "a new heartbeat has no deadline");
    assert_eq!(ping(Method::Get, &url).status, 200);
    assert_eq!(get(&id)["state"], "up");
    assert_eq!(get(&id)["expectedAt"], rfc(at(60)));
    assert_eq!(get(&id)["downAt"], rfc(at(120)));
    assert_eq!(scheduled(), [(format!("hb:{id}"), at(60))]);

    // Nothing before the deadline; late at it, without an alert.
    run_due(at(59));
    assert_eq!(get(&id)["state"], "up");
    run_due(at(60));
    assert_eq!(get(&id)["state"], "late");
    assert_eq!(events("heartbeats.heartbeat.late").len(), 1);
    assert!(events("heartbeats.email.requested").is_empty());
    assert_eq!(scheduled(), [(format!("hb:{id}"), at(120))]);

    // Down after the grace: one email request, one webhook.
    let ran = run_due(at(120));
    assert!(ran.iter().all(|(_, r)| r.is_ok()), "{ran:?}");
    assert_eq!(get(&id)["state"], "down");
    let emails = events("heartbeats.email.requested");
    assert_eq!(emails.len(), 1);
    assert_eq!(
        emails[0].1["to"],
        json!(["ops@example.com", "oncall@example.com"])
    );
    assert_eq!(emails[0].1["subject"], "Heartbeat \"billing sync\" is down");
    assert!(
        emails[0].1["text"]
            .as_str()
            .unwrap()
            .contains("plus 60 s of grace")
    );
    assert_eq!(hooks.borrow().len(), 1);
    let body = verified(&hooks.borrow()[0], &secret);
    assert_eq!(body["type"], "heartbeats.heartbeat.down");
    assert_eq!(body["data"]["id"], id.as_str());
    assert_eq!(body["data"]["previousState"], "late");
    assert_eq!(body["data"]["cause"], "graceExpired");
    assert!(scheduled().is_empty(), "down waits for a ping");

    // Time passes, duplicates of the deadline job run: still one alert.
    run_due(at(10_000));
    let job = plateau_sdk::jobs::Job {
        key: format!("hb:{id}"),
        organization_id: Some(crate::host::ORG.to_owned()),
        payload: id.clone(),
        due: at(120),
        attempt: 2,
    };
    testing::run_job::<plateau_plugin_heartbeats::HeartbeatsPlugin>(&job).unwrap();
    assert_eq!(events("heartbeats.email.requested").len(), 1);
    assert_eq!(events("heartbeats.heartbeat.down").len(), 1);
    assert_eq!(hooks.borrow().len(), 1);

    // A success ping recovers: one more email and webhook.
    testing::set_now(at(10_001));
    assert_eq!(ping(Method::Post, &url).status, 200);
    run_due(at(10_001));
    assert_eq!(get(&id)["state"], "up");
    let emails = events("heartbeats.email.requested");
    assert_eq!(emails.len(), 2);
    assert_eq!(
        emails[1].1["subject"],
        "Heartbeat \"billing sync\" is up again"
    );
    assert_eq!(hooks.borrow().len(), 2);
    let body = verified(&hooks.borrow()[1], &secret);
    assert_eq!(body["type"], "heartbeats.heartbeat.up");
    assert_ne!(
        hooks.borrow()[0].header_value("webhook-id"),
        hooks.borrow()[1].header_value("webhook-id")
    );
    assert_eq!(
        events("heartbeats.heartbeat.up").len(),
        2,
        "first ping and recovery"
    );
}

#[test]
fn a_failing_receiver_is_retried_without_deciding_again() {
    let (id, url, secret) = watched();
    let hooks = receiver(vec![503, 500]);
    testing::set_now(at(0));
    ping(Method::Get, &format!("{url}/fail"));
    assert_eq!(get(&id)["state"], "down");
    let ran = run_due(at(0));
    assert_eq!(ran.len(), 1);
    assert!(
        ran[0].1.as_ref().unwrap_err().contains("answered 503"),
        "{ran:?}"
    );
    // The host retries the same job with backoff; the message stays the same.
    let ran = run_due(at(1));
    assert!(
        ran[0].1.as_ref().unwrap_err().contains("answered 500"),
        "{ran:?}"
    );
    let ran = run_due(at(3));
    assert_eq!(ran.len(), 1);
    assert!(ran[0].1.is_ok(), "{ran:?}");
    assert!(run_due(at(10)).is_empty(), "delivered, the job is finished");
    let hooks = hooks.borrow();
    assert_eq!(hooks.len(), 3);
    let ids: Vec<_> = hooks
        .iter()
        .map(|h| h.header_value("webhook-id").unwrap())
        .collect();
    assert!(ids.iter().all(|i| *i == ids[0]), "{ids:?}");
    assert_eq!(ids[0], format!("msg_{id}_1"));
    for hook in hooks.iter() {
        assert_eq!(verified(hook, &secret)["data"]["cause"], "failPing");
    }
    assert_eq!(
        events("heartbeats.email.requested").len(),
        1,
        "one email for one change"
    );
    assert_eq!(get(&id)["state"], "down");
}

#[test]
fn a_rotated_secret_signs_pending_alerts_and_deleted_heartbeats_drop_them() {
    let (id, url, _old) = watched();
    let hooks = receiver(vec![]);
    ping(Method::Post, &format!("{url}/fail"));
    let rotated = send(
        Method::Post,
        &format!("/heartbeats/{id}/webhook-secret"),
        None,
    );
    let secret = json(&rotated)["webhookSecret"].as_str().unwrap().to_owned();
    run_due(at(0));
    assert_eq!(
        verified(&hooks.borrow()[0], &secret)["type"],
        "heartbeats.heartbeat.down"
    );

    ping(Method::Post, &url);
    assert_eq!(
        send(Method::Delete, &format!("/heartbeats/{id}"), None).status,
        204
    );
    let ran = run_due(at(1));
    assert_eq!(ran.len(), 1, "the recovery alert job still runs: {ran:?}");
    assert!(ran[0].1.is_ok());
    assert_eq!(hooks.borrow().len(), 1, "and drops the alert");
}

#[test]
fn start_success_and_fail_pings_record_durations_and_sources() {
    let (id, url, _) = watched();
    let hooks = receiver(vec![]);
    testing::set_now(at(0));
    ping(Method::Get, &format!("{url}/start"));
    assert_eq!(get(&id)["state"], "new", "a start ping changes no state");
    testing::set_now(at(12));
    ping(Method::Post, &url);
    testing::set_now(at(20));
    ping(Method::Post, &format!("{url}/start"));
    assert_eq!(get(&id)["runStartedAt"], rfc(at(20)));
    assert_eq!(
        get(&id)["downAt"],
        rfc(at(80)),
        "the run's grace ends first"
    );
    testing::set_now(at(27));
    ping(Method::Get, &format!("{url}/fail"));
    let heartbeat = get(&id);
    assert_eq!(heartbeat["state"], "down");
    assert_eq!(heartbeat["lastDurationMs"], 7_000);
    assert_eq!(heartbeat["lastPingKind"], "fail");
    assert!(heartbeat["runStartedAt"].is_null());

    let pings = json(&send(Method::Get, &format!("/heartbeats/{id}/pings"), None));
    assert_eq!(pings["total"], 4);
    let items = pings["items"].as_array().unwrap();
    let summary: Vec<(Value, Value, Value)> = items
        .iter()
        .map(|p| {
            (
                p["kind"].clone(),
                p["durationMs"].clone(),
                p["state"].clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (json!("fail"), json!(7_000), json!("down")),
            (json!("start"), Value::Null, json!("up")),
            (json!("success"), json!(12_000), json!("up")),
            (json!("start"), Value::Null, json!("new")),
        ],
        "newest first"
    );
    assert_eq!(items[0]["sourceIp"], "203.0.113.7");
    assert_eq!(items[0]["userAgent"], "curl/8.5.0");
    assert_eq!(items[0]["method"], "GET");
    assert_eq!(items[0]["at"], rfc(at(27)));
    let page = json(&send(
        Method::Get,
        &format!("/heartbeats/{id}/pings?limit=3"),
        None,
    ));
    let cursor = page["nextCursor"].as_str().unwrap();
    let rest = json(&send(
        Method::Get,
        &format!("/heartbeats/{id}/pings?limit=3&cursor={cursor}"),
        None,
    ));
    assert_eq!(rest["items"][0]["n"], 1);
    drop(hooks);
}

#[test]
fn a_run_that_never_ends_goes_down_after_the_grace() {
    let (id, url, _) = watched();
    let _hooks = receiver(vec![]);
    ping(Method::Post, &url);
    testing::set_now(at(10));
    ping(Method::Post, &format!("{url}/start"));
    assert_eq!(scheduled(), [(format!("hb:{id}"), at(60))], "late first");
    assert_eq!(get(&id)["downAt"], rfc(at(70)));
    run_due(at(60));
    assert_eq!(get(&id)["state"], "late");
    run_due(at(70));
    assert_eq!(get(&id)["state"], "down");
    assert_eq!(
        events("heartbeats.heartbeat.down")[0].1["cause"],
        "runTimedOut"
    );
}

#[test]
fn the_history_keeps_the_last_hundred_pings() {
    let (id, url, _) = watched();
    for i in 0..105 {
        testing::set_now(at(i));
        assert_eq!(ping(Method::Post, &url).status, 200);
    }
    let pings = json(&send(Method::Get, &format!("/heartbeats/{id}/pings"), None));
    assert_eq!(pings["total"], 100);
    assert_eq!(pings["items"][0]["n"], 105);
    assert_eq!(pings["items"][99]["n"], 6);
}

#[test]
fn pause_stops_deadlines_and_alerts_and_a_ping_resumes() {
    let (id, url, _) = watched();
    let hooks = receiver(vec![]);
    ping(Method::Post, &url);
    let res = send(
        Method::Patch,
        &format!("/heartbeats/{id}"),
        Some(&json!({"paused": true})),
    );
    assert_eq!(json(&res)["state"], "paused");
    assert!(scheduled().is_empty(), "the deadline job is cancelled");
    run_due(at(100_000));
    testing::set_now(at(100_000));
    ping(Method::Post, &format!("{url}/start"));
    assert_eq!(get(&id)["state"], "paused", "a start ping does not resume");
    assert!(scheduled().is_empty());
    assert!(events("heartbeats.heartbeat.down").is_empty());
    testing::set_now(at(100_010));
    ping(Method::Post, &url);
    assert_eq!(get(&id)["state"], "up");
    assert_eq!(scheduled(), [(format!("hb:{id}"), at(100_070))]);
    run_due(at(100_010));
    assert!(hooks.borrow().is_empty(), "resuming is no recovery");
    assert!(events("heartbeats.email.requested").is_empty());
}

#[test]
fn alerts_on_late_are_opt_in() {
    let (id, url, _) = watched();
    let hooks = receiver(vec![]);
    send(
        Method::Patch,
        &format!("/heartbeats/{id}"),
        Some(&json!({"alertOnLate": true})),
    );
    ping(Method::Post, &url);
    run_due(at(60));
    assert_eq!(get(&id)["state"], "late");
    testing::set_now(at(70));
    ping(Method::Post, &url);
    run_due(at(70));
    let types: Vec<String> = hooks
        .borrow()
        .iter()
        .map(|h| {
            serde_json::from_slice::<Value>(&h.body).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(
        types,
        ["heartbeats.heartbeat.late", "heartbeats.heartbeat.up"]
    );
    let subjects: Vec<Value> = events("heartbeats.email.requested")
        .into_iter()
        .map(|(_, d)| d["subject"].clone())
        .collect();
    assert_eq!(
        subjects,
        [
            json!("Heartbeat \"billing sync\" is late"),
            json!("Heartbeat \"billing sync\" is up again")
        ]
    );
}

#[test]
fn a_shorter_schedule_settles_the_state_at_once() {
    let (id, url, _) = watched();
    let _hooks = receiver(vec![]);
    let path = format!("/heartbeats/{id}");
    send(Method::Patch, &path, Some(&json!({"periodSeconds": 3600})));
    ping(Method::Post, &url);
    testing::set_now(at(200));
    let res = send(
        Method::Patch,
        &path,
        Some(&json!({"periodSeconds": 120, "graceSeconds": 60})),
    );
    assert_eq!(json(&res)["state"], "down");
    assert_eq!(events("heartbeats.email.requested").len(), 1);
    assert!(scheduled().iter().any(|(k, _)| k.starts_with("alert:")));
    // A longer one brings a late heartbeat back up, quietly.
    testing::set_now(at(300));
    ping(Method::Post, &url);
    run_due(at(420));
    assert_eq!(get(&id)["state"], "late");
    let res = send(Method::Patch, &path, Some(&json!({"periodSeconds": 3600})));
    assert_eq!(json(&res)["state"], "up");
    assert_eq!(
        events("heartbeats.email.requested").len(),
        2,
        "the down and its recovery only"
    );
}

#[test]
fn cron_heartbeats_expect_pings_on_the_zone_clock_across_dst() {
    testing::reset();
    // Saturday 2026-03-28, 09:00 in Paris (08:00Z); the clocks go forward
    // that night.
    testing::set_now(ms("2026-03-28T08:00:00Z"));
    let created = create(json!({
        "name": "daily report",
        "schedule": "0 9 * * *",
        "timezone": "Europe/Paris",
        "graceSeconds": 600,
    }));
    let id = created["id"].as_str().unwrap();
    assert!(created["periodSeconds"].is_null());
    ping(Method::Post, created["pingUrl"].as_str().unwrap());
    let heartbeat = get(id);
    assert_eq!(
        heartbeat["expectedAt"], "2026-03-29T07:00:00.000Z",
        "09:00 CEST"
    );
    assert_eq!(heartbeat["downAt"], "2026-03-29T07:10:00.000Z");
    run_due(ms("2026-03-29T06:59:59Z"));
    assert_eq!(
        get(id)["state"],
        "up",
        "08:00Z would be 10:00 CEST: not yet late at 08:59"
    );
    run_due(ms("2026-03-29T07:00:00Z"));
    assert_eq!(get(id)["state"], "late");
    run_due(ms("2026-03-29T07:10:00Z"));
    assert_eq!(get(id)["state"], "down");
}

#[test]
fn unknown_and_malformed_tokens_are_not_found() {
    let (_, url, _) = watched();
    let token = url.rsplit('/').next().unwrap();
    let mut other: Vec<char> = token.chars().collect();
    other[0] = if other[0] == 'A' { 'B' } else { 'A' };
    let other: String = other.into_iter().collect();
    for path in [
        format!("/heartbeats/ping/{other}"),
        format!("/heartbeats/ping/{other}/fail"),
        "/heartbeats/ping/short".to_owned(),
        "/heartbeats/ping/not*a*token*at*all*but*32*chars".to_owned(),
    ] {
        let url = format!("http://plateau.test/api/v1{path}");
        let res = ping(Method::Post, &url);
        assert_eq!(res.status, 404, "{path}");
        assert_eq!(res.problem().unwrap().code, "not_found");
    }
    // The management route of an id named `ping` is not a ping.
    assert_eq!(send(Method::Get, "/heartbeats/ping", None).status, 404);
}
