//! Plugin routes in the OpenAPI document, from their self-descriptions,
//! in the same shape as core operations (security, error responses).

use std::sync::Arc;

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

/// The OpenAPI `paths` of every active plugin.
pub fn paths(active: &[(String, Arc<PluginVersion>, i64)]) -> Value {
    let mut paths = Map::new();
    for (name, version, _) in active {
        for route in &version.description().routes {
            let security = match &route.access {
                Access::Public => json!([{}]),
                Access::Authenticated => json!([{ "bearer": [] }]),
                Access::Scope(s) => json!([{ "bearer": [s] }]),
            };
            let mut responses = Map::new();
            responses.insert(
                "200".into(),
                json!({ "description": "the plugin's answer" }),
            );
            responses.insert("400".into(), problem("bad request"));
            if !matches!(route.access, Access::Public) {
                responses.insert("401".into(), problem("missing or invalid token"));
                responses.insert(
                    "403".into(),
                    problem("the token lacks the scope named in the problem"),
                );
            }
            responses.insert("404".into(), problem("no such resource"));
            responses.insert(
                "500".into(),
                problem("the plugin failed; the problem names it"),
            );
            responses.insert("504".into(), problem("the plugin ran past its deadline"));
            let params: Vec<Value> = route
                .path
                .split('/')
                .filter_map(|s| s.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
                .map(|p| json!({ "name": p.trim_end_matches("..."), "in": "path", "required": true, "schema": { "type": "string" } }))
                .collect();
            let op = json!({
                "tags": [name],
                "summary": route.summary,
                "operationId": format!("{name}_{}_{}", route.method.to_ascii_lowercase(), route.path.replace(['/', '{', '}', '.'], "_")),
                "security": security,
                "parameters": params,
                "responses": responses,
                "x-plateau-plugin": { "name": name, "version": version.description().version },
            });
            let entry = paths
                .entry(route.path.replace("...}", "}"))
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(methods) = entry {
                methods.insert(route.method.to_ascii_lowercase(), op);
            }
        }
    }
    Value::Object(paths)
}
