//! The body of `POST /cron-jobs` (and of a `PATCH`, merged over the stored
//! job), and its rules, reported all at once as `validation_failed`.

use plateau_sdk::{ApiError, Validator};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::missed::{DEFAULT_STARTING_DEADLINE_SECONDS, MAX_STARTING_DEADLINE_SECONDS};
use crate::schedule::Schedule;

pub const MAX_NAME_CHARS: usize = 100;
pub const MAX_URL_BYTES: usize = 2048;
pub const MAX_HEADERS: usize = 20;
pub const MAX_BODY_BYTES: usize = 64 * 1024;
pub const DEFAULT_TIMEOUT_SECONDS: u32 = 10;
pub const MAX_TIMEOUT_SECONDS: u32 = 30;
pub const MAX_IMAGE_BYTES: usize = 512;
pub const MAX_ARGS: usize = 64;
pub const MAX_ARG_BYTES: usize = 4096;
const METHODS: [&str; 5] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/// The fields of a job as sent.
#[derive(Debug, Default, Clone, Deserialize, ToSchema)]
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
    pub starting_deadline_seconds: Option<u32>,
    pub paused: Option<bool>,
    /// `type: container`: a `wasi:cli` command image of this platform's
    /// registry, and its arguments.
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
    /// `http` or `container`.
    pub kind: String,
    pub url: String,
    pub method: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<String>,
    pub timeout_seconds: u32,
    pub starting_deadline_seconds: u32,
    pub paused: bool,
    pub image: String,
    pub command: Vec<String>,
}

/// Whether `image` is `registry/<org>/<path>` with a tag or digest
/// allowed, in the repository namespace of organisation `org`.
pub fn is_own_image(image: &str, org: &str) -> bool {
    let text = image.strip_prefix("oci://").unwrap_or(image);
    let mut parts = text.splitn(3, '/');
    let (Some(host), Some(namespace), Some(rest)) = (parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    !host.is_empty()
        && namespace == org
        && !rest.is_empty()
        && !text
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
}

impl JobInput {
    /// The rules, for a job of organisation `org` (a container job's image
    /// must be in that organisation's repositories).
    pub fn check(self, org: &str) -> Result<Checked, ApiError> {
        let mut v = Validator::new();
        let name = self.name.unwrap_or_default();
        v.check(
            !name.trim().is_empty() && name.chars().count() <= MAX_NAME_CHARS,
            "name",
            "must be 1 to 100 characters",
        );
        v.check(
            !name.contains(char::is_control),
            "name",
            "must not contain control characters",
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
        let kind = match self.kind.as_deref() {
            Some(kind @ ("http" | "container")) => kind.to_owned(),
            _ => {
                v.error("type", "must be http or container");
                String::new()
            }
        };
        let container = kind == "container";
        let url = self.url.clone().unwrap_or_default();
        let image = self.image.clone().unwrap_or_default();
        let command = self.command.clone().unwrap_or_default();
        if container {
            v.check(
                image.len() <= MAX_IMAGE_BYTES && is_own_image(&image, org),
                "image",
                format!(
                    "must be an image of this organisation's repositories in this platform's registry: <registry>/{org}/<name>:<tag>"
                ),
            );
            v.check(
                command.len() <= MAX_ARGS && command.iter().all(|a| a.len() <= MAX_ARG_BYTES),
                "command",
                "must be at most 64 arguments of at most 4096 bytes each",
            );
            v.check(
                self.url.is_none()
                    && self.method.is_none()
                    && self.body.is_none()
                    && self.headers.as_ref().is_none_or(|h| h.is_empty()),
                "url",
                "url, method, headers and body belong to http jobs: leave them out of a container job",
            );
        } else {
            v.check(
                self.image.is_none() && self.command.is_none(),
                "image",
                "image and command belong to container jobs: leave them out of an http job",
            );
            v.check(
                url.len() <= MAX_URL_BYTES
                    && (url.starts_with("https://") || url.starts_with("http://"))
                    && url.len() > "https://".len(),
                "url",
                "must be an http or https URL of at most 2048 bytes",
            );
        }
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
        let starting_deadline_seconds = self
            .starting_deadline_seconds
            .unwrap_or(DEFAULT_STARTING_DEADLINE_SECONDS);
        v.check(
            (1..=MAX_STARTING_DEADLINE_SECONDS).contains(&starting_deadline_seconds),
            "startingDeadlineSeconds",
            "must be 1 to 86400",
        );
        v.finish()?;
        Ok(Checked {
            name: name.trim().to_owned(),
            schedule: schedule.trim().to_owned(),
            timezone,
            parsed: parsed.expect("a valid schedule"),
            kind,
            url: if container { String::new() } else { url },
            method: if container { String::new() } else { method },
            headers,
            body: self.body,
            timeout_seconds,
            starting_deadline_seconds,
            paused: self.paused.unwrap_or(false),
            image: if container { image } else { String::new() },
            command: if container { command } else { Vec::new() },
        })
    }
}
