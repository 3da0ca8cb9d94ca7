//! The request bodies and query parameters and their rules, reported all
//! at once as `validation_failed`. Pure: no storage, no clock.

use plateau_sdk::serde_json::Value;
use plateau_sdk::{ApiError, Validator};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::record::Status;

pub const MAX_NAME_CHARS: usize = 80;
/// The largest input, output or sleep output, as JSON.
pub const MAX_JSON_BYTES: usize = 64 * 1024;
pub const MAX_ERROR_CHARS: usize = 2048;
pub const MAX_ATTEMPTS: u32 = 50;
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
pub const MAX_KEY_CHARS: usize = 200;
pub const DEFAULT_LEASE_SECONDS: u32 = 60;
pub const MAX_LEASE_SECONDS: u32 = 3600;
/// Sleeps last 1 second to 90 days.
pub const MAX_SLEEP_SECONDS: u64 = 90 * 24 * 3600;
pub const MAX_FILTER_WORKFLOWS: usize = 20;
pub const FIRST_STEP: &str = "start";

/// A workflow or step name: 1 to 80 of `A-Z a-z 0-9 - _ .`.
pub fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
}

const NAME_RULE: &str = "must be 1 to 80 characters of letters, digits, -, _ and .";

fn check_json(v: &mut Validator, field: &str, value: &Value) {
    let size = serde_json::to_vec(value).map_or(usize::MAX, |b| b.len());
    v.check(
        size <= MAX_JSON_BYTES,
        field,
        "must be at most 65536 bytes of JSON",
    );
}

fn check_token(v: &mut Validator, token: &Option<String>) {
    v.check(
        token.as_deref().is_some_and(|t| !t.is_empty()),
        "leaseToken",
        "is required: pass the leaseToken of your claim",
    );
}

fn check_next_step(v: &mut Validator, next: &Option<String>) {
    if let Some(next) = next {
        v.check(is_name(next), "nextStep", NAME_RULE);
    }
}

/// `POST /workflows/runs`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StartRequest {
    pub workflow: Option<String>,
    pub input: Option<Value>,
    pub step: Option<String>,
    pub max_attempts: Option<u32>,
    pub idempotency_key: Option<String>,
}

/// A start that passed the rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Start {
    pub workflow: String,
    pub input: Value,
    pub step: String,
    pub max_attempts: u32,
    pub idempotency_key: Option<String>,
}

impl StartRequest {
    pub fn check(self) -> Result<Start, ApiError> {
        let mut v = Validator::new();
        let workflow = self.workflow.unwrap_or_default();
        v.check(is_name(&workflow), "workflow", NAME_RULE);
        let input = self.input.unwrap_or(Value::Null);
        check_json(&mut v, "input", &input);
        let step = self.step.unwrap_or_else(|| FIRST_STEP.to_owned());
        v.check(is_name(&step), "step", NAME_RULE);
        let max_attempts = self.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS);
        v.check(
            (1..=MAX_ATTEMPTS).contains(&max_attempts),
            "maxAttempts",
            "must be 1 to 50",
        );
        if let Some(key) = &self.idempotency_key {
            v.check(
                !key.is_empty()
                    && key.len() <= MAX_KEY_CHARS
                    && key.bytes().all(|b| b.is_ascii_graphic()),
                "idempotencyKey",
                "must be 1 to 200 printable ASCII characters",
            );
        }
        v.finish()?;
        Ok(Start {
            workflow,
            input,
            step,
            max_attempts,
            idempotency_key: self.idempotency_key,
        })
    }
}

/// `POST /workflows/next`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NextRequest {
    pub workflows: Option<Vec<String>>,
    pub lease_seconds: Option<u32>,
}

