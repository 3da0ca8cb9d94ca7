//! Shared evaluators: JsonLogic rules stored once per project and environment and used by flags
//! with `{"$ref": "name"}`, flagd's `$evaluators` as a resource of its own.
//!
//! A flag's `$ref` is checked when the flag is saved and resolved when it is evaluated, so
//! replacing an evaluator changes every flag that uses it. An evaluator still in use cannot be
//! deleted (409), so a stored flag never holds a dangling reference.

use plateau_sdk::serde_json::{Value, json};
use plateau_sdk::{ApiError, Bucket, NewEvent, Params, Request, Response, paginate_kv};
use serde::Deserialize;

use super::flags::conditional_get;
use super::scope::{Scope, check_name};
use super::store::{EvaluatorRecord, FlagRecord, Stamp, references, validation_error};
use crate::{DefinitionError, FlagSet};

/// The body of `PUT /flags/evaluators/{name}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EvaluatorBody {
    logic: Value,
}

/// `PUT /flags/evaluators/{name}`: 201 when new, 200 when it replaces one.
pub fn put(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let name = &params["name"];
    check_name("name", name)?;
    let scope = Scope::of(req, params)?;
    let body: EvaluatorBody = req.json()?;
    check_logic(name, &body.logic).map_err(validation_error)?;

    let bucket = Bucket::caller()?;
    let mut created = false;
    let record = bucket.update(
        &scope.evaluator_key(name),
        |previous: Option<EvaluatorRecord>| {
            created = previous.is_none();
            let previous = previous.as_ref();
            let stamp = Stamp::next(
                &bucket,
                &scope,
                previous.map(|p| (p.version, p.created_at.as_str())),
            )?;
            Ok(Some(EvaluatorRecord {
                name: name.to_owned(),
                project: scope.project.clone(),
                environment: scope.environment.clone(),
                logic: body.logic.clone(),
                version: stamp.version,
                etag: stamp.etag,
                created_at: stamp.created_at,
                updated_at: stamp.updated_at,
                updated_by: req.caller.actor.clone(),
            }))
        },
    )?;
    let record = record.ok_or_else(|| ApiError::internal("the evaluator was not written"))?;
    let (event, action, status) = if created {
        ("flags.evaluator.created", "create", 201)
    } else {
        ("flags.evaluator.updated", "update", 200)
    };
    NewEvent::new(event, action)
        .resource("evaluator", name)
        .data(&json!({
            "project": scope.project,
            "environment": scope.environment,
            "version": record.version,
        }))
        .audit()
        .emit()?;
    Ok(Response::json(status, &record).with_header("etag", record.etag.clone()))
}

/// `GET /flags/evaluators`: the envelope `{items, nextCursor, total}`, in name order.
pub fn list(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let scope = Scope::of(req, params)?;
    let prefix = scope.evaluator_prefix();
    let page = paginate_kv::<EvaluatorRecord>(&Bucket::caller()?, &prefix, &req.page_query()?)?;
    Ok(page.into_response())
}

/// `GET /flags/evaluators/{name}`
pub fn get(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let name = &params["name"];
    let scope = Scope::of(req, params)?;
    let record = find(&Bucket::caller()?, &scope, name)?;
    Ok(conditional_get(req, &record, &record.etag))
}

/// `DELETE /flags/evaluators/{name}`: 204; 409 naming the flags that still use it.
pub fn delete(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let name = &params["name"];
    let scope = Scope::of(req, params)?;
    let bucket = Bucket::caller()?;
    let record = find(&bucket, &scope, name)?;
    let mut users = Vec::new();
    for entry in bucket.list_all(&scope.flag_prefix())? {
        let flag: FlagRecord = entry.json()?;
        let targeting = flag.definition.get("targeting").unwrap_or(&Value::Null);
        if references(targeting).contains(name) {
            users.push(flag.key);
        }
    }
    if !users.is_empty() {
        return Err(ApiError::conflict(format!(
            "evaluator {name} is used by the flags {}: change their targeting first",
            users.join(", ")
        )));
    }
    bucket.delete(&scope.evaluator_key(name))?;
    bucket.increment(&scope.revision_key(), 1)?;
    NewEvent::new("flags.evaluator.deleted", "delete")
        .resource("evaluator", name)
        .data(&json!({
            "project": scope.project,
            "environment": scope.environment,
            "version": record.version,
        }))
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

/// Compiles `logic` as flagd compiles `$evaluators`; an error's path is inside the body
/// (`$.logic.if[0]`).
fn check_logic(name: &str, logic: &Value) -> Result<(), DefinitionError> {
    let set = json!({"flags": {}, "$evaluators": {name: logic}});
    FlagSet::from_value(&set).map(drop).map_err(|error| {
        let at = format!("$.$evaluators.{name}");
        let quoted = format!("$.$evaluators[{}]", Value::String(name.to_owned()));
        let rest = error
            .path
            .strip_prefix(&quoted)
            .or_else(|| error.path.strip_prefix(&at))
            .unwrap_or("");
        DefinitionError {
            path: format!("$.logic{rest}"),
            message: error
                .message
                .replace(&format!("evaluator \"{name}\""), "logic"),
        }
    })
}

fn find(bucket: &Bucket, scope: &Scope, name: &str) -> Result<EvaluatorRecord, ApiError> {
    let missing = || {
        ApiError::not_found(format!(
            "evaluator {name} does not exist in project {} and environment {}: check the name",
            scope.project, scope.environment
        ))
    };
    if check_name("name", name).is_err() {
        return Err(missing());
    }
    bucket.get(&scope.evaluator_key(name))?.ok_or_else(missing)
}
