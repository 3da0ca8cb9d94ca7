//! The OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]`
//! attributes. This module adds what every operation shares: the security
//! schemes, the problem-details error responses and the rules of shared
//! parameters and fields (names, scopes, page sizes, time bounds).
//!
//! The document states what the server accepts, no more and no less: the
//! test suite runs schemathesis against it (`openapi_conformance`), so a
//! rule checked by a handler but missing here fails the build.

mod operations;

use std::collections::BTreeMap;

use serde_json::{Value, json};
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, RefOr, ResponseBuilder, Schema};
use utoipa::{Modify, OpenApi as _, PartialSchema, ToSchema};

use crate::error::{FieldError, Problem};

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Plateau API",
        version = "1",
        description = "The Plateau platform API. Every operation states who may call it in `security`: \
            a bearer token with the named scope, any valid token (no scope listed), the connect-grant \
            secret, the operator's session cookie, or nobody (`{}`, public). Lists paginate with `limit` \
            and `cursor` and answer `{items, nextCursor, total}`; errors are RFC 9457 problem documents \
            with a stable `code`. POST, PUT, PATCH and DELETE accept `Idempotency-Key`."
    ),
    servers((url = "/api/v1")),
    components(schemas(Problem, FieldError, ScopeName)),
    modifiers(&Shared)
)]
pub struct ApiDoc;

struct Shared;

impl Modify for Shared {
    fn modify(&self, doc: &mut OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("plt_<40 characters>")
                    .description(Some(
                        "An API token; the operation names the scope it needs.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "connectGrant",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("pltc_<40 characters>")
                    .description(Some(
                        "A connect-grant secret; accepted only on POST /connect/token.",
                    ))
                    .build(),
            ),
        );
        components.add_security_scheme(
            "adminSession",
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                crate::auth::ADMIN_COOKIE,
                "The platform operator's session, from POST /admin/login.",
            ))),
        );
    }
}

/// The document for the router's operations: the base plus the shared
/// error responses on every operation.
pub fn base() -> OpenApi {
    ApiDoc::openapi()
}

/// A scope name a token may carry: `*` or one the catalogue knows. The
/// served document lists them (the core's and the active plugins'), as
/// they change when plugins are loaded.
pub struct ScopeName;

impl PartialSchema for ScopeName {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some(
                "`*` (every scope) or a scope the platform knows: the core's and the active plugins'",
            ))
            .into()
    }
}

impl ToSchema for ScopeName {}

/// The rule [`crate::json::Validator::name`] checks: 1 to 100 characters,
/// not only spaces, no control characters.
pub fn name_schema() -> Schema {
    name_builder(Type::String.into()).into()
}

/// [`name_schema`] for an optional field, which may also be `null`.
pub fn optional_name_schema() -> Schema {
    name_builder(SchemaType::Array(vec![Type::String, Type::Null])).into()
}

fn name_builder(schema_type: SchemaType) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(schema_type)
        .min_length(Some(1))
        .max_length(Some(100))
        .pattern(Some(
            r"^[^\u0000-\u001f\u007f-\u009f]*[^\s\u0000-\u001f\u007f-\u009f][^\u0000-\u001f\u007f-\u009f]*$",
        ))
}

/// Adds the error responses each operation can give.
pub fn add_error_responses(doc: &mut OpenApi) {
    for (path, item) in doc.paths.paths.iter_mut() {
        let has_id = path.contains('{');
        let ops = [
            (&mut item.get, false),
            (&mut item.put, true),
            (&mut item.post, true),
            (&mut item.delete, true),
            (&mut item.patch, true),
        ];
        for (op, mutates) in ops {
            if let Some(op) = op.as_mut() {
                add_errors(op, has_id, mutates);
            }
        }
    }
}

/// Serves a problem body a handler documents with `body = Problem` under
/// the type every problem is sent with, `application/problem+json`.
fn problem_content_type(op: &mut Operation) {
    let problem = Ref::from_schema_name("Problem").ref_location;
    for response in op.responses.responses.values_mut() {
        let RefOr::T(response) = response else {
            continue;
        };
        let is_problem = response
            .content
            .get("application/json")
            .is_some_and(|c| matches!(&c.schema, Some(RefOr::Ref(r)) if r.ref_location == problem));
        if let Some(content) = is_problem
            .then(|| response.content.shift_remove("application/json"))
            .flatten()
        {
            response
                .content
                .insert(crate::error::PROBLEM_JSON.to_owned(), content);
        }
    }
}

