//! The body of `POST /cron-jobs` (and of a `PATCH`, merged over the stored
//! job), and its rules, reported all at once as `validation_failed`.

use plateau_sdk::{ApiError, Validator};
use serde::Deserialize;

use crate::schedule::Schedule;

pub const MAX_NAME_CHARS: usize = 100;
pub const MAX_URL_BYTES: usize = 2048;
pub const MAX_HEADERS: usize = 20;
pub const MAX_BODY_BYTES: usize = 64 * 1024;
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 10;
pub const MAX_TIMEOUT_SECONDS: u32 = 30;
const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// The fields of a job as sent.
#[derive(Debug, Default, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobInput {
    pub name: Option<String>,
    pub schedule: Option<String>,
    pub timezone: Option<String>,
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub url: Option<String>,
    pub method: Option<String>,
    pub headers: Option<std::collections::BTreeMap<String, String>>,
    pub body: Option<String>,
    pub timeout_seconds: Option<u32>,
    pub paused: Option<bool>,
    /// Only for `type: container`, which this server does not run yet.
    pub image: Option<String>,
    pub command: Option<Vec<String>>,
}

/// A job's fields after the rules.
#[derive(Debug, Clone)]
pub struct Checked {
    pub name: String,
    pub schedule: String,
    pub timezone: String,
    pub parsed: Schedule,
    pub url: String,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    pub timeout_seconds: u32,
    pub paused: bool,
}

impl JobInput {
    pub fn check(self) -> Result<Checked, ApiError> {
        let mut v = Validator::new();
        let name = self.name.unwrap_or_default();
        v.check(
            !name.trim().is_empty() && name.chars().count() <= MAX_NAME_CHARS,
            "name",
            "must be 1 to 100 characters",
        );
        let timezone = self.timezone.unwrap_or_else(|| "UTC".to_owned());
        let schedule = self.schedule.unwrap_or_default();
        let parsed = match Schedule::new(&schedule, &timezone) {
            Ok(parsed) => Some(parsed),
            Err(e) => {
                v.error(e.field, e.message);
                None
            }
        };
        match self.kind.as_deref() {
            Some("http") => {}
            Some("container") => {
                v.error(
                    "type",
                    "container jobs are not available on this server yet: use http",
                );
            }
            _ => {
                v.error("type", "must be http");
            }
        }
        v.check(
            self.image.is_none() && self.command.is_none(),
            "image",
            "image and command belong to container jobs, which this server does not run yet",
        );
        let url = self.url.unwrap_or_default();
        v.check(
            url.len() <= MAX_URL_BYTES
                && (url.starts_with("https://") || url.starts_with("http://"))
                && url.len() > "https://".len(),
            "url",
            "must be an http or https URL of at most 2048 bytes",
        );
        let method = self
            .method
            .unwrap_or_else(|| "GET".to_owned())
            .to_ascii_uppercase();
        v.check(
            METHODS.contains(&method.as_str()),
            "method",
            "must be GET, POST, PUT, PATCH or DELETE",
        );
        let headers: Vec<(String, String)> = self
            .headers
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect();
        v.check(
            headers.len() <= MAX_HEADERS
                && headers.iter().all(|(k, val)| {
                    !k.is_empty()
                        && k.len() <= 100
                        && k.bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
                        && val.len() <= 4096
                        && !val.bytes().any(|b| b.is_ascii_control())
                }),
            "headers",
            "must be at most 20 headers with token names and values without control characters",
        );
        if let Some(body) = &self.body {
            v.check(
                body.len() <= MAX_BODY_BYTES,
                "body",
                "must be at most 65536 bytes",
            );
        }
        let timeout_seconds = self.timeout_seconds.unwrap_or(DEFAULT_TIMEOUT_SECONDS);
        v.check(
            (1..=MAX_TIMEOUT_SECONDS).contains(&timeout_seconds),
            "timeoutSeconds",
            "must be 1 to 30",
        );
        v.finish()?;
        Ok(Checked {
            name: name.trim().to_owned(),
            schedule: schedule.trim().to_owned(),
            timezone,
            parsed: parsed.expect("a valid schedule"),
            url,
            method,
            headers,
            body: self.body,
            timeout_seconds,
            paused: self.paused.unwrap_or(false),
        })
    }
}
