//! Parses and validates one flag in flagd's flag-definition format, so that a bad definition is
//! refused when it is saved, with a message that names the field.
//!
//! ```json
//! {"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "off",
//!  "targeting": {"if": [{"ends_with": [{"var": "email"}, "@example.com"]}, "on"]},
//!  "metadata": {"team": "growth"}}
//! ```

mod set;

pub use set::FlagSet;
pub(crate) use set::compile_evaluators;

use crate::jsonlogic::{Refs, Rule};
use crate::path::JsonPath;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Flag or flag-set metadata: string, number or boolean values.
pub type Metadata = BTreeMap<String, Value>;

/// An invalid definition: what is wrong, and the JSON path of the field (`$.defaultVariant`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (at {path})")]
pub struct DefinitionError {
    pub path: String,
    pub message: String,
}

pub type Result<T, E = DefinitionError> = std::result::Result<T, E>;

pub(crate) fn error(path: impl std::fmt::Display, message: impl Into<String>) -> DefinitionError {
    DefinitionError {
        path: path.to_string(),
        message: message.into(),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum State {
    Enabled,
    Disabled,
}

/// The one type shared by all variants of a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlagType {
    Boolean,
    String,
    Number,
    Object,
}

impl FlagType {
    /// The type of a variant value; `None` for `null` and arrays, which flagd does not allow.
    pub fn of(value: &Value) -> Option<FlagType> {
        match value {
            Value::Bool(_) => Some(FlagType::Boolean),
            Value::String(_) => Some(FlagType::String),
            Value::Number(_) => Some(FlagType::Number),
            Value::Object(_) => Some(FlagType::Object),
            Value::Null | Value::Array(_) => None,
        }
    }

    fn article(self) -> &'static str {
        match self {
            FlagType::Boolean => "a boolean",
            FlagType::String => "a string",
            FlagType::Number => "a number",
            FlagType::Object => "an object",
        }
    }
}

/// One validated flag.
#[derive(Debug, Clone, PartialEq)]
pub struct Flag {
    state: State,
    flag_type: FlagType,
    variants: BTreeMap<String, Value>,
    default_variant: Option<String>,
    targeting: Option<Rule>,
    metadata: Metadata,
}

const FLAG_FIELDS: &[&str] = &[
    "state",
    "variants",
    "defaultVariant",
    "targeting",
    "metadata",
];

impl Flag {
    /// Parses one flag from JSON text. A `$ref` in its targeting is an error: shared evaluators
    /// belong to a [`FlagSet`].
    pub fn from_json(text: &str) -> Result<Flag> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| error("$", format!("the flag is not valid JSON: {e}")))?;
        Flag::from_value(&value)
    }

    /// Parses one flag from a JSON value.
    pub fn from_value(value: &Value) -> Result<Flag> {
        Flag::parse(value, &JsonPath::Root, Refs::To(&BTreeMap::new()))
    }

    pub(crate) fn parse(value: &Value, at: &JsonPath<'_>, refs: Refs<'_>) -> Result<Flag> {
        let Value::Object(fields) = value else {
            return Err(error(at, "a flag must be a JSON object"));
        };
        reject_unknown_fields(fields, at, FLAG_FIELDS, "a flag")?;

        let state_at = at.key("state");
        let state = match fields.get("state") {
            None => {
                return Err(error(
                    state_at,
                    r#"state is required: "ENABLED" or "DISABLED""#,
                ));
            }
            Some(state) => State::deserialize(state).map_err(|_| {
                error(
                    state_at,
                    format!(r#"state must be "ENABLED" or "DISABLED", not {state}"#),
                )
            })?,
        };
        let (variants, flag_type) = parse_variants(fields.get("variants"), at)?;

        let default_at = at.key("defaultVariant");
        let default_variant = match fields.get("defaultVariant") {
            // flagd: no default variant means "use the default in the caller's code".
            None | Some(Value::Null) => None,
            Some(Value::String(name)) if variants.contains_key(name) => Some(name.clone()),
            Some(Value::String(name)) => {
                let names = variants.keys().cloned().collect::<Vec<_>>().join(", ");
                return Err(error(
                    default_at,
                    format!("defaultVariant \"{name}\" is not one of the variants: {names}"),
                ));
            }
            Some(other) => {
                return Err(error(
                    default_at,
                    format!("defaultVariant must be a variant name or null, not {other}"),
                ));
            }
        };

        let targeting_at = at.key("targeting");
        let targeting = match fields.get("targeting") {
            None | Some(Value::Null) => None,
            // flagd treats `{}` as "no targeting": the flag resolves statically.
            Some(Value::Object(rule)) if rule.is_empty() => None,
            Some(rule @ Value::Object(_)) => Some(Rule::compile_with(rule, refs).map_err(|e| {
                let inner = e.path.strip_prefix('$').unwrap_or(&e.path);
                error(format!("{targeting_at}{inner}"), e.message)
            })?),
            Some(other) => {
                return Err(error(
                    targeting_at,
                    format!("targeting must be a JsonLogic object, not {other}"),
                ));
            }
        };

        let metadata = parse_metadata(fields.get("metadata"), &at.key("metadata"))?;
        Ok(Flag {
            state,
            flag_type,
            variants,
            default_variant,
            targeting,
            metadata,
        })
    }

    pub fn state(&self) -> State {
        self.state
    }

    pub fn flag_type(&self) -> FlagType {
        self.flag_type
    }

    pub fn variants(&self) -> &BTreeMap<String, Value> {
        &self.variants
    }

    /// `None` when the flag defers to the code default (`defaultVariant` absent or `null`).
    pub fn default_variant(&self) -> Option<&str> {
        self.default_variant.as_deref()
    }

    /// The compiled targeting rule; `None` when there is none or it is `{}`.
    pub fn targeting(&self) -> Option<&Rule> {
        self.targeting.as_ref()
    }

    /// The flag's metadata; inside a [`FlagSet`], merged over the set's metadata.
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    pub(crate) fn inherit_metadata(&mut self, set: &Metadata) {
        for (key, value) in set {
            self.metadata
                .entry(key.clone())
                .or_insert_with(|| value.clone());
        }
    }
}

