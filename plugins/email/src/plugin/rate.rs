//! The per-plan rate limit (values in [`crate::limits`]) with key-value
//! counters: one per minute and one per UTC day, each incremented at
//! commit so concurrent sends all count. A send is refused when a counter
//! already reached its limit, with `Retry-After` set to the end of that
//! window; requests racing for the last slots may overshoot by as many as
//! run at once. Old windows' counters are removed when a new minute starts.

use plateau_sdk::{ApiError, Bucket, config, log};

use crate::keys;
use crate::limits::{RateLimit, Windows};

/// Counts one message of `plan` at `now_ms`; with `enforce`, 429 when the
/// minute's or the day's limit is already reached (alerts are counted but
/// never refused).
pub fn take(
    bucket: &Bucket,
    plan: Option<&str>,
    now_ms: u64,
    enforce: bool,
) -> Result<(), ApiError> {
    let limit = RateLimit::of_plan(plan, config::get);
    let windows = Windows::at(now_ms);
    let minute_key = keys::rate_minute(windows.minute);
    let day_key = keys::rate_day(windows.day);
    if enforce {
        let plan = plan.unwrap_or("free");
        if counter(bucket, &minute_key)? >= limit.per_minute {
            return Err(ApiError::rate_limited(
                format!(
                    "the {plan} plan sends at most {} messages a minute: retry in {} s",
                    limit.per_minute, windows.minute_left_secs
                ),
                windows.minute_left_secs,
            ));
        }
        if counter(bucket, &day_key)? >= limit.per_day {
            return Err(ApiError::rate_limited(
                format!(
                    "the {plan} plan sends at most {} messages a day (UTC): retry in {} s",
                    limit.per_day, windows.day_left_secs
                ),
                windows.day_left_secs,
            ));
        }
    }
    let in_minute = bucket.increment(&minute_key, 1)?;
    bucket.increment(&day_key, 1)?;
    if in_minute == 1 {
        prune(bucket, &minute_key, &day_key)?;
    }
    Ok(())
}

/// The value of a counter (absent is 0).
fn counter(bucket: &Bucket, key: &str) -> Result<i64, ApiError> {
    Ok(match bucket.get_raw(key)? {
        None => 0,
        Some(bytes) => std::str::from_utf8(&bytes)
            .ok()
            .and_then(|text| text.trim().parse().ok())
            .unwrap_or_else(|| {
                log::warn(&format!(
                    "rate counter {key} is not a number; counting it as 0"
                ));
                0
            }),
    })
}

/// Removes the counters of past windows.
fn prune(bucket: &Bucket, minute_key: &str, day_key: &str) -> Result<(), ApiError> {
    let stale: Vec<String> = bucket
        .list_all(keys::RATE_PREFIX)?
        .into_iter()
        .map(|entry| entry.key)
        .filter(|key| key != minute_key && key != day_key)
        .collect();
    for key in stale {
        bucket.delete(&key)?;
    }
    Ok(())
}
