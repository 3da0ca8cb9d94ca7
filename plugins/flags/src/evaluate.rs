//! Resolves a flag for an evaluation context with flagd's semantics: which variant, which
//! reason, and which error code.
//!
//! The rules, as flagd implements and documents them:
//! - A `DISABLED` flag resolves successfully with reason `DISABLED` and no value or variant, so
//!   the caller's code default applies. (Older flagd versions answered `FLAG_NOT_FOUND`; since
//!   flagd issue 1965 it is a success, and OFREP omits `value` and `variant`.)
//! - Without targeting (or with `{}`), the default variant resolves with reason `STATIC`.
//! - Targeting returning `null` selects the default variant with reason `DEFAULT`.
//! - Targeting returning a variant name, or `true`/`false` (the variants `"true"`/`"false"`),
//!   resolves that variant with reason `TARGETING_MATCH`.
//! - Targeting returning a name that is not a variant, or a number, array or object, is an
//!   error with code `GENERAL` and reason `ERROR`.
//! - Where the default variant would apply but the flag has none (`defaultVariant` absent or
//!   `null`), the result is reason `DEFAULT` with no value: the code default applies.
//!
//! Targeting sees the context enriched with `$flagd.flagKey` and `$flagd.timestamp` (unix
//! seconds, given by the caller: this crate never reads a clock).

use crate::definition::{Flag, Metadata, State};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// Why a flag resolved as it did (OpenFeature's resolution reasons).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Reason {
    Static,
    TargetingMatch,
    Default,
    Disabled,
    Error,
}

/// OpenFeature's error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    FlagNotFound,
    ParseError,
    TypeMismatch,
    TargetingKeyMissing,
    InvalidContext,
    General,
}

impl ErrorCode {
    /// The code as OFREP and OpenFeature spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::FlagNotFound => "FLAG_NOT_FOUND",
            ErrorCode::ParseError => "PARSE_ERROR",
            ErrorCode::TypeMismatch => "TYPE_MISMATCH",
            ErrorCode::TargetingKeyMissing => "TARGETING_KEY_MISSING",
            ErrorCode::InvalidContext => "INVALID_CONTEXT",
            ErrorCode::General => "GENERAL",
        }
    }
}

/// What went wrong in an evaluation that has reason `ERROR`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolutionError {
    pub code: ErrorCode,
    pub message: String,
}

/// The outcome of evaluating one flag.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    /// `None` when the caller's code default applies (disabled, no default variant, error).
    pub value: Option<Value>,
    pub variant: Option<String>,
    pub reason: Reason,
    /// Set exactly when `reason` is [`Reason::Error`].
    pub error: Option<ResolutionError>,
    pub metadata: Metadata,
}

/// The value type a typed OpenFeature call expects (`ResolveBoolean`, `ResolveInt`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ValueType {
    Boolean,
    String,
    Integer,
    Float,
    Object,
}

impl ValueType {
    fn describe(self) -> &'static str {
        match self {
            ValueType::Boolean => "a boolean",
            ValueType::String => "a string",
            ValueType::Integer => "an integer",
            ValueType::Float => "a number",
            ValueType::Object => "an object",
        }
    }

    fn accepts(self, value: &Value) -> bool {
        match (self, value) {
            (ValueType::Boolean, Value::Bool(_))
            | (ValueType::String, Value::String(_))
            | (ValueType::Float, Value::Number(_))
            | (ValueType::Object, Value::Object(_)) => true,
            (ValueType::Integer, Value::Number(n)) => {
                n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
            }
            _ => false,
        }
    }
}

impl Resolution {
    /// An error resolution: no value, no variant, reason `ERROR`.
    pub fn error(code: ErrorCode, message: impl Into<String>, metadata: Metadata) -> Resolution {
        Resolution {
            value: None,
            variant: None,
            reason: Reason::Error,
            error: Some(ResolutionError {
                code,
                message: message.into(),
            }),
            metadata,
        }
    }

    pub fn is_error(&self) -> bool {
        self.error.is_some()
    }

    /// Turns a value of another type into a `TYPE_MISMATCH` error, as a typed resolve call
    /// does. Resolutions without a value (disabled, code default, errors) pass unchanged.
    pub fn expect_type(self, expected: ValueType) -> Resolution {
        match &self.value {
            Some(value) if !expected.accepts(value) => Resolution::error(
                ErrorCode::TypeMismatch,
                format!("the flag's value {value} is not {}", expected.describe()),
                self.metadata,
            ),
            _ => self,
        }
    }
}

/// Evaluates `flag` (whose key is `flag_key`) for `context`, a JSON object or `null`, at
/// `now_unix_secs`.
pub fn evaluate(flag_key: &str, flag: &Flag, context: &Value, now_unix_secs: i64) -> Resolution {
    let metadata = flag.metadata().clone();
    let mut context = match context {
        Value::Null => Map::new(),
        Value::Object(map) => map.clone(),
        other => {
            return Resolution::error(
                ErrorCode::InvalidContext,
                format!("the evaluation context must be a JSON object, not {other}"),
                metadata,
            );
        }
    };
    if flag.state() == State::Disabled {
        return Resolution {
            value: None,
            variant: None,
            reason: Reason::Disabled,
            error: None,
            metadata,
        };
    }
    let Some(rule) = flag.targeting() else {
        return default_variant(flag, Reason::Static, metadata);
    };

    // Like flagd, the `$flagd` properties replace whatever the caller sent under that key.
    context.insert(
        "$flagd".to_owned(),
        json!({"flagKey": flag_key, "timestamp": now_unix_secs}),
    );
    let name = match rule.apply(&Value::Object(context)) {
        Value::Null => return default_variant(flag, Reason::Default, metadata),
        Value::String(name) => name,
        Value::Bool(b) => b.to_string(),
        other => {
            return Resolution::error(
                ErrorCode::General,
                format!("targeting returned {other}, which is not a variant name"),
                metadata,
            );
        }
    };
    match flag.variants().get(&name) {
        Some(value) => Resolution {
            value: Some(value.clone()),
            variant: Some(name),
            reason: Reason::TargetingMatch,
            error: None,
            metadata,
        },
        None => {
            let names: Vec<&str> = flag.variants().keys().map(String::as_str).collect();
            Resolution::error(
                ErrorCode::General,
                format!(
                    "targeting returned \"{name}\", which is not one of the variants: {}",
                    names.join(", ")
                ),
                metadata,
            )
        }
    }
}

/// The default variant with `reason`, or, without one, reason `DEFAULT` and no value.
fn default_variant(flag: &Flag, reason: Reason, metadata: Metadata) -> Resolution {
    let (value, variant, reason) = match flag.default_variant() {
        Some(name) => (
            flag.variants().get(name).cloned(),
            Some(name.to_owned()),
            reason,
        ),
        None => (None, None, Reason::Default),
    };
    Resolution {
        value,
        variant,
        reason,
        error: None,
        metadata,
    }
}
