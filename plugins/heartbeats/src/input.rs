//! The bodies of `POST /heartbeats` and `PATCH /heartbeats/{id}`, and their
//! rules, reported all at once as `validation_failed`.

use plateau_sdk::contract::mail::is_email;
use plateau_sdk::{ApiError, Validator};
use serde::{Deserialize, Deserializer};
use utoipa::ToSchema;

use crate::schedule::{Schedule, check_seconds};

/// The longest name.
pub const MAX_NAME_CHARS: usize = 100;
/// The most email recipients of one heartbeat.
pub const MAX_EMAILS: usize = 10;
/// The longest webhook URL.
pub const MAX_URL_BYTES: usize = 2048;
/// Defaults of a new heartbeat: a daily period and an hour of grace.
pub const DEFAULT_PERIOD_SECONDS: u64 = 86_400;
pub const DEFAULT_GRACE_SECONDS: u64 = 3_600;

/// `POST /heartbeats`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewHeartbeat {
    pub name: Option<String>,
    pub period_seconds: Option<u64>,
    pub schedule: Option<String>,
    pub timezone: Option<String>,
    pub grace_seconds: Option<u64>,
    pub alert_emails: Option<Vec<String>>,
    pub webhook_url: Option<String>,
    pub alert_on_late: Option<bool>,
    pub paused: Option<bool>,
}

/// `PATCH /heartbeats/{id}`: every field optional; `webhookUrl: null`
/// removes the webhook.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HeartbeatPatch {
    pub name: Option<String>,
    pub period_seconds: Option<u64>,
    pub schedule: Option<String>,
    pub timezone: Option<String>,
    pub grace_seconds: Option<u64>,
    pub alert_emails: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub webhook_url: Option<Option<String>>,
    pub alert_on_late: Option<bool>,
    pub paused: Option<bool>,
}

/// A field that may be sent as `null`: `Some(None)`; absent: `None`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// A schedule as the fields give it: exactly one of a period and a cron
/// expression, the time zone only with the latter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScheduleFields {
    Period(u64),
    Cron {
        expression: String,
        timezone: String,
    },
}

impl ScheduleFields {
    /// Checks the fields; `previous` is the current schedule of a patched
    /// heartbeat, for a patch that changes only the time zone.
    pub fn from_fields(
        v: &mut Validator,
        period: Option<u64>,
        schedule: Option<&str>,
        timezone: Option<&str>,
        previous: Option<&ScheduleFields>,
    ) -> Option<ScheduleFields> {
        let fields = match (period, schedule, timezone, previous) {
            (Some(_), Some(_), _, _) => {
                v.error("schedule", "cannot be set with periodSeconds: choose one");
                return None;
            }
            (Some(_), None, Some(_), _) => {
                v.error(
                    "timezone",
                    "applies only to a cron schedule: remove it or set schedule",
                );
                return None;
            }
            (Some(seconds), None, None, _) => ScheduleFields::Period(seconds),
            (None, Some(expression), timezone, previous) => {
                let inherited = match previous {
                    Some(ScheduleFields::Cron { timezone, .. }) => timezone.as_str(),
                    _ => "UTC",
                };
                ScheduleFields::Cron {
                    expression: expression.trim().to_owned(),
                    timezone: timezone.unwrap_or(inherited).to_owned(),
                }
            }
            (None, None, Some(timezone), Some(ScheduleFields::Cron { expression, .. })) => {
                ScheduleFields::Cron {
                    expression: expression.clone(),
                    timezone: timezone.to_owned(),
                }
            }
            (None, None, Some(_), _) => {
                v.error(
                    "timezone",
                    "applies only to a cron schedule: set schedule too",
                );
                return None;
            }
            (None, None, None, Some(previous)) => previous.clone(),
            (None, None, None, None) => ScheduleFields::Period(DEFAULT_PERIOD_SECONDS),
        };
        match fields.compile() {
            Ok(_) => Some(fields),
            Err(e) => {
                v.error(e.field, e.message);
                None
            }
        }
    }

