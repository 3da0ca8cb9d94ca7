//! The flag management routes: create or replace, read, list and delete flags of one project
//! and environment, each change recorded as an audited event.

use plateau_sdk::serde_json::{Value, json};
use plateau_sdk::{
    ApiError, Bucket, NewEvent, Params, Request, Response, paginate_kv, percent_encode,
};

use super::scope::{Scope, check_name, check_new_flag_key};
use super::store::{FlagRecord, Stamp, compile, load_evaluators, validation_error};

/// `PUT /flags/{key}`: 201 when the flag is new, 200 when it replaces one.
pub fn put(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let key = &params["key"];
    check_new_flag_key(key)?;
    let scope = Scope::of(req, params)?;
    let body: Value = req.json()?;
    let bucket = Bucket::caller()?;
    let evaluators = load_evaluators(&bucket, &scope)?;
    let flag = compile(key, &body, &evaluators).map_err(validation_error)?;
    let Value::Object(definition) = body else {
        return Err(ApiError::internal("a compiled flag was not a json object"));
    };

    let mut created = false;
    let record = bucket.update(&scope.flag_key(key), |previous: Option<FlagRecord>| {
        created = previous.is_none();
        let previous = previous.as_ref();
        let stamp = Stamp::next(
            &bucket,
            &scope,
            previous.map(|p| (p.version, p.created_at.as_str())),
        )?;
        Ok(Some(FlagRecord {
            key: key.to_owned(),
            project: scope.project.clone(),
            environment: scope.environment.clone(),
            definition: definition.clone(),
            version: stamp.version,
            etag: stamp.etag,
            created_at: stamp.created_at,
            updated_at: stamp.updated_at,
            updated_by: req.caller.actor.clone(),
        }))
    })?;
    let record = record.ok_or_else(|| ApiError::internal("the flag was not written"))?;

    let (event, action, status) = if created {
        ("flags.flag.created", "create", 201)
    } else {
        ("flags.flag.updated", "update", 200)
    };
    NewEvent::new(event, action)
        .resource("flag", key)
        .data(&json!({
            "project": scope.project,
            "environment": scope.environment,
            "state": flag.state(),
            "type": flag.flag_type(),
            "version": record.version,
        }))
        .audit()
        .emit()?;
    let response = Response::json(status, &record).with_header("etag", record.etag.clone());
    Ok(if created {
        response.with_header("location", location(&scope, key))
    } else {
        response
    })
}

/// `GET /flags`: the flags of one project and environment in key order, as the envelope
/// `{items, nextCursor, total}`.
pub fn list(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let scope = Scope::of(req, params)?;
    let page =
        paginate_kv::<FlagRecord>(&Bucket::caller()?, &scope.flag_prefix(), &req.page_query()?)?;
    Ok(page.into_response())
}

/// `GET /flags/{key}`, with an `ETag`; `If-None-Match` with the current etag answers 304.
pub fn get(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let key = &params["key"];
    let scope = Scope::of(req, params)?;
    let record = find(&Bucket::caller()?, &scope, key)?;
    Ok(conditional_get(req, &record, &record.etag))
}

/// `DELETE /flags/{key}`: 204, or 404 for a flag that does not exist.
pub fn delete(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let key = &params["key"];
    let scope = Scope::of(req, params)?;
    let bucket = Bucket::caller()?;
    let record = find(&bucket, &scope, key)?;
    if !bucket.delete(&scope.flag_key(key))? {
        return Err(not_found(&scope, key));
    }
    bucket.increment(&scope.revision_key(), 1)?;
    NewEvent::new("flags.flag.deleted", "delete")
        .resource("flag", key)
        .data(&json!({
            "project": scope.project,
            "environment": scope.environment,
            "version": record.version,
        }))
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

fn find(bucket: &Bucket, scope: &Scope, key: &str) -> Result<FlagRecord, ApiError> {
    // A key that breaks the naming rule cannot have been stored.
    if check_name("key", key).is_err() {
        return Err(not_found(scope, key));
    }
    bucket
        .get(&scope.flag_key(key))?
        .ok_or_else(|| not_found(scope, key))
}

fn not_found(scope: &Scope, key: &str) -> ApiError {
    ApiError::not_found(format!(
        "flag {key} does not exist in project {} and environment {}: check the key, project and environment",
        scope.project, scope.environment
    ))
}

fn location(scope: &Scope, key: &str) -> String {
    format!(
        "/flags/{key}?project={}&environment={}",
        percent_encode(&scope.project),
        percent_encode(&scope.environment)
    )
}

/// Whether an `If-None-Match` header (`*`, or a list of strong or weak tags) matches `etag`,
/// with the weak comparison RFC 9110 prescribes for it.
pub fn etag_matches(header: &str, etag: &str) -> bool {
    let bare = |tag: &str| tag.trim().trim_start_matches("W/").to_owned();
    header
        .split(',')
        .any(|tag| tag.trim() == "*" || bare(tag) == bare(etag))
}

/// A stored record with its `ETag`, or 304 when `If-None-Match` names it.
pub fn conditional_get<T: serde::Serialize>(req: &Request, record: &T, etag: &str) -> Response {
    if req
        .header("if-none-match")
        .is_some_and(|tags| etag_matches(tags, etag))
    {
        return Response::new(304).with_header("etag", etag.to_owned());
    }
    Response::ok(record).with_header("etag", etag.to_owned())
}