fn parse_variants(
    variants: Option<&Value>,
    at: &JsonPath<'_>,
) -> Result<(BTreeMap<String, Value>, FlagType)> {
    let at = at.key("variants");
    let variants = match variants {
        None => return Err(error(at, "variants is required")),
        Some(Value::Object(variants)) => variants,
        Some(other) => {
            return Err(error(
                at,
                format!("variants must be an object of variant name to value, not {other}"),
            ));
        }
    };
    let mut first: Option<(&str, FlagType)> = None;
    for (name, value) in variants {
        let variant_at = at.key(name);
        let Some(flag_type) = FlagType::of(value) else {
            return Err(error(
                variant_at,
                format!(
                    "variant \"{name}\" must be a boolean, string, number or object, not {value}"
                ),
            ));
        };
        match first {
            None => first = Some((name, flag_type)),
            Some((first_name, first_type)) if first_type != flag_type => {
                return Err(error(
                    variant_at,
                    format!(
                        "variant \"{name}\" is {} but variant \"{first_name}\" is {}; \
                         all variants must have the same type",
                        flag_type.article(),
                        first_type.article()
                    ),
                ));
            }
            Some(_) => {}
        }
    }
    let Some((_, flag_type)) = first else {
        return Err(error(at, "variants must name at least one variant"));
    };
    let variants = variants.iter().map(|(k, v)| (k.clone(), v.clone()));
    Ok((variants.collect(), flag_type))
}

pub(crate) fn parse_metadata(metadata: Option<&Value>, at: &JsonPath<'_>) -> Result<Metadata> {
    let entries = match metadata {
        None | Some(Value::Null) => return Ok(Metadata::new()),
        Some(Value::Object(entries)) => entries,
        Some(other) => {
            return Err(error(
                at,
                format!("metadata must be an object, not {other}"),
            ));
        }
    };
    for (key, value) in entries {
        if !matches!(value, Value::String(_) | Value::Number(_) | Value::Bool(_)) {
            return Err(error(
                at.key(key),
                format!("metadata \"{key}\" must be a string, number or boolean, not {value}"),
            ));
        }
    }
    Ok(entries
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect())
}

pub(crate) fn reject_unknown_fields(
    fields: &Map<String, Value>,
    at: &JsonPath<'_>,
    known: &[&str],
    what: &str,
) -> Result<()> {
    match fields.keys().find(|key| !known.contains(&key.as_str())) {
        None => Ok(()),
        Some(unknown) => Err(error(
            at.key(unknown),
            format!(
                "unknown field \"{unknown}\"; {what} has the fields {}",
                known.join(", ")
            ),
        )),
    }
}