    pub fn compile(&self) -> Result<Schedule, crate::schedule::ScheduleError> {
        let schedule = match self {
            ScheduleFields::Period(seconds) => Schedule::period(*seconds)?,
            ScheduleFields::Cron {
                expression,
                timezone,
            } => Schedule::cron(expression, timezone)?,
        };
        // A cron expression that never matches (`0 0 30 2 *`) is refused now
        // rather than leaving a heartbeat that can never be late.
        schedule.next_after(plateau_sdk::clock::now_millis())?;
        Ok(schedule)
    }
}

/// Checks a name.
pub fn check_name(v: &mut Validator, name: &str) {
    let chars = name.chars().count();
    v.check(!name.trim().is_empty(), "name", "must not be empty");
    v.check(
        chars <= MAX_NAME_CHARS,
        "name",
        format!("must be at most {MAX_NAME_CHARS} characters"),
    );
    v.check(
        !name.chars().any(char::is_control),
        "name",
        "must not contain control characters",
    );
}

pub fn check_grace(v: &mut Validator, seconds: u64) {
    if let Err(e) = check_seconds("graceSeconds", seconds) {
        v.error(e.field, e.message);
    }
}

/// Checks recipients: at most [`MAX_EMAILS`], each `local@domain`, no
/// duplicates.
pub fn check_emails(v: &mut Validator, emails: &[String]) {
    if emails.len() > MAX_EMAILS {
        v.error(
            "alertEmails",
            format!("must have at most {MAX_EMAILS} addresses"),
        );
    }
    for (i, email) in emails.iter().enumerate() {
        if !is_email(email) {
            v.error(
                format!("alertEmails[{i}]"),
                "must be an email address such as ops@example.com",
            );
        } else if emails[..i].iter().any(|e| e.eq_ignore_ascii_case(email)) {
            v.error(format!("alertEmails[{i}]"), "is listed twice");
        }
    }
}

/// Checks a webhook URL: `http` or `https`, a host, no whitespace. Whether
/// the host may be reached is the egress guard's decision, at delivery.
pub fn check_webhook_url(v: &mut Validator, url: &str) {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let host = rest
        .map(|r| r.split(['/', '?', '#']).next().unwrap_or_default())
        .map(|authority| authority.rsplit_once('@').map_or(authority, |(_, h)| h));
    let ok = url.len() <= MAX_URL_BYTES
        && !url.chars().any(|c| c.is_whitespace() || c.is_control())
        && host.is_some_and(|h| !h.is_empty() && !h.starts_with(':'));
    v.check(
        ok,
        "webhookUrl",
        format!(
            "must be an http or https URL with a host, at most {MAX_URL_BYTES} bytes: https://hooks.example.com/heartbeats"
        ),
    );
}

/// The fields of a `NewHeartbeat`, checked.
pub struct Checked {
    pub name: String,
    pub schedule: ScheduleFields,
    pub grace_seconds: u64,
    pub alert_emails: Vec<String>,
    pub webhook_url: Option<String>,
    pub alert_on_late: bool,
    pub paused: bool,
}

impl NewHeartbeat {
    pub fn check(self) -> Result<Checked, ApiError> {
        let mut v = Validator::new();
        let name = self.name.unwrap_or_default();
        match name.is_empty() {
            true => {
                v.error("name", "is required");
            }
            false => check_name(&mut v, &name),
        }
        let schedule = ScheduleFields::from_fields(
            &mut v,
            self.period_seconds,
            self.schedule.as_deref(),
            self.timezone.as_deref(),
            None,
        );
        let grace_seconds = self.grace_seconds.unwrap_or(DEFAULT_GRACE_SECONDS);
        check_grace(&mut v, grace_seconds);
        let alert_emails = self.alert_emails.unwrap_or_default();
        check_emails(&mut v, &alert_emails);
        if let Some(url) = &self.webhook_url {
            check_webhook_url(&mut v, url);
        }
        v.finish()?;
        Ok(Checked {
            name: name.trim().to_owned(),
            schedule: schedule.ok_or_else(|| ApiError::internal("a valid schedule was lost"))?,
            grace_seconds,
            alert_emails,
            webhook_url: self.webhook_url,
            alert_on_late: self.alert_on_late.unwrap_or(false),
            paused: self.paused.unwrap_or(false),
        })
    }
}
