//! When a cron job is next due: the shared cron stepping of
//! `plateau-schedule`, with its daylight saving rules.

pub use plateau_schedule::{CronSchedule as Schedule, ScheduleError};
