//! A check's configuration as the API takes it: its kind (`url`, `api`,
//! `heartbeat`), schedule, target and expectations, and where alerts go.
//! Bodies are read field by field so every invalid field is reported at once,
//! named by its JSON path; PATCH is a JSON merge patch (RFC 7396) over the
//! same shape.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use plateau_sdk::contract::mail::is_email;

use crate::assertions::Assertion;
use crate::status::StatusRange;
use crate::verdict::Expectations;

/// What a check watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A URL answers with an expected status, in time.
    Url,
    /// An HTTP API answers and its response passes assertions.
    Api,
    /// Something pings the check's URL at least once per interval.
    Heartbeat,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Url => "url",
            Kind::Api => "api",
            Kind::Heartbeat => "heartbeat",
        }
    }

    pub fn is_http(self) -> bool {
        self != Kind::Heartbeat
    }
}

/// The caller's plan, as far as check intervals go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    Free,
    Paid,
}

impl Plan {
    /// `free` (or unknown) is free; `starter`, `pro` and `scale` are paid.
    pub fn of(plan: Option<&str>) -> Plan {
        match plan {
            Some("starter" | "pro" | "scale") => Plan::Paid,
            _ => Plan::Free,
        }
    }

    /// The shortest interval the plan allows, in seconds (spec section 8).
    pub fn min_interval_seconds(self) -> u32 {
        match self {
            Plan::Free => FREE_MIN_INTERVAL,
            Plan::Paid => PAID_MIN_INTERVAL,
        }
    }
}

pub const FREE_MIN_INTERVAL: u32 = 300;
pub const PAID_MIN_INTERVAL: u32 = 60;
pub const MAX_INTERVAL: u32 = 86_400;
pub const DEFAULT_INTERVAL: u32 = 300;
pub const MAX_RETRIES: u32 = 10;
/// The platform gives a plugin call 10 s; a check's own timeout stays under
/// it so a hanging target is recorded as a timeout, not a failed call.
pub const MAX_TIMEOUT_MS: u32 = 8_000;
pub const MIN_TIMEOUT_MS: u32 = 100;
pub const DEFAULT_TIMEOUT_MS: u32 = 5_000;
pub const DEFAULT_GRACE: u32 = 60;
const MAX_NAME: usize = 200;
const MAX_URL: usize = 2048;
const MAX_HEADERS: usize = 20;
const MAX_BODY: usize = 64 << 10;
const MAX_ASSERTIONS: usize = 20;
const MAX_EMAILS: usize = 10;
const METHODS: [&str; 7] = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
/// Headers the platform sets itself.
const RESERVED_HEADERS: [&str; 5] = [
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
];
/// Fields of a check's representation that are the platform's to set; a
/// client sending back what it read is not an error.
const READ_ONLY: [&str; 11] = [
    "id",
    "status",
    "statusSince",
    "consecutiveFailures",
    "lastRunAt",
    "lastResult",
    "pingUrl",
    "lastPingAt",
    "runs",
    "createdAt",
    "updatedAt",
];

/// Where a check's alerts go.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Alerts {
    /// Sent through the email relay (`checks.email.requested` events).
    #[serde(default)]
    pub emails: Vec<String>,
    /// Signed with Standard Webhooks; the secret is shown once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub webhook_url: Option<String>,
    /// The webhook secret, only in the answer of the call that issued it;
    /// never stored here (the record keeps it sealed) nor read from a body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(read_only)]
    pub webhook_secret: Option<String>,
}

/// A check's configuration.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    pub name: String,
    pub kind: Kind,
    pub enabled: bool,
    pub interval_seconds: u32,
    pub retries: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// Codes (`200`) and ranges (`200-299`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<String>)]
    pub expected_status: Vec<StatusRange>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_ms: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub degraded_after_ms: Option<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub assertions: Vec<Assertion>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace_seconds: Option<u32>,
    #[serde(default)]
    pub alerts: Alerts,
}

/// A body's instructions that are not configuration.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Directives {
    /// `alerts.rotateWebhookSecret: true`: issue a new webhook secret.
    pub rotate_webhook_secret: bool,
}

/// Invalid fields as `(JSON path, message)`.
pub type FieldErrors = Vec<(String, String)>;

