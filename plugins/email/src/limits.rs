//! The sending limits: the per-plan rate limit (spec section 8 leaves its
//! values to us) and the size limits of one message.
//!
//! | Plan | Messages per minute | Messages per day (UTC) |
//! |---|---|---|
//! | free | 10 | 200 |
//! | starter | 60 | 5,000 |
//! | pro | 300 | 50,000 |
//! | scale | 1,200 | 250,000 |
//!
//! A message counts once whatever its number of recipients. The operator
//! can change a plan's values with the plugin configuration keys
//! `limits.<plan>.perMinute` and `limits.<plan>.perDay`.

/// The most recipients (to, cc and bcc together) of one message.
pub const MAX_RECIPIENTS: usize = 50;
/// The most attachments of one message.
pub const MAX_ATTACHMENTS: usize = 20;
/// The decoded size of all attachments of one message together: 10 MiB.
pub const MAX_ATTACHMENT_BYTES: usize = 10 << 20;
/// The largest `text` or `html` body: 2 MiB each.
pub const MAX_BODY_BYTES: usize = 2 << 20;
/// The most custom headers.
pub const MAX_HEADERS: usize = 20;
/// The longest subject or header value (RFC 5322's line limit): the host's.
pub use plateau_sdk::smtp::MAX_HEADER_VALUE;
/// The most allowed senders of a configuration.
pub const MAX_SENDERS: usize = 50;

/// How many messages a plan may send per minute and per UTC day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub per_minute: i64,
    pub per_day: i64,
}

/// The plans, with their default limits.
pub const PLANS: [(&str, RateLimit); 4] = [
    (
        "free",
        RateLimit {
            per_minute: 10,
            per_day: 200,
        },
    ),
    (
        "starter",
        RateLimit {
            per_minute: 60,
            per_day: 5_000,
        },
    ),
    (
        "pro",
        RateLimit {
            per_minute: 300,
            per_day: 50_000,
        },
    ),
    (
        "scale",
        RateLimit {
            per_minute: 1_200,
            per_day: 250_000,
        },
    ),
];

impl RateLimit {
    /// The limit of `plan` (an unknown or missing plan is `free`), with the
    /// operator's overrides read through `config` (a key to its value).
    pub fn of_plan(plan: Option<&str>, config: impl Fn(&str) -> Option<String>) -> RateLimit {
        let (name, defaults) = PLANS
            .iter()
            .find(|(name, _)| Some(*name) == plan)
            .unwrap_or(&PLANS[0]);
        let read = |what: &str, default: i64| {
            config(&format!("limits.{name}.{what}"))
                .and_then(|v| v.trim().parse::<i64>().ok())
                .filter(|v| *v > 0)
                .unwrap_or(default)
        };
        RateLimit {
            per_minute: read("perMinute", defaults.per_minute),
            per_day: read("perDay", defaults.per_day),
        }
    }
}

/// The rate-limit windows a moment falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Windows {
    /// Minutes since the Unix epoch.
    pub minute: u64,
    /// Days since the Unix epoch (UTC).
    pub day: u64,
    /// Seconds until the minute window ends, at least 1.
    pub minute_left_secs: u32,
    /// Seconds until the day window ends, at least 1.
    pub day_left_secs: u32,
}

impl Windows {
    pub fn at(now_ms: u64) -> Windows {
        let left = |window_ms: u64| {
            let rest = window_ms - now_ms % window_ms;
            u32::try_from(rest.div_ceil(1000))
                .unwrap_or(u32::MAX)
                .max(1)
        };
        Windows {
            minute: now_ms / 60_000,
            day: now_ms / 86_400_000,
            minute_left_secs: left(60_000),
            day_left_secs: left(86_400_000),
        }
    }
}

/// Delivery attempts before a temporary failure becomes final.
pub const MAX_ATTEMPTS: u32 = 6;

/// The wait after failed attempt `attempt` (1-based) before the next: 1, 5
/// and 15 minutes, 1 hour, 4 hours. `None` once the attempts are used up.
pub fn backoff_ms(attempt: u32) -> Option<u64> {
    const MINUTE: u64 = 60_000;
    const WAITS: [u64; 5] = [MINUTE, 5 * MINUTE, 15 * MINUTE, 60 * MINUTE, 240 * MINUTE];
    if attempt >= MAX_ATTEMPTS {
        return None;
    }
    WAITS.get(attempt.checked_sub(1)? as usize).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_have_their_limits_and_the_operator_can_change_them() {
        let none = |_: &str| None;
        assert_eq!(RateLimit::of_plan(Some("pro"), none).per_minute, 300);
        assert_eq!(RateLimit::of_plan(None, none), PLANS[0].1);
        assert_eq!(RateLimit::of_plan(Some("platinum"), none), PLANS[0].1);
        let config = |key: &str| match key {
            "limits.scale.perMinute" => Some("100000".to_owned()),
            "limits.scale.perDay" => Some("not a number".to_owned()),
            "limits.free.perMinute" => Some("0".to_owned()),
            _ => None,
        };
        assert_eq!(
            RateLimit::of_plan(Some("scale"), config),
            RateLimit {
                per_minute: 100_000,
                per_day: 250_000
            }
        );
        assert_eq!(RateLimit::of_plan(Some("free"), config).per_minute, 10);
    }

    #[test]
    fn windows_say_when_they_end() {
        let w = Windows::at(1_795_305_600_000 + 59_001);
        assert_eq!((w.minute_left_secs, w.day_left_secs), (1, 86_341));
        let w = Windows::at(1_795_305_600_000);
        assert_eq!((w.minute_left_secs, w.day_left_secs), (60, 86_400));
        assert_eq!(w.day, 20_779);
        assert_eq!(Windows::at(1_795_305_600_000 - 1).day, 20_778);
    }

    #[test]
    fn retries_back_off_then_stop() {
        let waits: Vec<Option<u64>> = (1..=7).map(backoff_ms).collect();
        assert_eq!(
            waits,
            [
                Some(60_000),
                Some(300_000),
                Some(900_000),
                Some(3_600_000),
                Some(14_400_000),
                None,
                None
            ]
        );
        assert_eq!(backoff_ms(0), None);
    }
}
