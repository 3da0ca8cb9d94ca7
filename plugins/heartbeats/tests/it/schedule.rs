//! Expected times: periods, and cron expressions in time zones across
//! daylight saving time changes (Vixie cron's rules, as croner applies them).

use plateau_plugin_heartbeats::schedule::Schedule;

use crate::{ms, rfc};

/// `(expression, zone, after, expected next)`: the times in UTC.
const CRON: &[(&str, &str, &str, &str)] = &[
    // Plain UTC, and a ping exactly at the scheduled time counts for it.
    (
        "0 3 * * *",
        "UTC",
        "2026-01-10T02:59:00Z",
        "2026-01-10T03:00:00.000Z",
    ),
    (
        "0 3 * * *",
        "UTC",
        "2026-01-10T03:00:00Z",
        "2026-01-11T03:00:00.000Z",
    ),
    (
        "*/15 * * * *",
        "UTC",
        "2026-01-10T03:07:10Z",
        "2026-01-10T03:15:00.000Z",
    ),
    (
        "0 9 * * MON-FRI",
        "UTC",
        "2026-01-09T10:00:00Z",
        "2026-01-12T09:00:00.000Z",
    ),
    (
        "@daily",
        "UTC",
        "2026-01-10T12:00:00Z",
        "2026-01-11T00:00:00.000Z",
    ),
    // Day of month OR day of week, as in Vixie cron: the 13th, or a Friday.
    (
        "0 0 13 * 5",
        "UTC",
        "2026-01-10T00:00:00Z",
        "2026-01-13T00:00:00.000Z",
    ),
    // 09:00 in Paris is 08:00Z in winter and 07:00Z in summer; the clocks go
    // forward on 2026-03-29 at 02:00.
    (
        "0 9 * * *",
        "Europe/Paris",
        "2026-03-28T08:00:00Z",
        "2026-03-29T07:00:00.000Z",
    ),
    (
        "0 9 * * *",
        "Europe/Paris",
        "2026-03-27T09:00:00Z",
        "2026-03-28T08:00:00.000Z",
    ),
    // 02:30 does not exist in Paris on 2026-03-29: due right after the gap,
    // at 03:00 CEST (01:00Z), then 02:30 CEST the next day.
    (
        "30 2 * * *",
        "Europe/Paris",
        "2026-03-28T01:30:00Z",
        "2026-03-29T01:00:00.000Z",
    ),
    (
        "30 2 * * *",
        "Europe/Paris",
        "2026-03-29T01:00:00Z",
        "2026-03-30T00:30:00.000Z",
    ),
    // 02:30 happens twice in Paris on 2026-10-25 (clocks go back at 03:00):
    // due once, at the first one (00:30Z), then 02:30 CET the next day.
    (
        "30 2 * * *",
        "Europe/Paris",
        "2026-10-24T01:00:00Z",
        "2026-10-25T00:30:00.000Z",
    ),
    (
        "30 2 * * *",
        "Europe/Paris",
        "2026-10-25T00:30:00Z",
        "2026-10-26T01:30:00.000Z",
    ),
    // A wildcard hour runs through both passes of the repeated hour.
    (
        "30 * * * *",
        "Europe/Paris",
        "2026-10-25T00:30:00Z",
        "2026-10-25T01:30:00.000Z",
    ),
    (
        "30 * * * *",
        "Europe/Paris",
        "2026-10-25T01:30:00Z",
        "2026-10-25T02:30:00.000Z",
    ),
    // New York springs forward on 2026-03-08 at 02:00: noon is 17:00Z in
    // winter and 16:00Z after.
    (
        "0 12 * * *",
        "America/New_York",
        "2026-03-07T17:00:00Z",
        "2026-03-08T16:00:00.000Z",
    ),
    // A zone without DST.
    (
        "0 0 * * *",
        "Asia/Kolkata",
        "2026-06-01T00:00:00Z",
        "2026-06-01T18:30:00.000Z",
    ),
];

#[test]
fn cron_next_times_follow_the_zone_and_its_dst_changes() {
    for (expression, zone, after, expected) in CRON {
        let schedule = Schedule::cron(expression, zone).unwrap();
        let next = schedule.next_after(ms(after)).unwrap();
        assert_eq!(rfc(next), *expected, "{expression} in {zone} after {after}");
    }
}

#[test]
fn daily_cron_in_paris_is_23_hours_apart_across_spring_forward() {
    let schedule = Schedule::cron("0 9 * * *", "Europe/Paris").unwrap();
    let before = schedule.next_after(ms("2026-03-28T00:00:00Z")).unwrap();
    let after = schedule.next_after(before).unwrap();
    assert_eq!(after - before, 23 * 3600 * 1000);
    let autumn = schedule.next_after(ms("2026-10-23T12:00:00Z")).unwrap();
    assert_eq!(
        schedule.next_after(autumn).unwrap() - autumn,
        25 * 3600 * 1000
    );
}

#[test]
fn a_period_counts_from_the_last_success() {
    let schedule = Schedule::period(300).unwrap();
    assert_eq!(schedule.next_after(1_000).unwrap(), 301_000);
}

/// `(expression, zone, field, message fragment)`.
const REFUSED: &[(&str, &str, &str, &str)] = &[
    ("0 3 * * * *", "UTC", "schedule", "must have 5 fields"),
    ("0 3 * *", "UTC", "schedule", "must have 5 fields"),
    (
        "61 3 * * *",
        "UTC",
        "schedule",
        "is not a valid cron expression",
    ),
    (
        "0 3 * * BLAH",
        "UTC",
        "schedule",
        "is not a valid cron expression",
    ),
    (
        "0 3 * * *",
        "Mars/Olympus",
        "timezone",
        "is not an IANA time zone name",
    ),
    (
        "0 3 * * *",
        "EST5EDT,M3.2.0,M11.1.0",
        "timezone",
        "is not an IANA time zone name",
    ),
    (
        "0 3 * * *",
        "+02:00",
        "timezone",
        "is not an IANA time zone name",
    ),
    ("0 3 * * *", "", "timezone", "is not an IANA time zone name"),
];

#[test]
fn invalid_expressions_and_zones_are_refused_naming_the_field() {
    for (expression, zone, field, fragment) in REFUSED {
        let error = Schedule::cron(expression, zone).unwrap_err();
        assert_eq!(error.field, *field, "{expression} in {zone}");
        assert!(
            error.message.contains(fragment),
            "{expression} in {zone}: {}",
            error.message
        );
    }
}

#[test]
fn periods_are_bounded() {
    assert!(Schedule::period(59).is_err());
    assert!(Schedule::period(60).is_ok());
    assert!(Schedule::period(365 * 86_400).is_ok());
    assert_eq!(
        Schedule::period(365 * 86_400 + 1).unwrap_err().field,
        "periodSeconds"
    );
}

#[test]
fn an_expression_that_never_matches_has_no_next_time() {
    let schedule = Schedule::cron("0 0 30 2 *", "UTC").unwrap();
    let error = schedule.next_after(ms("2026-01-01T00:00:00Z")).unwrap_err();
    assert_eq!(error.field, "schedule");
}
