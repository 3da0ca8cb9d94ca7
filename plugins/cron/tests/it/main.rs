//! Native tests of the cron plugin: daylight saving rules of the schedule
//! in two time zones, the rules of a job's fields, the description, and
//! runs that race changes through the API (`races`).

use plateau_plugin_cron::CronPlugin;
use plateau_plugin_cron::input::JobInput;
use plateau_plugin_cron::schedule::Schedule;
use serde_json::json;

mod ids;
mod missed;
mod races;

/// `method target` with `body`, sent by a pro-plan caller of `org` with
/// both cron scopes, through the SDK's in-memory host.
fn send_as(
    org: &str,
    method: plateau_sdk::Method,
    target: &str,
    body: Option<serde_json::Value>,
) -> plateau_sdk::Response {
    let caller = plateau_sdk::Caller {
        plan: Some("pro".to_owned()),
        ..plateau_sdk::Caller::new(org, &["cron:read", "cron:write"])
    };
    let mut req = plateau_sdk::Request::new(method, target).with_caller(caller);
    if let Some(body) = body {
        req = req.with_json(&body);
    }
    plateau_sdk::testing::handle::<CronPlugin>(&req)
}

fn ms(rfc3339: &str) -> u64 {
    let t: jiff::Timestamp = rfc3339.parse().unwrap();
    u64::try_from(t.as_millisecond()).unwrap()
}

/// The next two times after `after`.
fn next_two(expr: &str, zone: &str, after: &str) -> (u64, u64) {
    let s = Schedule::new(expr, zone).unwrap();
    let first = s.next_after(ms(after)).unwrap();
    (first, s.next_after(first).unwrap())
}

#[test]
fn a_time_skipped_by_spring_forward_fires_once_just_after_the_gap() {
    // New York, 2027-03-14: 02:00 EST jumps to 03:00 EDT.
    assert_eq!(
        next_two("30 2 * * *", "America/New_York", "2027-03-13T12:00:00Z"),
        (ms("2027-03-14T07:00:00Z"), ms("2027-03-15T06:30:00Z"))
    );
    // Berlin, 2027-03-28: 02:00 CET jumps to 03:00 CEST.
    assert_eq!(
        next_two("30 2 * * *", "Europe/Berlin", "2027-03-27T12:00:00Z"),
        (ms("2027-03-28T01:00:00Z"), ms("2027-03-29T00:30:00Z"))
    );
}

#[test]
fn a_time_repeated_by_fall_back_fires_once_at_its_first_occurrence() {
    // New York, 2027-11-07: 02:00 EDT goes back to 01:00 EST.
    assert_eq!(
        next_two("30 1 * * *", "America/New_York", "2027-11-06T12:00:00Z"),
        (ms("2027-11-07T05:30:00Z"), ms("2027-11-08T06:30:00Z"))
    );
    // Berlin, 2027-10-31: 03:00 CEST goes back to 02:00 CET.
    assert_eq!(
        next_two("30 2 * * *", "Europe/Berlin", "2027-10-30T12:00:00Z"),
        (ms("2027-10-31T00:30:00Z"), ms("2027-11-01T01:30:00Z"))
    );
}

#[test]
fn fields_are_checked_all_at_once() {
    let input: JobInput = serde_json::from_value(json!({
        "name": "", "schedule": "61 * * * *", "timezone": "Mars/Olympus",
        "type": "shell", "url": "ftp://x", "timeoutSeconds": 0
    }))
    .unwrap();
    let err = input.check("org_test").unwrap_err();
    let fields: Vec<&str> = err.errors().iter().map(|e| e.field.as_str()).collect();
    assert_eq!(
        fields,
        ["name", "timezone", "type", "url", "timeoutSeconds"]
    );
    // A container job: its image must be in the organisation's own
    // repositories, and the http fields stay out.
    let input: JobInput = serde_json::from_value(json!({
        "name": "n", "schedule": "* * * * *", "type": "container",
        "image": "registry.example.com/org_other/tool:v1", "url": "https://example.com"
    }))
    .unwrap();
    let err = input.check("org_test").unwrap_err();
    let fields: Vec<&str> = err.errors().iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["image", "url"]);
    let input: JobInput = serde_json::from_value(json!({
        "name": "n", "schedule": "* * * * *", "type": "container",
        "image": "registry.example.com/org_test/tool:v1", "command": ["--exit", "3"]
    }))
    .unwrap();
    let checked = input.check("org_test").unwrap();
    assert_eq!(
        (checked.kind.as_str(), checked.command.len()),
        ("container", 2)
    );
    let input: JobInput = serde_json::from_value(json!({
        "name": "n", "schedule": "* * *", "type": "http", "url": "https://example.com"
    }))
    .unwrap();
    assert_eq!(
        input.check("org_test").unwrap_err().errors()[0].field,
        "schedule"
    );
}

#[test]
fn the_description_is_valid() {
    let d = plateau_sdk::describe::<CronPlugin>();
    assert!(d.problems().is_empty(), "{:?}", d.problems());
}
