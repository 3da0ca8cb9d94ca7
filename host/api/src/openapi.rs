//! The OpenAPI 3.1 document, generated from the handlers' `#[utoipa::path]`
//! attributes. This module adds what every operation shares: the security
//! schemes and the problem-details error responses.

use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, Ref, ResponseBuilder};
use utoipa::{Modify, OpenApi as _};

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
    components(schemas(Problem, FieldError)),
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

fn add_errors(op: &mut Operation, has_id: bool, mutates: bool) {
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

/// The document with the plugins' operations added to its paths.
pub fn with_plugin_paths(doc: &serde_json::Value, plugins: serde_json::Value) -> serde_json::Value {
    let mut doc = doc.clone();
    if let (Some(paths), serde_json::Value::Object(extra)) = (doc["paths"].as_object_mut(), plugins)
    {
        for (path, methods) in extra {
            paths.entry(path).or_insert(methods);
        }
    }
    doc
}
