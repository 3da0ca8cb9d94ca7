//! Request bodies and their rules; every refusal names its field.

use plateau_sdk::{ApiError, FieldError};
use serde::{Deserialize, Deserializer};
use utoipa::ToSchema;

use crate::record::{Affected, ComponentStatus, Source};

/// `PUT /status-pages/page`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PageInput {
    /// Shown as the page's title: 1 to 100 characters.
    pub name: String,
    /// The page's public URL ends with it: 3 to 40 of `a-z`, `0-9` and `-`,
    /// unique on the platform.
    pub slug: String,
    #[serde(default)]
    pub description: Option<String>,
    /// An `https://` or `http://` link back to the organisation's site.
    #[serde(default)]
    pub homepage_url: Option<String>,
}

/// `POST /status-pages/components`, and `PATCH` with the fields to change.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ComponentInput {
    /// 1 to 100 characters; required to create.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Components are shown by position, then name.
    #[serde(default)]
    pub position: Option<u32>,
    /// A check or heartbeat whose up, degraded (late) and down set the
    /// status; `null` to set it by hand again.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Source>)]
    pub source: Option<Option<Source>>,
    /// The status now (a fed component follows its source's next change).
    #[serde(default)]
    pub status: Option<ComponentStatus>,
}

/// `POST /status-pages/incidents`: an incident, or scheduled maintenance
/// when `scheduledFor` is given.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IncidentInput {
    /// 1 to 200 characters.
    pub name: String,
    /// investigating (default), identified, monitoring or resolved; for
    /// maintenance scheduled (default), in_progress, verifying or completed.
    #[serde(default)]
    pub status: Option<String>,
    /// none, minor (default), major or critical.
    #[serde(default)]
    pub impact: Option<String>,
    /// The first update's text: 1 to 5,000 characters.
    pub body: String,
    /// Components and the status this sets them to.
    #[serde(default)]
    pub components: Vec<Affected>,
    /// RFC 3339; makes it scheduled maintenance.
    #[serde(default)]
    pub scheduled_for: Option<String>,
    /// RFC 3339, after `scheduledFor`; required with it.
    #[serde(default)]
    pub scheduled_until: Option<String>,
    /// Tell the subscribers (default true).
    #[serde(default)]
    pub notify: Option<bool>,
}

/// `POST /status-pages/incidents/{id}/updates`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateInput {
    /// The incident's new status (default: unchanged).
    #[serde(default)]
    pub status: Option<String>,
    /// 1 to 5,000 characters.
    pub body: String,
    #[serde(default)]
    pub components: Vec<Affected>,
    #[serde(default)]
    pub notify: Option<bool>,
}

/// `POST /status-pages/subscribers`: an email address (sent a link to
/// confirm) or a webhook URL (signed per Standard Webhooks).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubscriberInput {
    #[serde(default)]
    pub email: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
}

/// Tells a field sent as `null` (`Some(None)`) from one left out (`None`).
fn present<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

pub const INCIDENT_STATUSES: [&str; 4] = ["investigating", "identified", "monitoring", "resolved"];
pub const MAINTENANCE_STATUSES: [&str; 4] = ["scheduled", "in_progress", "verifying", "completed"];
pub const IMPACTS: [&str; 4] = ["none", "minor", "major", "critical"];

/// Collects field errors, then refuses them together.
#[derive(Default)]
pub struct Check(Vec<FieldError>);

impl Check {
    pub fn fail(&mut self, field: &str, message: impl Into<String>) {
        self.0.push(FieldError {
            field: field.to_owned(),
            message: message.into(),
        });
    }

    pub fn text(&mut self, field: &str, value: &str, max: usize) {
        let n = value.trim().chars().count();
        if n == 0 || n > max {
            self.fail(field, format!("must be 1 to {max} characters"));
        }
    }

    pub fn url(&mut self, field: &str, value: &str) {
        let ok = (value.starts_with("https://") || value.starts_with("http://"))
            && value.len() <= 2048
            && !value.chars().any(|c| c.is_whitespace() || c.is_control());
        if !ok {
            self.fail(field, "must be an http:// or https:// URL");
        }
    }

    pub fn one_of(&mut self, field: &str, value: &str, allowed: &[&str]) {
        if !allowed.contains(&value) {
            self.fail(field, format!("must be one of {}", allowed.join(", ")));
        }
    }

    pub fn done(self) -> Result<(), ApiError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ApiError::validation_errors(self.0))
        }
    }
}

/// Whether `slug` is usable in a URL: 3 to 40 of `a-z`, `0-9`, `-`, not
/// starting or ending with `-`.
pub fn is_slug(slug: &str) -> bool {
    (3..=40).contains(&slug.len())
        && slug
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !slug.starts_with('-')
        && !slug.ends_with('-')
}

/// A plain email address: one `@`, a dot in the domain, no spaces or
/// angle brackets, at most 254 bytes.
pub fn is_email(email: &str) -> bool {
    let Some((local, domain)) = email.split_once('@') else {
        return false;
    };
    email.len() <= 254
        && !local.is_empty()
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !email
            .chars()
            .any(|c| c.is_whitespace() || c.is_control() || "<>,;\"".contains(c))
        && !domain.contains('@')
}

/// An RFC 3339 UTC time (`2026-01-31T09:00:00Z`, fractions allowed) as
/// milliseconds since the Unix epoch.
pub fn parse_time(raw: &str) -> Option<u64> {
    let b = raw.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| raw.get(r)?.parse::<u64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let rest = &raw[19..];
    let (frac, zone) = match rest.strip_prefix('.') {
        Some(r) => {
            let digits = r.bytes().take_while(u8::is_ascii_digit).count();
            let ms = r[..digits.min(3)].parse::<u64>().unwrap_or(0)
                * 10u64.pow(3 - digits.min(3) as u32);
            (ms, &r[digits..])
        }
        None => (0, rest),
    };
    let offset: i64 = match zone {
        "Z" | "z" => 0,
        z if z.len() == 6 && (z.starts_with('+') || z.starts_with('-')) => {
            let hh: i64 = z[1..3].parse().ok()?;
            let mm: i64 = z[4..6].parse().ok()?;
            let sign = if z.starts_with('-') { -1 } else { 1 };
            sign * (hh * 3600 + mm * 60)
        }
        _ => return None,
    };
    let days = days_from_civil(y as i64, mo as i64, d as i64);
    let secs = days * 86_400 + (h * 3600 + mi * 60 + s) as i64 - offset;
    u64::try_from(secs).ok().map(|s| s * 1000 + frac)
}

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_parse_as_rfc_3339() {
        assert_eq!(parse_time("1970-01-02T00:00:00Z"), Some(86_400_000));
        assert_eq!(parse_time("1970-01-01T01:00:00.250+01:00"), Some(250));
        assert_eq!(
            parse_time("2026-11-27T09:05:00Z").map(plateau_sdk::clock::rfc3339),
            Some("2026-11-27T09:05:00.000Z".to_owned())
        );
        assert_eq!(parse_time("tomorrow"), None);
        assert_eq!(parse_time("2026-13-01T00:00:00Z"), None);
    }

    #[test]
    fn slugs_and_emails() {
        assert!(is_slug("acme-status"));
        assert!(!is_slug("ac") && !is_slug("-acme") && !is_slug("Acme"));
        assert!(is_email("ann@example.com"));
        assert!(!is_email("ann") && !is_email("a b@example.com") && !is_email("a@b@c.com"));
        assert!(!is_email("<ann@example.com>"));
    }
}
