//! The OFREP routes: evaluate one flag or every flag of a project and environment for an
//! evaluation context, with OFREP's bodies and statuses (not problem documents, so OpenFeature's
//! OFREP providers understand every answer; 401 and 403 stay the host's problems).
//!
//! On top of the evaluation core:
//! - a flag that splits traffic with `fractional` on the context's `targetingKey` answers
//!   `TARGETING_KEY_MISSING` when the context has none, rather than silently putting every
//!   such caller in the default variant;
//! - a `targetingKey` that is not a string is `INVALID_CONTEXT`;
//! - a stored definition that no longer compiles is `PARSE_ERROR` for that flag only;
//! - the bulk answer carries an `ETag` over the evaluated body, and `If-None-Match` with it
//!   answers 304, so a polling client-side provider neither downloads nor re-applies anything.

use crate::ofrep::{
    BulkEvaluationFailure, BulkEvaluationSuccess, EvaluationResponse, parse_request,
};
use crate::{ErrorCode, Metadata, Resolution, State, evaluate};
use plateau_sdk::serde_json::{self, Map, Value};
use plateau_sdk::{ApiError, Bucket, Params, Request, Response, clock};
use sha2::{Digest, Sha256};

use super::flags::etag_matches;
use super::scope::{Scope, ScopeError, check_name};
use super::store::{FlagRecord, compile, load_evaluators, needs_targeting_key};

/// `POST /flags/ofrep/v1/evaluate/flags/{key}`
pub fn evaluate_one(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let key = &params["key"];
    let failure = |code: ErrorCode, details: String| {
        let response = EvaluationResponse::from_resolution(
            key,
            Resolution::error(code, details, Metadata::new()),
        );
        Ok(Response::json(response.status(), &response))
    };
    let scope = match Scope::of(req, params) {
        Ok(scope) => scope,
        Err(ScopeError::Refused(error)) => return Err(error),
        Err(invalid) => return failure(ErrorCode::General, invalid.details()),
    };
    let context = match read_context(req) {
        Ok(context) => context,
        Err((code, details)) => return failure(code, details),
    };
    let bucket = Bucket::caller()?;
    let stored = match check_name("key", key) {
        Ok(()) => bucket.get_raw(&scope.flag_key(key))?,
        Err(_) => None,
    };
    let Some(stored) = stored else {
        return failure(
            ErrorCode::FlagNotFound,
            format!(
                "flag {key} does not exist in project {} and environment {}",
                scope.project, scope.environment
            ),
        );
    };
    let evaluators = load_evaluators(&bucket, &scope)?;
    let resolution = resolve(key, &stored, &evaluators, &context, now());
    let response = EvaluationResponse::from_resolution(key, resolution);
    Ok(Response::json(response.status(), &response))
}

/// `POST /flags/ofrep/v1/evaluate/flags`: every flag in key order.
pub fn evaluate_all(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let failure = |code: ErrorCode, details: String| {
        let body = BulkEvaluationFailure {
            error_code: code,
            error_details: details,
        };
        Ok(Response::json(code.http_status(), &body))
    };
    let scope = match Scope::of(req, params) {
        Ok(scope) => scope,
        Err(ScopeError::Refused(error)) => return Err(error),
        Err(invalid) => return failure(ErrorCode::General, invalid.details()),
    };
    let context = match read_context(req) {
        Ok(context) => context,
        Err((code, details)) => return failure(code, details),
    };
    let bucket = Bucket::caller()?;
    let evaluators = load_evaluators(&bucket, &scope)?;
    let prefix = scope.flag_prefix();
    let now = now();
    let resolutions = bucket.list_all(&prefix)?.into_iter().map(|entry| {
        let key = entry.key.strip_prefix(&prefix).unwrap_or(&entry.key);
        let resolution = resolve(key, &entry.value, &evaluators, &context, now);
        (key.to_owned(), resolution)
    });
    let body = BulkEvaluationSuccess::from_resolutions(resolutions, &Metadata::new());
    let bytes = serde_json::to_vec(&body)
        .map_err(|e| ApiError::internal(format!("the bulk answer does not serialize: {e}")))?;
    let etag = body_etag(&bytes);
    if req
        .header("if-none-match")
        .is_some_and(|tags| etag_matches(tags, &etag))
    {
        return Ok(Response::new(304).with_header("etag", etag));
    }
    let mut response = Response::new(200)
        .with_header("content-type", "application/json")
        .with_header("etag", etag);
    response.body = bytes;
    Ok(response)
}

/// The request's evaluation context, or the OFREP error code and details that refuse it.
fn read_context(req: &Request) -> Result<Value, (ErrorCode, String)> {
    let request = parse_request(&req.body).map_err(|e| (e.code(), e.details))?;
    match request.context.get("targetingKey") {
        None | Some(Value::String(_)) => Ok(Value::Object(request.context)),
        Some(other) => Err((
            ErrorCode::InvalidContext,
            format!("targetingKey must be a string, not {other}"),
        )),
    }
}

/// Resolves flag `key` from its stored record (raw JSON) against the scope's shared
/// evaluators: the whole evaluation of one flag, also what the benchmark's native twin runs.
pub fn resolve(
    key: &str,
    stored: &[u8],
    evaluators: &Map<String, Value>,
    context: &Value,
    now: i64,
) -> Resolution {
    let unparsable = |why: String| {
        Resolution::error(
            ErrorCode::ParseError,
            format!(
                "the stored definition of flag {key} cannot be used: {why}; save the flag again"
            ),
            Metadata::new(),
        )
    };
    // The record's fields around the definition, without `FlagRecord`'s flattening, which
    // buffers every value once more.
    let mut fields: Map<String, Value> = match serde_json::from_slice(stored) {
        Ok(fields) => fields,
        Err(e) => return unparsable(e.to_string()),
    };
    for field in FlagRecord::BOOKKEEPING {
        fields.remove(field);
    }
    let definition = Value::Object(fields);
    let flag = match compile(key, &definition, evaluators) {
        Ok(flag) => flag,
        Err(e) => return unparsable(e.to_string()),
    };
    let has_key = matches!(context.get("targetingKey"), Some(Value::String(k)) if !k.is_empty());
    if flag.state() == State::Enabled && !has_key && needs_targeting_key(&definition, evaluators) {
        return Resolution::error(
            ErrorCode::TargetingKeyMissing,
            format!(
                "flag {key} splits traffic by targetingKey: add a non-empty targetingKey to the context"
            ),
            flag.metadata().clone(),
        );
    }
    evaluate(key, &flag, context, now)
}

/// `$flagd.timestamp`: the host clock in Unix seconds.
fn now() -> i64 {
    i64::try_from(clock::now_millis() / 1000).unwrap_or(i64::MAX)
}

/// A strong ETag over the answer's bytes: it changes exactly when the client would see a
/// different answer, whether a flag, an evaluator, the context or the time made it change.
fn body_etag(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let hex: String = digest[..16].iter().map(|b| format!("{b:02x}")).collect();
    format!("\"{hex}\"")
}
