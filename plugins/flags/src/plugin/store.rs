//! The stored records (a flag and a shared evaluator, each with its bookkeeping) and the step
//! that turns a stored definition back into an evaluable [`Flag`], `$ref`s resolved.

use crate::definition::{self, compile_evaluators};
use crate::jsonlogic::Refs;
use crate::path::JsonPath;
use crate::{DefinitionError, Flag};
use plateau_sdk::serde_json::{Map, Value};
use plateau_sdk::{ApiError, Bucket, FieldError, clock};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use utoipa::ToSchema;

use super::scope::Scope;

/// One flag as stored and as answered: the flagd definition as it was sent (`state`,
/// `variants`, `defaultVariant`, `targeting`, `metadata`) with its bookkeeping around it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FlagRecord {
    pub key: String,
    pub project: String,
    pub environment: String,
    #[serde(flatten)]
    pub definition: Map<String, Value>,
    /// 1 on create, plus one on every replace.
    pub version: u64,
    /// Changes with every write, also across a delete and re-create of the same key.
    pub etag: String,
    /// RFC 3339, UTC.
    pub created_at: String,
    pub updated_at: String,
    /// `user:<id>` or `token:<id>`.
    pub updated_by: Option<String>,
}

impl FlagRecord {
    /// The record's own fields, in JSON: everything else is the flagd definition.
    pub const BOOKKEEPING: [&'static str; 8] = [
        "key",
        "project",
        "environment",
        "version",
        "etag",
        "createdAt",
        "updatedAt",
        "updatedBy",
    ];
}

/// A shared evaluator: a JsonLogic rule flags use with `{"$ref": "name"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EvaluatorRecord {
    pub name: String,
    pub project: String,
    pub environment: String,
    pub logic: Value,
    pub version: u64,
    pub etag: String,
    pub created_at: String,
    pub updated_at: String,
    pub updated_by: Option<String>,
}

/// The bookkeeping of a write: version, etag and timestamps, given the previous record's.
pub struct Stamp {
    pub version: u64,
    pub etag: String,
    pub created_at: String,
    pub updated_at: String,
}

impl Stamp {
    /// Bumps the scope's revision counter and stamps a write at the host clock's time.
    /// `previous` is the replaced record's `(version, createdAt)`.
    pub fn next(
        bucket: &Bucket,
        scope: &Scope,
        previous: Option<(u64, &str)>,
    ) -> Result<Stamp, ApiError> {
        let revision = bucket.increment(&scope.revision_key(), 1)?;
        let now = clock::now_rfc3339();
        Ok(Stamp {
            version: previous.map_or(1, |(version, _)| version + 1),
            etag: format!("\"{revision}\""),
            created_at: previous.map_or_else(|| now.clone(), |(_, at)| at.to_owned()),
            updated_at: now,
        })
    }
}

/// Every evaluator of `scope`, by name.
pub fn load_evaluators(bucket: &Bucket, scope: &Scope) -> Result<Map<String, Value>, ApiError> {
    let prefix = scope.evaluator_prefix();
    let mut evaluators = Map::new();
    for entry in bucket.list_all(&prefix)? {
        let record: EvaluatorRecord = entry.json()?;
        evaluators.insert(record.name, record.logic);
    }
    Ok(evaluators)
}

/// The names a JSON value references with `{"$ref": "name"}`, anywhere inside it.
pub fn references(value: &Value) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    collect_references(value, &mut names);
    names
}

fn collect_references(value: &Value, names: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            if let (1, Some(Value::String(name))) = (map.len(), map.get("$ref")) {
                names.insert(name.clone());
            }
            map.values().for_each(|v| collect_references(v, names));
        }
        Value::Array(items) => items.iter().for_each(|v| collect_references(v, names)),
        _ => {}
    }
}

/// Compiles the stored or sent definition of flag `key` against the scope's evaluators. An
/// error's path is relative to the definition: `$.targeting.if[0]`.
pub fn compile(
    key: &str,
    definition: &Value,
    evaluators: &Map<String, Value>,
) -> Result<Flag, DefinitionError> {
    if key.is_empty() {
        return Err(definition::error("$", "a flag key must not be empty"));
    }
    let wanted = references(definition);
    let all_known = wanted.iter().all(|name| evaluators.contains_key(name));
    // Only the evaluators the flag uses, so one flag's compile does not pay for all of them;
    // on a dangling reference all of them, so the error lists every defined name.
    let shared = evaluators
        .iter()
        .filter(|(name, _)| !all_known || wanted.contains(*name));
    compile_evaluators(shared, &JsonPath::Root.key("$evaluators"))
        .and_then(|rules| Flag::parse(definition, &JsonPath::Root, Refs::To(&rules)))
        .map_err(|error| DefinitionError {
            // flagd's wording about `$evaluators`, in terms of this API's routes.
            message: error.message.replace(
                "no $evaluators are defined",
                "store it first with PUT /flags/evaluators/{name}",
            ),
            ..error
        })
}

/// A definition error as this API's `validation_failed` problem: the field is the JSON path in
/// the request body without its leading `$.` (`targeting.if[0]`, or `body` for the whole).
pub fn validation_error(error: DefinitionError) -> ApiError {
    let field = match error.path.strip_prefix("$.") {
        Some(rest) => rest.to_owned(),
        None => match error.path.strip_prefix('$') {
            Some("") | None => "body".to_owned(),
            Some(rest) => rest.to_owned(),
        },
    };
    ApiError::validation_errors(vec![FieldError {
        field,
        message: error.message,
    }])
}

/// Whether the flag buckets with `fractional` on the context's `targetingKey`: a `fractional`
/// whose first argument is a distribution (or `null`) rather than its own bucketing
/// expression, in the targeting or in an evaluator it references.
pub fn needs_targeting_key(definition: &Value, evaluators: &Map<String, Value>) -> bool {
    let Some(targeting) = definition.get("targeting") else {
        return false;
    };
    uses_default_bucketing(targeting)
        || references(targeting)
            .iter()
            .filter_map(|name| evaluators.get(name))
            .any(uses_default_bucketing)
}

fn uses_default_bucketing(logic: &Value) -> bool {
    match logic {
        Value::Object(map) => {
            let own = map.len() == 1
                && matches!(
                    map.get("fractional"),
                    Some(Value::Array(args)) if matches!(args.first(), Some(Value::Array(_) | Value::Null))
                );
            own || map.values().any(uses_default_bucketing)
        }
        Value::Array(items) => items.iter().any(uses_default_bucketing),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::FlagRecord;
    use plateau_sdk::serde_json::{Map, Value, to_value};

    #[test]
    fn bookkeeping_names_every_field_of_the_record_but_the_definition() {
        let record = FlagRecord {
            key: "k".into(),
            project: "p".into(),
            environment: "production".into(),
            definition: Map::new(),
            version: 1,
            etag: "\"1\"".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            updated_at: "2026-01-01T00:00:00Z".into(),
            updated_by: None,
        };
        let Value::Object(fields) = to_value(&record).unwrap() else {
            panic!("a record is an object");
        };
        let mut names: Vec<&str> = fields.keys().map(String::as_str).collect();
        let mut bookkeeping = FlagRecord::BOOKKEEPING.to_vec();
        names.sort_unstable();
        bookkeeping.sort_unstable();
        assert_eq!(names, bookkeeping);
    }
}