fn add_errors(op: &mut Operation, has_id: bool, mutates: bool) {
    problem_content_type(op);
    let public = op
        .security
        .as_ref()
        .and_then(|s| serde_json::to_value(s).ok())
        .is_some_and(|v| v[0].as_object().is_some_and(|o| o.is_empty()));
    let mut errors = vec![(
        "400",
        "bad request: the problem's errors name the invalid fields",
    )];
    if !public {
        errors.push(("401", "missing, malformed, expired or revoked credentials"));
        errors.push((
            "403",
            "the token lacks the scope (named in the problem) or the role",
        ));
    }
    if has_id {
        errors.push(("404", "no such resource in the caller's organisation"));
    }
    if mutates {
        errors.push((
            "409",
            "a conflict, or the same Idempotency-Key is still in flight",
        ));
        errors.push(("413", "the body is too large"));
        errors.push(("415", "the body is not JSON"));
        errors.push(("422", "the Idempotency-Key was used with a different body"));
    }
    errors.push(("500", "internal error"));
    for (status, description) in errors {
        if op.responses.responses.contains_key(status) {
            continue;
        }
        let response = ResponseBuilder::new()
            .description(description)
            .content(
                crate::error::PROBLEM_JSON,
                ContentBuilder::new()
                    .schema(Some(Ref::from_schema_name("Problem")))
                    .build(),
            )
            .build();
        op.responses
            .responses
            .insert(status.to_owned(), response.into());
    }
}

/// States the rules query parameters share wherever they appear, as the
/// handlers check them with one function each: `limit` (the pagination's
/// page size) and the time bounds `from` and `to`; and keeps optional
/// request bodies from admitting `null`.
pub fn add_parameter_rules(doc: &mut Value) {
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    // utoipa spells an optional body (`Option<T>`) as `null | T`, but the
    // server reads an absent body as `{}` and refuses a `null` one: the
    // body stays `T`, and not required.
    for schema in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
        .filter_map(|op| op.get_mut("requestBody"))
        .filter(|body| body.get("required") != Some(&Value::Bool(true)))
        .filter_map(|body| body.get_mut("content"))
        .filter_map(Value::as_object_mut)
        .flat_map(|content| content.values_mut())
        .filter_map(|media| media.get_mut("schema"))
    {
        let null = json!({ "type": "null" });
        let only = match schema["oneOf"].as_array().map(Vec::as_slice) {
            Some([a, b]) if *a == null => b.clone(),
            Some([a, b]) if *b == null => a.clone(),
            _ => continue,
        };
        *schema = only;
    }
    for param in paths
        .values_mut()
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut())
        .filter_map(|op| op.get_mut("parameters").and_then(Value::as_array_mut))
        .flatten()
    {
        if param["in"] != "query" {
            continue;
        }
        let schema = match param["name"].as_str() {
            Some("limit") => json!({
                "type": "integer",
                "minimum": 1,
                "maximum": crate::pagination::MAX_LIMIT,
            }),
            Some("from" | "to") => json!({
                "type": "string",
                "anyOf": [{ "format": "date-time" }, { "format": "date" }],
            }),
            _ => continue,
        };
        param["schema"] = schema;
    }
}

/// The document as served: the router's operations, the plugins'
/// operations and schemas (an OpenAPI fragment with `paths` and
/// `components.schemas`), and the scope names known now.
pub fn served(doc: &Value, plugins: Value, scopes: BTreeMap<String, String>) -> Value {
    let mut doc = doc.clone();
    let mut plugins = plugins;
    if let (Some(paths), Value::Object(extra)) =
        (doc["paths"].as_object_mut(), plugins["paths"].take())
    {
        for (path, methods) in extra {
            paths.entry(path).or_insert(methods);
        }
    }
    if let (Some(schemas), Value::Object(extra)) = (
        doc["components"]["schemas"].as_object_mut(),
        plugins["components"]["schemas"].take(),
    ) {
        for (name, schema) in extra {
            schemas.entry(name).or_insert(schema);
        }
    }
    let names: Vec<String> = std::iter::once(plateau_core::scope::ALL.to_owned())
        .chain(scopes.into_keys())
        .collect();
    doc["components"]["schemas"]["ScopeName"]["enum"] = json!(names);
    operations::finish(&mut doc);
    doc
}
