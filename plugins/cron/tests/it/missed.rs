//! Late deliveries, through the SDK's in-memory host: a run starts at most
//! `startingDeadlineSeconds` late, once, for the latest time passed; the
//! other passed times are recorded as one `missed` run and never made up.

use std::cell::Cell;
use std::rc::Rc;

use plateau_plugin_cron::CronPlugin;
use plateau_sdk::serde_json::{Value, json};
use plateau_sdk::{Method, Response, testing};

use crate::ms;

const ORG: &str = "org_late";

fn send(method: Method, target: &str, body: Option<Value>) -> Response {
    crate::send_as(ORG, method, target, body)
}

/// A job on `* * * * *` created at midnight with `extra` fields, and the
/// count of requests its runs send.
fn every_minute(extra: Value) -> (String, Rc<Cell<u32>>) {
    testing::reset();
    testing::set_now(ms("2027-01-01T00:00:00Z"));
    let sent = Rc::new(Cell::new(0));
    let counter = sent.clone();
    testing::mock_http(move |_| {
        counter.set(counter.get() + 1);
        Ok(testing::json_response(&json!({"ok": true})))
    });
    let mut job = json!({ "name": "tick", "schedule": "* * * * *", "type": "http", "url": "https://hooks.test/tick" });
    job.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    let res = send(Method::Post, "/cron-jobs", Some(job));
    assert_eq!(res.status, 201, "{}", String::from_utf8_lossy(&res.body));
    let id = testing::json_body(&res)["id"].as_str().unwrap().to_owned();
    (id, sent)
}

/// `(status, scheduledAt)` of the job's runs, oldest first, and its job.
fn runs(id: &str) -> (Vec<(String, String)>, Vec<Value>, Value) {
    let res = send(Method::Get, &format!("/cron-jobs/{id}/runs"), None);
    let mut items = testing::json_body(&res)["items"]
        .as_array()
        .unwrap()
        .clone();
    items.reverse();
    let pairs = items
        .iter()
        .map(|r| {
            (
                r["status"].as_str().unwrap().to_owned(),
                r["scheduledAt"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let job = testing::json_body(&send(Method::Get, &format!("/cron-jobs/{id}"), None));
    (pairs, items, job)
}

fn pair(status: &str, at: &str) -> (String, String) {
    (status.to_owned(), at.to_owned())
}

#[test]
fn a_delivery_late_within_the_deadline_runs_as_usual() {
    let (id, sent) = every_minute(json!({}));
    testing::run_due_jobs::<CronPlugin>(ms("2027-01-01T00:01:10Z") + 800);
    let (got, _, job) = runs(&id);
    assert_eq!(got, [pair("succeeded", "2027-01-01T00:01:00.000Z")]);
    assert_eq!(sent.get(), 1);
    assert_eq!(job["nextRunAt"], "2027-01-01T00:02:00.000Z");
    assert_eq!(job["startingDeadlineSeconds"], 60);
}

#[test]
fn after_an_outage_across_two_times_the_latest_runs_once_and_the_first_is_missed() {
    let (id, sent) = every_minute(json!({}));
    testing::run_due_jobs::<CronPlugin>(ms("2027-01-01T00:02:10Z"));
    let (got, items, job) = runs(&id);
    assert_eq!(
        got,
        [
            pair("missed", "2027-01-01T00:01:00.000Z"),
            pair("succeeded", "2027-01-01T00:02:00.000Z"),
        ]
    );
    let error = items[0]["error"].as_str().unwrap();
    assert!(
        error.starts_with("the run due at 2027-01-01T00:01:00.000Z did not start within the starting deadline of 60 s"),
        "{error}"
    );
    assert_eq!(items[0]["startedAt"], "2027-01-01T00:02:10.000Z");
    assert_eq!(sent.get(), 1, "one request, for 00:02");
    assert_eq!(job["nextRunAt"], "2027-01-01T00:03:00.000Z");
}

#[test]
fn past_the_deadline_nothing_runs_and_every_passed_time_is_one_missed_run() {
    let (id, sent) = every_minute(json!({ "startingDeadlineSeconds": 5 }));
    testing::run_due_jobs::<CronPlugin>(ms("2027-01-01T00:02:10Z"));
    let (got, items, job) = runs(&id);
    assert_eq!(got, [pair("missed", "2027-01-01T00:01:00.000Z")]);
    let error = items[0]["error"].as_str().unwrap();
    assert!(
        error.starts_with(
            "2 runs due from 2027-01-01T00:01:00.000Z to 2027-01-01T00:02:00.000Z did not start within the starting deadline of 5 s"
        ),
        "{error}"
    );
    assert_eq!(sent.get(), 0);
    assert_eq!(job["nextRunAt"], "2027-01-01T00:03:00.000Z");

    // The schedule goes on as usual.
    testing::run_due_jobs::<CronPlugin>(ms("2027-01-01T00:03:01Z"));
    let (got, _, _) = runs(&id);
    assert_eq!(
        got.last().unwrap(),
        &pair("succeeded", "2027-01-01T00:03:00.000Z")
    );
    assert_eq!(sent.get(), 1);
}

#[test]
fn the_starting_deadline_is_checked_and_patched() {
    let (id, _) = every_minute(json!({}));
    for bad in [0, 86_401] {
        let res = send(
            Method::Patch,
            &format!("/cron-jobs/{id}"),
            Some(json!({ "startingDeadlineSeconds": bad })),
        );
        assert_eq!(res.status, 400, "{bad}");
        let problem = res.problem().unwrap();
        assert_eq!(problem.errors[0].field, "startingDeadlineSeconds");
    }
    let res = send(
        Method::Patch,
        &format!("/cron-jobs/{id}"),
        Some(json!({ "startingDeadlineSeconds": "soon" })),
    );
    let problem = res.problem().unwrap();
    assert_eq!(
        (problem.code.as_str(), problem.errors[0].field.as_str()),
        ("validation_failed", "startingDeadlineSeconds"),
        "a wrong type names its field, as the host's own endpoints do"
    );
    let res = send(
        Method::Patch,
        &format!("/cron-jobs/{id}"),
        Some(json!({ "startingDeadlineSeconds": 300 })),
    );
    assert_eq!(testing::json_body(&res)["startingDeadlineSeconds"], 300);
}
