//! A flag set document: `{"flags": {...}, "$evaluators": {...}, "metadata": {...}}`, where a
//! flag's targeting may use `{"$ref": "name"}` to share a rule from `$evaluators`.

use super::{Flag, Metadata, Result, error, parse_metadata, reject_unknown_fields};
use crate::evaluate::{ErrorCode, Resolution, evaluate};
use crate::jsonlogic::{Refs, Rule};
use crate::path::JsonPath;
use serde_json::Value;
use std::collections::BTreeMap;

const SET_FIELDS: &[&str] = &["$schema", "flags", "$evaluators", "metadata"];

/// A validated set of flags, keyed and ordered by flag key.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FlagSet {
    flags: BTreeMap<String, Flag>,
    metadata: Metadata,
}

impl FlagSet {
    /// Parses a flag set from JSON text.
    pub fn from_json(text: &str) -> Result<FlagSet> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| error("$", format!("the flag set is not valid JSON: {e}")))?;
        FlagSet::from_value(&value)
    }

    /// Parses a flag set from a JSON value. Each `$ref` is resolved here; flagd does not allow
    /// an evaluator to reference another one, and neither do we.
    pub fn from_value(value: &Value) -> Result<FlagSet> {
        let Value::Object(fields) = value else {
            return Err(error("$", "a flag set must be a JSON object"));
        };
        reject_unknown_fields(fields, &JsonPath::Root, SET_FIELDS, "a flag set")?;

        let evaluators_at = JsonPath::Root.key("$evaluators");
        let evaluators = match fields.get("$evaluators") {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(Value::Object(entries)) => compile_evaluators(entries, &evaluators_at)?,
            Some(other) => {
                return Err(error(
                    evaluators_at,
                    format!("$evaluators must be an object of name to JsonLogic rule, not {other}"),
                ));
            }
        };

        let metadata = parse_metadata(fields.get("metadata"), &JsonPath::Root.key("metadata"))?;

        let flags_at = JsonPath::Root.key("flags");
        let entries = match fields.get("flags") {
            Some(Value::Object(entries)) => entries,
            None => return Err(error(flags_at, "flags is required")),
            Some(other) => {
                return Err(error(
                    flags_at,
                    format!("flags must be an object of flag key to flag, not {other}"),
                ));
            }
        };
        let mut flags = BTreeMap::new();
        for (key, definition) in entries {
            let at = flags_at.key(key);
            if key.is_empty() {
                return Err(error(at, "a flag key must not be empty"));
            }
            let mut flag = Flag::parse(definition, &at, Refs::To(&evaluators))?;
            flag.inherit_metadata(&metadata);
            flags.insert(key.clone(), flag);
        }
        Ok(FlagSet { flags, metadata })
    }

    pub fn get(&self, key: &str) -> Option<&Flag> {
        self.flags.get(key)
    }

    /// The flags in key order.
    pub fn flags(&self) -> impl Iterator<Item = (&str, &Flag)> {
        self.flags.iter().map(|(key, flag)| (key.as_str(), flag))
    }

    /// The set's own metadata (each flag's metadata already includes it).
    pub fn metadata(&self) -> &Metadata {
        &self.metadata
    }

    pub fn len(&self) -> usize {
        self.flags.len()
    }

    pub fn is_empty(&self) -> bool {
        self.flags.is_empty()
    }

    /// Evaluates one flag; a key that is not in the set resolves to `FLAG_NOT_FOUND`.
    pub fn evaluate(&self, key: &str, context: &Value, now_unix_secs: i64) -> Resolution {
        match self.flags.get(key) {
            Some(flag) => evaluate(key, flag, context, now_unix_secs),
            None => Resolution::error(
                ErrorCode::FlagNotFound,
                format!("flag \"{key}\" does not exist"),
                self.metadata.clone(),
            ),
        }
    }

    /// Evaluates every flag, in key order, as OFREP's bulk evaluation does.
    pub fn evaluate_all(&self, context: &Value, now_unix_secs: i64) -> Vec<(String, Resolution)> {
        self.flags
            .iter()
            .map(|(key, flag)| (key.clone(), evaluate(key, flag, context, now_unix_secs)))
            .collect()
    }
}

/// Compiles shared evaluators (`$evaluators`, at `at`) by name. Each must be a non-empty
/// JsonLogic object; flagd does not allow one to reference another.
pub(crate) fn compile_evaluators<'a>(
    entries: impl IntoIterator<Item = (&'a String, &'a Value)>,
    at: &JsonPath<'_>,
) -> Result<BTreeMap<String, Rule>> {
    let mut evaluators = BTreeMap::new();
    for (name, logic) in entries {
        let at = at.key(name);
        if !logic.is_object() || logic.as_object().is_some_and(|o| o.is_empty()) {
            return Err(error(
                at,
                format!("evaluator \"{name}\" must be a non-empty JsonLogic object"),
            ));
        }
        let rule = Rule::compile_with(logic, Refs::Forbidden).map_err(|e| {
            let inner = e.path.strip_prefix('$').unwrap_or(&e.path);
            error(format!("{at}{inner}"), e.message)
        })?;
        evaluators.insert(name.clone(), rule);
    }
    Ok(evaluators)
}