impl Spec {
    /// Reads a whole check from a request body, for the caller's `plan`.
    pub fn from_input(body: &Value, plan: Plan) -> Result<(Spec, Directives), FieldErrors> {
        let Value::Object(map) = body else {
            return Err(vec![("body".into(), "must be a JSON object".into())]);
        };
        let mut r = Reader {
            map,
            errors: Vec::new(),
        };
        r.reject_unknown();
        let kind = match r.string("kind", true).as_deref() {
            Some("url") => Some(Kind::Url),
            Some("api") => Some(Kind::Api),
            Some("heartbeat") => Some(Kind::Heartbeat),
            Some(_) => {
                r.error("kind", "must be url, api or heartbeat");
                None
            }
            None => None,
        };
        let name = r.string("name", true).unwrap_or_default();
        if name.chars().count() > MAX_NAME {
            r.error("name", format!("must be at most {MAX_NAME} characters"));
        }
        let enabled = r.boolean("enabled").unwrap_or(true);
        let min = plan.min_interval_seconds();
        let interval_seconds = r.integer("intervalSeconds", 1, MAX_INTERVAL, DEFAULT_INTERVAL);
        if interval_seconds < min {
            let message = match plan {
                Plan::Free => format!(
                    "must be at least {FREE_MIN_INTERVAL} seconds (5 minutes) on the free plan; \
                     paid plans allow {PAID_MIN_INTERVAL} seconds (1 minute)"
                ),
                Plan::Paid => format!("must be at least {PAID_MIN_INTERVAL} seconds (1 minute)"),
            };
            r.error("intervalSeconds", message);
        }
        let retries = r.integer("retries", 0, MAX_RETRIES, 0);
        let (alerts, directives) = r.alerts();
        let mut spec = Spec {
            name,
            kind: kind.unwrap_or(Kind::Url),
            enabled,
            interval_seconds,
            retries,
            method: None,
            url: None,
            headers: BTreeMap::new(),
            body: None,
            expected_status: Vec::new(),
            timeout_ms: None,
            degraded_after_ms: None,
            assertions: Vec::new(),
            grace_seconds: None,
            alerts,
        };
        match kind {
            Some(kind) if kind.is_http() => r.http(&mut spec),
            Some(_) => {
                spec.grace_seconds =
                    Some(r.integer("graceSeconds", 0, MAX_INTERVAL, DEFAULT_GRACE));
                r.not_for("heartbeat", &HTTP_FIELDS);
            }
            None => {}
        }
        if r.errors.is_empty() {
            Ok((spec, directives))
        } else {
            Err(r.errors)
        }
    }

    /// The body a client would send to create this check again; the base of
    /// a PATCH.
    pub fn to_input(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    pub fn interval_ms(&self) -> u64 {
        u64::from(self.interval_seconds) * 1000
    }

    /// How long after the last ping a heartbeat is overdue: interval plus grace.
    pub fn heartbeat_window_ms(&self) -> u64 {
        self.interval_ms() + u64::from(self.grace_seconds.unwrap_or(0)) * 1000
    }

    pub fn timeout_ms(&self) -> u32 {
        self.timeout_ms.unwrap_or(DEFAULT_TIMEOUT_MS)
    }

    /// What an HTTP check expects of a response.
    pub fn expectations(&self) -> Expectations<'_> {
        Expectations {
            expected_status: &self.expected_status,
            assertions: &self.assertions,
            timeout_ms: self.timeout_ms(),
            degraded_after_ms: self.degraded_after_ms,
        }
    }
}

/// Applies a JSON merge patch (RFC 7396) to `target`.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(map) = target else { return };
    for (key, value) in patch {
        if value.is_null() {
            map.remove(key);
        } else {
            merge_patch(map.entry(key.clone()).or_insert(Value::Null), value);
        }
    }
}

const HTTP_FIELDS: [&str; 8] = [
    "url",
    "method",
    "headers",
    "body",
    "expectedStatus",
    "timeoutMs",
    "degradedAfterMs",
    "assertions",
];

const COMMON_FIELDS: [&str; 6] = [
    "name",
    "kind",
    "enabled",
    "intervalSeconds",
    "retries",
    "alerts",
];

struct Reader<'a> {
    map: &'a Map<String, Value>,
    errors: FieldErrors,
}

impl<'a> Reader<'a> {
    fn error(&mut self, field: impl Into<String>, message: impl Into<String>) {
        self.errors.push((field.into(), message.into()));
    }