impl NextRequest {
    /// `(workflow names to claim from, none for any; lease in seconds)`.
    pub fn check(self) -> Result<(Option<Vec<String>>, u32), ApiError> {
        let mut v = Validator::new();
        if let Some(names) = &self.workflows {
            v.check(
                (1..=MAX_FILTER_WORKFLOWS).contains(&names.len()),
                "workflows",
                "must hold 1 to 20 workflow names",
            );
            for (i, name) in names.iter().enumerate() {
                v.check(is_name(name), format!("workflows[{i}]"), NAME_RULE);
            }
        }
        let lease = self.lease_seconds.unwrap_or(DEFAULT_LEASE_SECONDS);
        v.check(
            (1..=MAX_LEASE_SECONDS).contains(&lease),
            "leaseSeconds",
            "must be 1 to 3600",
        );
        v.finish()?;
        Ok((self.workflows, lease))
    }
}

/// `POST /workflows/runs/{id}/complete`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CompleteRequest {
    pub lease_token: Option<String>,
    pub output: Option<Value>,
    pub next_step: Option<String>,
}

impl CompleteRequest {
    /// `(lease token, output, next step or none to complete the run)`.
    pub fn check(self) -> Result<(String, Value, Option<String>), ApiError> {
        let mut v = Validator::new();
        check_token(&mut v, &self.lease_token);
        let output = self.output.unwrap_or(Value::Null);
        check_json(&mut v, "output", &output);
        check_next_step(&mut v, &self.next_step);
        v.finish()?;
        Ok((self.lease_token.unwrap_or_default(), output, self.next_step))
    }
}

/// `POST /workflows/runs/{id}/fail`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FailRequest {
    pub lease_token: Option<String>,
    pub error: Option<String>,
    pub retry: Option<bool>,
}

impl FailRequest {
    /// `(lease token, error, whether it may be retried)`.
    pub fn check(self) -> Result<(String, String, bool), ApiError> {
        let mut v = Validator::new();
        check_token(&mut v, &self.lease_token);
        let error = self.error.unwrap_or_default();
        v.check(
            !error.is_empty() && error.chars().count() <= MAX_ERROR_CHARS,
            "error",
            "must be 1 to 2048 characters",
        );
        v.finish()?;
        Ok((
            self.lease_token.unwrap_or_default(),
            error,
            self.retry.unwrap_or(true),
        ))
    }
}

/// `POST /workflows/runs/{id}/sleep`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SleepRequest {
    pub lease_token: Option<String>,
    pub seconds: Option<u64>,
    pub output: Option<Value>,
    pub next_step: Option<String>,
}

/// A sleep that passed the rules.
#[derive(Debug, Clone, PartialEq)]
pub struct Sleep {
    pub lease_token: String,
    pub seconds: u64,
    pub output: Value,
    pub next_step: Option<String>,
}

impl SleepRequest {
    pub fn check(self) -> Result<Sleep, ApiError> {
        let mut v = Validator::new();
        check_token(&mut v, &self.lease_token);
        let seconds = self.seconds.unwrap_or(0);
        v.check(
            (1..=MAX_SLEEP_SECONDS).contains(&seconds),
            "seconds",
            "must be 1 to 7776000 (90 days)",
        );
        let output = self.output.unwrap_or(Value::Null);
        check_json(&mut v, "output", &output);
        check_next_step(&mut v, &self.next_step);
        v.finish()?;
        Ok(Sleep {
            lease_token: self.lease_token.unwrap_or_default(),
            seconds,
            output,
            next_step: self.next_step,
        })
    }
}

/// `GET /workflows/runs?workflow=&status=`: the filters.
pub fn list_filters(
    workflow: Option<&str>,
    status: Option<&str>,
) -> Result<(Option<String>, Option<Status>), ApiError> {
    let mut v = Validator::new();
    if let Some(w) = workflow {
        v.check(is_name(w), "workflow", NAME_RULE);
    }
    let parsed = status.and_then(Status::parse);
    if status.is_some() {
        v.check(
            parsed.is_some(),
            "status",
            "must be running, sleeping, completed, failed or cancelled",
        );
    }
    v.finish()?;
    Ok((workflow.map(str::to_owned), parsed))
}
