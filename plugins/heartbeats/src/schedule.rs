//! When the next ping is expected: a fixed period after the last success, or
//! the next time of a 5-field cron expression in an IANA time zone.
//!
//! Cron expressions are croner's dialect without seconds and years: numbers,
//! `*`, ranges, lists, steps, month and weekday names, the `@daily` family,
//! and croner's `L`, `#` and `W`. Day-of-month and day-of-week combine with
//! OR when both are restricted, as in Vixie cron. Daylight saving time
//! follows Vixie cron too (croner's rules):
//! - a fixed time that falls in a gap (02:30 on the night clocks jump from
//!   02:00 to 03:00) is due at the first minute after the gap, that day;
//! - a fixed time that happens twice (01:30 on the night clocks go back from
//!   02:00 to 01:00) is due once, at its first occurrence;
//! - wildcard and step expressions (`*/15 * * * *`) follow the wall clock:
//!   they skip the minutes of a gap and run through both passes of a
//!   repeated hour.
//!
//! Time zones come from jiff's bundled copy of the IANA database, so the
//! component answers the same wherever it runs.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use jiff::Timestamp;
use jiff::tz::TimeZone;

/// The shortest and longest period and grace time, in seconds.
pub const MIN_SECONDS: u64 = 60;
pub const MAX_SECONDS: u64 = 365 * 24 * 3600;

/// A heartbeat's schedule.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// A ping is expected this many seconds after the last success.
    Period { seconds: u64 },
    /// A ping is expected at the first time of `cron` after the last
    /// success, on the wall clock of `zone`.
    Cron { cron: Box<Cron>, zone: TimeZone },
}

/// Why a schedule was refused; the message completes "`field` ...".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduleError {
    pub field: &'static str,
    pub message: String,
}

impl Schedule {
    /// A period of `seconds`, within [`MIN_SECONDS`] and [`MAX_SECONDS`].
    pub fn period(seconds: u64) -> Result<Schedule, ScheduleError> {
        check_seconds("periodSeconds", seconds)?;
        Ok(Schedule::Period { seconds })
    }

    /// A cron expression in the time zone `zone`, such as `Europe/Paris`.
    pub fn cron(expression: &str, zone: &str) -> Result<Schedule, ScheduleError> {
        let zone = time_zone(zone)?;
        let cron = parse_cron(expression)?;
        Ok(Schedule::Cron {
            cron: Box::new(cron),
            zone,
        })
    }

    /// The first expected time after `after_ms` (milliseconds since the Unix
    /// epoch), strictly later.
    pub fn next_after(&self, after_ms: u64) -> Result<u64, ScheduleError> {
        match self {
            Schedule::Period { seconds } => Ok(after_ms.saturating_add(seconds * 1000)),
            Schedule::Cron { cron, zone } => {
                let never = || ScheduleError {
                    field: "schedule",
                    message: "never matches a date: check the day and month fields".to_owned(),
                };
                let millis = i64::try_from(after_ms).map_err(|_| never())?;
                let start = Timestamp::from_millisecond(millis)
                    .map_err(|_| never())?
                    .to_zoned(zone.clone());
                let next = cron
                    .find_next_occurrence(&start, false)
                    .map_err(|e| ScheduleError {
                        field: "schedule",
                        message: format!("has no next time: {}", plain(&e.to_string())),
                    })?;
                u64::try_from(next.timestamp().as_millisecond()).map_err(|_| never())
            }
        }
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

/// Checks a period or grace time in seconds.
pub fn check_seconds(field: &'static str, seconds: u64) -> Result<(), ScheduleError> {
    if (MIN_SECONDS..=MAX_SECONDS).contains(&seconds) {
        Ok(())
    } else {
        Err(ScheduleError {
            field,
            message: format!("must be between {MIN_SECONDS} and {MAX_SECONDS} seconds"),
        })
    }
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