    /// The field's value, with `null` as absent.
    fn get(&self, field: &str) -> Option<&'a Value> {
        let map: &'a Map<String, Value> = self.map;
        map.get(field).filter(|v| !v.is_null())
    }

    fn reject_unknown(&mut self) {
        let unknown: Vec<String> = self
            .map
            .keys()
            .filter(|k| {
                let k = k.as_str();
                !COMMON_FIELDS.contains(&k)
                    && !HTTP_FIELDS.contains(&k)
                    && k != "graceSeconds"
                    && !READ_ONLY.contains(&k)
            })
            .cloned()
            .collect();
        for key in unknown {
            self.error(key, "is not a field of a check");
        }
    }

    fn not_for(&mut self, kind: &str, fields: &[&str]) {
        for field in fields {
            if self.get(field).is_some() {
                self.error(*field, format!("does not apply to a {kind} check"));
            }
        }
    }

    fn string(&mut self, field: &str, required: bool) -> Option<String> {
        match self.get(field) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
            Some(Value::String(_)) => {
                self.error(field, "must not be empty");
                None
            }
            Some(_) => {
                self.error(field, "must be a string");
                None
            }
            None if required => {
                self.error(field, "is required");
                None
            }
            None => None,
        }
    }

    fn boolean(&mut self, field: &str) -> Option<bool> {
        match self.get(field) {
            Some(Value::Bool(b)) => Some(*b),
            Some(_) => {
                self.error(field, "must be true or false");
                None
            }
            None => None,
        }
    }

    /// An integer from `low` to `high`, `default` when absent.
    fn integer(&mut self, field: &str, low: u32, high: u32, default: u32) -> u32 {
        match self.get(field) {
            None => default,
            Some(v) => match v.as_u64().and_then(|n| u32::try_from(n).ok()) {
                Some(n) if (low..=high).contains(&n) => n,
                _ => {
                    self.error(field, format!("must be an integer from {low} to {high}"));
                    default
                }
            },
        }
    }

    fn alerts(&mut self) -> (Alerts, Directives) {
        let mut alerts = Alerts::default();
        let mut directives = Directives::default();
        let Some(value) = self.get("alerts") else {
            return (alerts, directives);
        };
        let Value::Object(map) = value else {
            self.error("alerts", "must be an object with emails and webhookUrl");
            return (alerts, directives);
        };
        for key in map.keys() {
            if ![
                "emails",
                "webhookUrl",
                "rotateWebhookSecret",
                "webhookSecret",
            ]
            .contains(&key.as_str())
            {
                self.error(format!("alerts.{key}"), "is not a field of alerts");
            }
        }
        match map.get("emails") {
            None | Some(Value::Null) => {}
            Some(Value::Array(items)) if items.len() <= MAX_EMAILS => {
                for (i, item) in items.iter().enumerate() {
                    match item.as_str().map(str::trim) {
                        Some(address) if is_email(address) => {
                            alerts.emails.push(address.to_owned())
                        }
                        _ => self.error(
                            format!("alerts.emails[{i}]"),
                            "must be an email address such as ops@example.com",
                        ),
                    }
                }
            }
            Some(_) => self.error(
                "alerts.emails",
                format!("must be a list of at most {MAX_EMAILS} email addresses"),
            ),
        }
        match map.get("webhookUrl") {
            None | Some(Value::Null) => {}
            Some(Value::String(url)) => match url_problem(url.trim()) {
                None => alerts.webhook_url = Some(url.trim().to_owned()),
                Some(why) => self.error("alerts.webhookUrl", why),
            },
            Some(_) => self.error("alerts.webhookUrl", "must be an http or https URL"),
        }
        match map.get("rotateWebhookSecret") {
            None | Some(Value::Null) => {}
            Some(Value::Bool(b)) => directives.rotate_webhook_secret = *b,
            Some(_) => self.error("alerts.rotateWebhookSecret", "must be true or false"),
        }
        if directives.rotate_webhook_secret && alerts.webhook_url.is_none() {
            self.error(
                "alerts.rotateWebhookSecret",
                "needs a webhookUrl to rotate the secret of",
            );
        }
        (alerts, directives)
    }

    /// The fields of `url` and `api` checks.
    fn http(&mut self, spec: &mut Spec) {
        let kind = spec.kind;
        if let Some(url) = self.string("url", true) {
            match url_problem(&url) {
                None => spec.url = Some(url),
                Some(why) => self.error("url", why),
            }
        }
        let method = self
            .string("method", false)
            .map(|m| m.to_ascii_uppercase())
            .unwrap_or_else(|| "GET".to_owned());
        if METHODS.contains(&method.as_str()) {
            spec.method = Some(method);
        } else {
            self.error("method", format!("must be one of {}", METHODS.join(", ")));
        }
        match self.get("headers") {
            None => {}
            Some(Value::Object(map)) if map.len() <= MAX_HEADERS => {
                for (name, value) in map {
                    let lower = name.to_ascii_lowercase();
                    let token = !name.is_empty()
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
                    match value.as_str() {
                        _ if !token => {
                            self.error(format!("headers.{name}"), "is not a valid header name")
                        }
                        _ if RESERVED_HEADERS.contains(&lower.as_str()) => self.error(
                            format!("headers.{name}"),
                            "is set by the platform and cannot be configured",
                        ),
                        Some(v) if !v.chars().any(char::is_control) => {
                            spec.headers.insert(lower, v.to_owned());
                        }
                        _ => self.error(
                            format!("headers.{name}"),
                            "must be a string without control characters",
                        ),
                    }
                }
            }
            Some(_) => self.error(
                "headers",
                format!("must be an object of at most {MAX_HEADERS} header names to string values"),
            ),
        }
        match self.get("expectedStatus") {
            None => spec.expected_status = vec![StatusRange::SUCCESS],
            Some(Value::Array(items)) if !items.is_empty() && items.len() <= 20 => {
                for (i, item) in items.iter().enumerate() {
                    match StatusRange::from_json(item) {
                        Ok(range) => spec.expected_status.push(range),
                        Err(why) => self.error(format!("expectedStatus[{i}]"), why),
                    }
                }
            }
            Some(_) => self.error(
                "expectedStatus",
                "must be a list of 1 to 20 codes or ranges such as [\"200-299\"]",
            ),
        }
        let timeout = self.integer(
            "timeoutMs",
            MIN_TIMEOUT_MS,
            MAX_TIMEOUT_MS,
            DEFAULT_TIMEOUT_MS,
        );
        spec.timeout_ms = Some(timeout);
        if self.get("degradedAfterMs").is_some() {
            let high = timeout.saturating_sub(1).max(1);
            spec.degraded_after_ms = Some(self.integer("degradedAfterMs", 1, high, high));
        }
        if kind == Kind::Url {
            self.not_for("url", &["body", "assertions"]);
            return;
        }
        match self.get("body") {
            None => {}
            Some(Value::String(body)) if body.len() <= MAX_BODY => spec.body = Some(body.clone()),
            Some(_) => self.error(
                "body",
                format!("must be a string of at most {MAX_BODY} bytes"),
            ),
        }
        match self.get("assertions") {
            None => {}
            Some(Value::Array(items)) if items.len() <= MAX_ASSERTIONS => {
                for (i, item) in items.iter().enumerate() {
                    match Assertion::from_json(item) {
                        Ok(a) => spec.assertions.push(a),
                        Err(errors) => {
                            for (field, message) in errors {
                                let path = if field.is_empty() {
                                    format!("assertions[{i}]")
                                } else {
                                    format!("assertions[{i}].{field}")
                                };
                                self.error(path, message);
                            }
                        }
                    }
                }
            }
            Some(_) => self.error(
                "assertions",
                format!("must be a list of at most {MAX_ASSERTIONS} assertions"),
            ),
        }
    }
}

