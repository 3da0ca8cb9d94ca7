//! Cron schedules: the first time of a 5-field cron expression in an IANA
//! time zone, strictly after a given instant. The heartbeats and cron jobs
//! plugins both step their schedules with it, so both read an expression
//! and a daylight saving change the same way.
//!
//! Cron expressions are croner's dialect without seconds and years: numbers,
//! `*`, ranges, lists, steps, month and weekday names, the `@daily` family,
//! and croner's `L`, `#` and `W`. Day-of-month and day-of-week combine with
//! OR when both are restricted, as in Vixie cron. Daylight saving time
//! follows Vixie cron too (croner's rules):
//! - a fixed time that falls in a gap (02:30 on the night clocks jump from
//!   02:00 to 03:00) is due once, at the first minute after the gap, that day;
//! - a fixed time that happens twice (01:30 on the night clocks go back from
//!   02:00 to 01:00) is due once, at its first occurrence;
//! - wildcard and step expressions (`*/15 * * * *`) follow the wall clock:
//!   they skip the minutes of a gap and run through both passes of a
//!   repeated hour.
//!
//! Time zones come from jiff's bundled copy of the IANA database, so a
//! component answers the same wherever it runs. Pure: no SDK, no clock.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::Timestamp;
use jiff::tz::TimeZone;

/// A parsed cron expression and its time zone.
#[derive(Debug, Clone)]
pub struct CronSchedule {
    cron: Box<Cron>,
    zone: TimeZone,
}

/// Why a schedule was refused; the message completes "`field` ...".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleError {
    pub field: &'static str,
    pub message: String,
}

impl CronSchedule {
    /// A cron expression in the time zone `zone`, such as `Europe/Paris`.
    pub fn new(expression: &str, zone: &str) -> Result<CronSchedule, ScheduleError> {
        let zone = time_zone(zone)?;
        let cron = parse_cron(expression)?;
        Ok(CronSchedule {
            cron: Box::new(cron),
            zone,
        })
    }

    /// The first time after `after_ms` (milliseconds since the Unix epoch),
    /// strictly later.
    pub fn next_after(&self, after_ms: u64) -> Result<u64, ScheduleError> {
        let never = || ScheduleError {
            field: "schedule",
            message: "never matches a date: check the day and month fields".to_owned(),
        };
        let millis = i64::try_from(after_ms).map_err(|_| never())?;
        let start = Timestamp::from_millisecond(millis)
            .map_err(|_| never())?
            .to_zoned(self.zone.clone());
        let next = self
            .cron
            .find_next_occurrence(&start, false)
            .map_err(|e| ScheduleError {
                field: "schedule",
                message: format!("has no next time: {}", plain(&e.to_string())),
            })?;
        u64::try_from(next.timestamp().as_millisecond()).map_err(|_| never())
    }
}

/// 5 fields, or one of the `@daily` family.
fn parse_cron(expression: &str) -> Result<Cron, ScheduleError> {
    let invalid = |why: String| ScheduleError {
        field: "schedule",
        message: why,
    };
    let trimmed = expression.trim();
    let fields = trimmed.split_whitespace().count();
    if trimmed.len() > 200 {
        return Err(invalid("must be at most 200 characters".to_owned()));
    }
    if !trimmed.starts_with('@') && fields != 5 {
        return Err(invalid(format!(
            "must have 5 fields (minute hour day-of-month month day-of-week), not {fields}"
        )));
    }
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(trimmed)
        .map_err(|e| {
            invalid(format!(
                "is not a valid cron expression: {}",
                plain(&e.to_string())
            ))
        })
}

fn time_zone(name: &str) -> Result<TimeZone, ScheduleError> {
    let refuse = || ScheduleError {
        field: "timezone",
        message: format!("{name} is not an IANA time zone name: use one such as Europe/Paris"),
    };
    // Only names: jiff would also accept POSIX TZ strings and fixed offsets.
    if name.is_empty() || name.len() > 64 || name.contains(',') || name.starts_with(['+', '-']) {
        return Err(refuse());
    }
    TimeZone::get(name).map_err(|_| refuse())
}

/// croner's messages start with a capital and end with a period; ours do not.
fn plain(message: &str) -> String {
    let message = message.trim().trim_end_matches('.');
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}
