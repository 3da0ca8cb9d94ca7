//! Plugin routes in the OpenAPI document, from their self-descriptions,
//! in the same shape as core operations (security, error responses), with
//! the bodies the component declared at load
//! ([`plateau_contract::api_schema`]).

mod ofrep;
mod otlp;

use std::sync::Arc;

use plateau_contract::api_schema::ResponseSchema;
use plateau_plugin_runtime::{Access, Description, PluginVersion};
use serde_json::{Map, Value, json};

/// A description as stored with its version.
pub fn description_json(d: &Description) -> Value {
    json!({
        "name": d.name,
        "version": d.version,
        "prefixes": d.prefixes,
        "routes": d.routes.iter().map(|r| json!({
            "method": r.method, "path": r.path, "access": access_str(&r.access), "summary": r.summary,
        })).collect::<Vec<_>>(),
        "scopes": d.scopes.iter().map(|s| json!({ "name": s.name, "description": s.description })).collect::<Vec<_>>(),
        "capabilities": d.capabilities,
        "subscriptions": d.subscriptions,
        "schedules": d.schedules.iter().map(|s| json!({ "name": s.name, "everySeconds": s.every_seconds })).collect::<Vec<_>>(),
    })
}

pub fn access_str(access: &Access) -> String {
    match access {
        Access::Public => "public".to_owned(),
        Access::Authenticated => "authenticated".to_owned(),
        Access::Scope(s) => s.clone(),
    }
}

fn problem(description: &str) -> Value {
    json!({
        "description": description,
        "content": { "application/problem+json": { "schema": { "$ref": "#/components/schemas/Problem" } } }
    })
}

/// The problem statuses any plugin route can answer: the host's own (401
/// and 403 before the plugin runs, 413 and 415 for the body, 500 when the
/// plugin fails, 504 past its deadline) and those of the SDK's error codes.
const PROBLEMS: &[(&str, &str)] = &[
    ("400", "bad request: the problem names the invalid fields"),
    ("401", "missing or invalid token"),
    ("403", "the token lacks the scope named in the problem"),
    ("404", "no such resource"),
    ("409", "a conflict with the current state"),
    ("413", "the body is too large"),
    ("415", "the body is not JSON"),
    ("422", "the request cannot be processed"),
    ("429", "a rate limit is reached"),
    ("500", "the plugin failed; the problem names it"),
    ("503", "a service the plugin needs is unavailable"),
    ("504", "the plugin ran past its deadline"),
];

/// The responses of one route: its declared success (else any `2XX`
/// with the plugin's answer) and problem documents, except where a route
/// speaks a protocol with its own error shape ([`ofrep`], [`otlp`]).
fn responses(path: &str, access: &Access, success: &[ResponseSchema]) -> Map<String, Value> {
    let mut responses = Map::new();
    for ResponseSchema {
        status,
        schema,
        content_type,
    } in success
    {
        let media = content_type.as_deref().unwrap_or("application/json");
        let answer = match schema {
            Some(schema) => json!({
                "description": "the plugin's answer",
                "content": { media: { "schema": schema } }
            }),
            None => json!({ "description": "done, without a body" }),
        };
        responses.insert(status.to_string(), answer);
    }
    if success.is_empty() {
        responses.insert(
            "2XX".into(),
            json!({ "description": "the plugin's answer" }),
        );
    }
    for (status, description) in PROBLEMS {
        let auth = matches!(*status, "401" | "403");
        if auth && matches!(access, Access::Public) {
            continue;
        }
        responses.insert((*status).into(), problem(description));
    }
    ofrep::document(path, &mut responses);
    otlp::document(path, &mut responses);
    responses
}

/// The request body of a route that takes one: the declared schema (in
/// its media type, JSON unless named), else any JSON and none (a plugin
/// reads an absent body as it chooses).
fn request_body(
    method: &str,
    declared: Option<&Value>,
    media: Option<&str>,
    optional: bool,
) -> Option<Value> {
    if let Some(schema) = declared {
        let media = media.unwrap_or("application/json");
        return Some(json!({
            "required": !optional,
            "content": { media: { "schema": schema } }
        }));
    }
    matches!(method, "POST" | "PUT" | "PATCH").then(|| {
        json!({
            "description": "JSON; its shape is the plugin's (see the plugin's documentation)",
            "required": false,
            "content": { "application/json": { "schema": {} } }
        })
    })
}

/// A plugin's schema names as served: `<plugin>.<name>`, so two plugins'
/// names never meet each other's or the core's.
fn renamed(plugin: &str, value: &Value) -> Value {
    const REF: &str = "#/components/schemas/";
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| match (k.as_str(), v.as_str()) {
                    ("$ref", Some(target)) if target.starts_with(REF) => {
                        let name = &target[REF.len()..];
                        (k.clone(), json!(format!("{REF}{plugin}.{name}")))
                    }
                    _ => (k.clone(), renamed(plugin, v)),
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| renamed(plugin, v)).collect()),
        other => other.clone(),
    }
}

/// The OpenAPI fragment of every active plugin: `paths` and
/// `components.schemas`, which the API's served document merges.
pub fn paths(active: &[(String, Arc<PluginVersion>, i64)]) -> Value {
    let mut paths = Map::new();
    let mut schemas = Map::new();
    for (name, version, _) in active {
        let api = version.api_schema();
        for (component, schema) in api.map(|a| &a.components).into_iter().flatten() {
            schemas.insert(format!("{name}.{component}"), renamed(name, schema));
        }
        for route in &version.description().routes {
            let security = match &route.access {
                Access::Public => json!([{}]),
                Access::Authenticated => json!([{ "bearer": [] }]),
                Access::Scope(s) => json!([{ "bearer": [s] }]),
            };
            let declared = api.and_then(|a| a.route(&route.method, &route.path));
            let request = declared
                .and_then(|d| d.request.as_ref())
                .map(|s| renamed(name, s));
            let success: Vec<ResponseSchema> = declared
                .map(|d| d.responses.as_slice())
                .unwrap_or_default()
                .iter()
                .map(|r| ResponseSchema {
                    status: r.status,
                    schema: r.schema.as_ref().map(|s| renamed(name, s)),
                    content_type: r.content_type.clone(),
                })
                .collect();
            let responses = responses(&route.path, &route.access, &success);
            let params: Vec<Value> = route
                .path
                .split('/')
                .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
                .map(|p| json!({ "name": p.trim_end_matches("..."), "in": "path", "required": true, "schema": { "type": "string" } }))
                .collect();
            let mut op = json!({
                "tags": [name],
                "summary": route.summary,
                "security": security,
                "parameters": params,
                "responses": responses,
                "x-plateau-plugin": { "name": name, "version": version.description().version },
            });
            if let Some(text) = declared.and_then(|d| d.description.as_deref()) {
                op["description"] = json!(text);
            }
            let media = declared.and_then(|d| d.request_type.as_deref());
            let optional = declared.is_some_and(|d| d.request_optional);
            if let Some(body) = request_body(&route.method, request.as_ref(), media, optional) {
                op["requestBody"] = ofrep::request_body(&route.path)
                    .or_else(|| otlp::request_body(&route.path))
                    .unwrap_or(body);
            }
            let entry = paths
                .entry(route.path.replace("...}", "}"))
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(methods) = entry {
                methods.insert(route.method.to_ascii_lowercase(), op);
            }
        }
    }
    json!({ "paths": paths, "components": { "schemas": schemas } })
}
