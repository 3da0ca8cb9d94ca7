//! The rules: an endpoint's fields as sent (create, and a change merged
//! over the stored endpoint), event type patterns and how they match, and
//! the retry schedule.

use plateau_sdk::contract::mail::is_email;
use plateau_sdk::{ApiError, Validator};
use serde::Deserialize;
use utoipa::ToSchema;

pub const MAX_URL_BYTES: usize = 2048;
pub const MAX_DESCRIPTION_CHARS: usize = 200;
pub const MAX_EVENT_TYPES: usize = 50;
pub const MAX_PATTERN_BYTES: usize = 100;
pub const MAX_ALERT_EMAILS: usize = 10;

/// The waits before attempts 2, 3, ... in seconds: 5 s, 5 min, 30 min,
/// 2 h, 5 h, 10 h and 10 h, so the eighth and last attempt comes about 27
/// hours after the first.
pub const DEFAULT_RETRY_SCHEDULE: [u64; 7] = [5, 300, 1800, 7200, 18_000, 36_000, 36_000];
/// The configuration key that replaces it (comma-separated seconds).
pub const RETRY_SCHEDULE_KEY: &str = "retrySchedule";

/// An endpoint's fields as sent.
#[derive(Debug, Default, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndpointInput {
    pub url: Option<String>,
    pub description: Option<String>,
    pub event_types: Option<Vec<String>>,
    pub alert_emails: Option<Vec<String>>,
    /// `PATCH` only: true enables a disabled endpoint, false disables it.
    pub enabled: Option<bool>,
}

/// An endpoint's fields after the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub url: String,
    pub description: String,
    pub event_types: Vec<String>,
    pub alert_emails: Vec<String>,
    pub enabled: bool,
}

impl EndpointInput {
    /// The rules, every problem at once.
    pub fn check(self) -> Result<Checked, ApiError> {
        let mut v = Validator::new();
        let url = self.url.unwrap_or_default();
        v.check(
            url.len() <= MAX_URL_BYTES
                && (url.starts_with("https://") || url.starts_with("http://"))
                && url.len() > "https://".len()
                && !url
                    .bytes()
                    .any(|b| b.is_ascii_whitespace() || b.is_ascii_control()),
            "url",
            "must be an http or https URL of at most 2048 bytes",
        );
        let description = self.description.unwrap_or_default();
        v.check(
            description.chars().count() <= MAX_DESCRIPTION_CHARS
                && !description.contains(char::is_control),
            "description",
            "must be at most 200 characters without control characters",
        );
        let event_types = self.event_types.unwrap_or_default();
        v.check(
            !event_types.is_empty() && event_types.len() <= MAX_EVENT_TYPES,
            "eventTypes",
            "must list 1 to 50 event types, such as app.* or project.created",
        );
        for (i, pattern) in event_types.iter().enumerate() {
            v.check(
                is_pattern(pattern),
                format!("eventTypes[{i}]"),
                "must be an event type (lowercase letters, digits, dots, - and _), optionally ending in *",
            );
        }
        let alert_emails = self.alert_emails.unwrap_or_default();
        v.check(
            alert_emails.len() <= MAX_ALERT_EMAILS,
            "alertEmails",
            "must list at most 10 addresses",
        );
        for (i, email) in alert_emails.iter().enumerate() {
            v.check(
                is_email(email),
                format!("alertEmails[{i}]"),
                "must be an email address",
            );
        }
        v.finish()?;
        Ok(Checked {
            url,
            description,
            event_types,
            alert_emails,
            enabled: self.enabled.unwrap_or(true),
        })
    }
}

/// Whether `pattern` is an event type, or a prefix of one ending in `*`.
pub fn is_pattern(pattern: &str) -> bool {
    let body = pattern.strip_suffix('*').unwrap_or(pattern);
    !pattern.is_empty()
        && pattern.len() <= MAX_PATTERN_BYTES
        && body
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

/// Whether `pattern` matches `event_type`: exactly, or as a prefix when it
/// ends in `*` (`app.*` matches `app.created` and `app.domain.added`; `*`
/// matches everything).
pub fn matches(pattern: &str, event_type: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => event_type.starts_with(prefix),
        None => pattern == event_type,
    }
}

/// The retry schedule configured under [`RETRY_SCHEDULE_KEY`], else
/// [`DEFAULT_RETRY_SCHEDULE`]; a configured value that does not parse is
/// ignored.
pub fn retry_schedule(configured: Option<&str>) -> Vec<u64> {
    configured
        .and_then(|raw| {
            raw.split(',')
                .map(|s| s.trim().parse::<u64>().ok())
                .collect::<Option<Vec<u64>>>()
        })
        .filter(|waits| !waits.is_empty())
        .unwrap_or_else(|| DEFAULT_RETRY_SCHEDULE.to_vec())
}

/// The wait in milliseconds after the `failed`-th failed attempt of a
/// round, or none when the round has had all its attempts.
pub fn next_wait_ms(schedule: &[u64], failed: u32) -> Option<u64> {
    let index = usize::try_from(failed).ok()?.checked_sub(1)?;
    schedule.get(index).map(|secs| secs.saturating_mul(1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_match_exactly_or_by_prefix() {
        assert!(matches("app.*", "app.created"));
        assert!(matches("app.*", "app.domain.added"));
        assert!(!matches("app.*", "apps.created"));
        assert!(matches("*", "project.created"));
        assert!(matches("project.created", "project.created"));
        assert!(!matches("project.created", "project.deleted"));
        assert!(is_pattern("app.*") && is_pattern("*") && is_pattern("cron.job.created"));
        assert!(
            !is_pattern("") && !is_pattern("App.*") && !is_pattern("a*b") && !is_pattern("a b")
        );
    }

    #[test]
    fn the_default_schedule_spans_about_a_day() {
        let total: u64 = DEFAULT_RETRY_SCHEDULE.iter().sum();
        assert!((24 * 3600..30 * 3600).contains(&total), "{total}");
        let s = retry_schedule(None);
        assert_eq!(next_wait_ms(&s, 1), Some(5000));
        assert_eq!(next_wait_ms(&s, 7), Some(36_000_000));
        assert_eq!(next_wait_ms(&s, 8), None);
        assert_eq!(retry_schedule(Some("1, 2")), vec![1, 2]);
        assert_eq!(retry_schedule(Some("x")), DEFAULT_RETRY_SCHEDULE.to_vec());
    }

    #[test]
    fn every_bad_field_is_named() {
        let input = EndpointInput {
            url: Some("ftp://x".into()),
            event_types: Some(vec!["ok.*".into(), "Bad".into()]),
            alert_emails: Some(vec!["nobody".into()]),
            ..EndpointInput::default()
        };
        let err = input.check().unwrap_err();
        let fields: Vec<&str> = err.errors().iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["url", "eventTypes[1]", "alertEmails[0]"]);
    }
}
