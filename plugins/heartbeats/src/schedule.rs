//! When the next ping is expected: a fixed period after the last success, or
//! the next time of a 5-field cron expression in an IANA time zone.
//!
//! Cron expressions and their daylight saving rules are `plateau-schedule`'s,
//! shared with the cron jobs plugin.

pub use plateau_schedule::{CronSchedule, ScheduleError};

/// The shortest and longest period and grace time, in seconds.
pub const MIN_SECONDS: u64 = 60;
pub const MAX_SECONDS: u64 = 365 * 24 * 3600;

/// A heartbeat's schedule.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// A ping is expected this many seconds after the last success.
    Period { seconds: u64 },
    /// A ping is expected at the schedule's first time after the last
    /// success, on the wall clock of its time zone.
    Cron(CronSchedule),
}

impl Schedule {
    /// A period of `seconds`, within [`MIN_SECONDS`] and [`MAX_SECONDS`].
    pub fn period(seconds: u64) -> Result<Schedule, ScheduleError> {
        check_seconds("periodSeconds", seconds)?;
        Ok(Schedule::Period { seconds })
    }

    /// A cron expression in the time zone `zone`, such as `Europe/Paris`.
    pub fn cron(expression: &str, zone: &str) -> Result<Schedule, ScheduleError> {
        CronSchedule::new(expression, zone).map(Schedule::Cron)
    }

    /// The first expected time after `after_ms` (milliseconds since the Unix
    /// epoch), strictly later.
    pub fn next_after(&self, after_ms: u64) -> Result<u64, ScheduleError> {
        match self {
            Schedule::Period { seconds } => Ok(after_ms.saturating_add(seconds * 1000)),
            Schedule::Cron(cron) => cron.next_after(after_ms),
        }
    }
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