/// Why `url` is not a usable http(s) URL, if it is not.
pub fn url_problem(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    let Some(rest) = rest else {
        return Some("must be an http:// or https:// URL".to_owned());
    };
    if url.len() > MAX_URL {
        return Some(format!("must be at most {MAX_URL} characters"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Some("must not contain spaces or control characters".to_owned());
    }
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Some("must not carry credentials; use headers".to_owned());
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => authority.split(':').next().unwrap_or(""),
    };
    if host.is_empty() {
        return Some("must name a host".to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields(body: Value, plan: Plan) -> Vec<String> {
        match Spec::from_input(&body, plan) {
            Ok(_) => Vec::new(),
            Err(errors) => errors.into_iter().map(|(f, _)| f).collect(),
        }
    }

    #[test]
    fn a_url_check_gets_defaults() {
        let (spec, directives) = Spec::from_input(
            &json!({"name": "Home", "kind": "url", "url": "https://example.com/health"}),
            Plan::Free,
        )
        .unwrap();
        assert_eq!(directives, Directives::default());
        assert_eq!(
            spec.to_input(),
            json!({"name": "Home", "kind": "url", "enabled": true, "intervalSeconds": 300,
                   "retries": 0, "method": "GET", "url": "https://example.com/health",
                   "expectedStatus": ["200-299"], "timeoutMs": 5000, "alerts": {"emails": []}})
        );
        // What it answers can be sent back as is.
        let again = Spec::from_input(&spec.to_input(), Plan::Free).unwrap().0;
        assert_eq!(again, spec);
    }

    #[test]
    fn the_interval_minimum_depends_on_the_plan() {
        let body = |seconds: u32| json!({"name": "x", "kind": "url", "url": "https://example.com", "intervalSeconds": seconds});
        assert_eq!(fields(body(299), Plan::Free), ["intervalSeconds"]);
        assert_eq!(fields(body(300), Plan::Free), Vec::<String>::new());
        assert_eq!(fields(body(60), Plan::Paid), Vec::<String>::new());
        assert_eq!(fields(body(59), Plan::Paid), ["intervalSeconds"]);
        let err = Spec::from_input(&body(60), Plan::Free).unwrap_err();
        assert!(
            err[0]
                .1
                .contains("at least 300 seconds (5 minutes) on the free plan"),
            "{err:?}"
        );
        assert_eq!(Plan::of(Some("pro")), Plan::Paid);
        assert_eq!(Plan::of(Some("free")), Plan::Free);
        assert_eq!(Plan::of(None), Plan::Free);
    }

    #[test]
    fn invalid_fields_are_all_named() {
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (json!({}), vec!["kind", "name"]),
            (json!([1]), vec!["body"]),
            (json!({"name": "x", "kind": "ping"}), vec!["kind"]),
            (
                json!({"name": "x", "kind": "url", "url": "ftp://x", "method": "TRACE",
                       "timeoutMs": 50, "expectedStatus": ["700"], "retries": 11}),
                vec!["retries", "url", "method", "expectedStatus[0]", "timeoutMs"],
            ),
            (
                json!({"name": "x", "kind": "url", "url": "https://x.io", "assertions": [], "body": "b"}),
                vec!["body", "assertions"],
            ),
            (
                json!({"name": "x", "kind": "api", "url": "https://x.io",
                       "assertions": [{"type": "jsonPath", "path": "$..a", "operator": "exists"}, 3]}),
                vec!["assertions[0].path", "assertions[1]"],
            ),
            (
                json!({"name": "x", "kind": "heartbeat", "url": "https://x.io", "graceSeconds": -1}),
                vec!["graceSeconds", "url"],
            ),
            (
                json!({"name": "x", "kind": "url", "url": "https://x.io", "degradedAfterMs": 6000}),
                vec!["degradedAfterMs"],
            ),
            (
                json!({"name": "x", "kind": "url", "url": "https://x.io", "headers": {"Host": "a", "bad name": "b"},
                       "alerts": {"emails": ["nope"], "webhookUrl": "mailto:x", "rotateWebhookSecret": 1, "sms": true}}),
                vec![
                    "alerts.sms",
                    "alerts.emails[0]",
                    "alerts.webhookUrl",
                    "alerts.rotateWebhookSecret",
                    "headers.Host",
                    "headers.bad name",
                ],
            ),
            (
                json!({"name": "x", "kind": "url", "url": "https://x.io", "colour": "red"}),
                vec!["colour"],
            ),
            // What the API answers is accepted back.
            (
                json!({"name": "x", "kind": "heartbeat", "id": "chk_1", "status": "up", "pingUrl": "u"}),
                vec![],
            ),
        ];
        for (body, want) in cases {
            assert_eq!(fields(body.clone(), Plan::Paid), want, "{body}");
        }
    }

    #[test]
    fn merge_patch_follows_rfc_7396() {
        let mut target = json!({"a": "b", "c": {"d": "e", "f": "g"}});
        merge_patch(&mut target, &json!({"a": "z", "c": {"f": null}}));
        assert_eq!(target, json!({"a": "z", "c": {"d": "e"}}));
        merge_patch(&mut target, &json!({"c": [1]}));
        assert_eq!(target, json!({"a": "z", "c": [1]}));
    }

    #[test]
    fn urls_and_emails() {
        for ok in [
            "https://example.com",
            "http://127.0.0.1:8080/x?y=1",
            "https://[::1]:443/",
        ] {
            assert_eq!(url_problem(ok), None, "{ok}");
        }
        for bad in [
            "example.com",
            "https://",
            "https://a b",
            "https://u:p@x.io",
            "https://:80/",
        ] {
            assert!(url_problem(bad).is_some(), "{bad}");
        }
        assert!(is_email("ops+alerts@example.co.uk"));
        for bad in [
            "ops",
            "@x.io",
            "a@b",
            "a b@x.io",
            "A <a@x.io>",
            "a@x.io\r\nBcc: b@y.io",
        ] {
            assert!(!is_email(bad), "{bad}");
        }
    }
}
