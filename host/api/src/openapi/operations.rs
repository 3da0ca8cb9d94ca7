//! What every operation of the served document gets from its route alone,
//! core and plugin alike, so a handler added anywhere is treated the same:
//! a unique, stable `operationId` (`apps.list`, `databases.create`,
//! `queues.messages`), a description, the `Idempotency-Key` header where
//! the middleware reads it, the `WWW-Authenticate` header of a 401, and
//! binary bodies spelled `format: binary`.
//!
//! The id is derived from the path and method, never from the handler's
//! function name (which is `list` in a dozen modules): the path's literal
//! segments in lower camel case joined by dots, then a verb:
//!
//! | route                                   | verb            |
//! |-----------------------------------------|-----------------|
//! | `GET` of a collection (an item path below it, or paginated) | `list` |
//! | `GET` of anything else                  | `get`           |
//! | `POST` of a collection (it has a `GET`, or items below it) | `create` |
//! | `POST` of a literal that is not one (an action: `/apps/{id}/pause`) | none: `apps.pause` |
//! | `POST` of an item (`/checks/ping/{token}`) | `post`       |
//! | `PUT`, `PATCH`, `DELETE`                | `put`, `update`, `delete` |
//!
//! A handler that wants another id names it with a dot in
//! `#[utoipa::path(operation_id = "...")]`, which is kept; two routes that
//! still meet get their method appended, so the ids stay unique.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

const METHODS: [&str; 5] = ["get", "put", "post", "delete", "patch"];

/// Applies the module's rules to every operation of `doc`.
pub fn finish(doc: &mut Value) {
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    let ids = operation_ids(paths);
    for (path, item) in paths.iter_mut() {
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for (method, op) in item.iter_mut() {
            let Some(op) = op
                .as_object_mut()
                .filter(|_| METHODS.contains(&method.as_str()))
            else {
                continue;
            };
            if let Some(id) = ids.get(&(path.clone(), method.clone())) {
                op.insert("operationId".into(), json!(id));
            }
            describe(op);
            if method != "get" && !is_public(op) {
                add_idempotency_key(op);
            }
            binary_bodies(op);
            challenge_header(op);
        }
    }
}

fn segments(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|s| !s.is_empty())
}

fn is_param(segment: &str) -> bool {
    segment.starts_with('{')
}

/// `source-upload` → `sourceUpload`.
fn camel(segment: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in segment.chars() {
        if c == '-' || c == '_' || c == '.' {
            upper = !out.is_empty();
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn paginated(op: &Value) -> bool {
    op["parameters"].as_array().is_some_and(|ps| {
        ps.iter()
            .any(|p| p["in"] == "query" && p["name"] == "cursor")
    })
}

/// The derived id of every `(path, method)`.
fn operation_ids(paths: &Map<String, Value>) -> BTreeMap<(String, String), String> {
    // Paths with an item below them: `/apps` for `/apps/{id}`.
    let collections: BTreeSet<String> = paths
        .keys()
        .filter_map(|p| p.rsplit_once('/').filter(|(_, last)| is_param(last)))
        .map(|(parent, _)| parent.to_owned())
        .collect();
    let mut ids = BTreeMap::new();
    for (path, item) in paths {
        let Some(item) = item.as_object() else {
            continue;
        };
        let literals: Vec<String> = segments(path).filter(|s| !is_param(s)).map(camel).collect();
        let base = literals.join(".");
        let on_item = segments(path).last().is_some_and(is_param);
        for (method, op) in item.iter().filter(|(m, _)| METHODS.contains(&m.as_str())) {
            let chosen = op["operationId"].as_str().filter(|id| id.contains('.'));
            let collection = collections.contains(path) || paginated(op);
            let verb = match (method.as_str(), on_item) {
                ("get", true) => Some("get"),
                ("get", false) if collection => Some("list"),
                ("get", false) => Some("get"),
                ("post", true) => Some("post"),
                ("post", false) if collection || item.contains_key("get") => Some("create"),
                ("post", false) if !base.is_empty() => None,
                ("post", false) => Some("create"),
                ("put", _) => Some("put"),
                ("patch", _) => Some("update"),
                _ => Some("delete"),
            };
            let id = match (chosen, verb) {
                (Some(id), _) => id.to_owned(),
                (None, Some(verb)) if base.is_empty() => verb.to_owned(),
                (None, Some(verb)) => format!("{base}.{verb}"),
                (None, None) => base.clone(),
            };
            ids.insert((path.clone(), method.clone()), id);
        }
    }
    // Two routes that meet (`/a/{x}/b` and `/a/b`, both POST) are told
    // apart by their method and, failing that, their path's parameters.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for id in ids.values() {
        *seen.entry(id.clone()).or_default() += 1;
    }
    let mut taken = BTreeSet::new();
    for ((path, method), id) in ids.iter_mut() {
        if seen[id.as_str()] > 1 {
            let params: Vec<String> = segments(path)
                .filter(|s| is_param(s))
                .map(|s| camel(s.trim_matches(['{', '}']).trim_end_matches("...")))
                .collect();
            *id = format!("{id}.{method}");
            if taken.contains(id) {
                *id = format!("{id}.by.{}", params.join("."));
            }
        }
        taken.insert(id.clone());
    }
    ids
}

/// An operation without a description gets its summary as one, so every
/// operation has both.
fn describe(op: &mut Map<String, Value>) {
    if op
        .get("description")
        .and_then(Value::as_str)
        .is_some_and(|d| !d.is_empty())
    {
        return;
    }
    let summary = op
        .get("summary")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .unwrap_or_else(|| "See the tag's documentation.".to_owned());
    op.insert("description".into(), json!(summary));
    op.entry("summary").or_insert(json!(summary));
}

/// `security: [{}]`: public, where the middleware has no caller to scope a
/// key to and ignores it.
fn is_public(op: &Map<String, Value>) -> bool {
    op.get("security")
        .and_then(Value::as_array)
        .is_some_and(|s| s.iter().any(|r| r.as_object().is_some_and(Map::is_empty)))
}

/// The `Idempotency-Key` request header of [`crate::idempotency`].
fn add_idempotency_key(op: &mut Map<String, Value>) {
    let params = op
        .entry("parameters")
        .or_insert_with(|| json!([]))
        .as_array_mut();
    let Some(params) = params else {
        return;
    };
    if params.iter().any(|p| {
        p["in"] == "header"
            && p["name"]
                .as_str()
                .is_some_and(|n| n.eq_ignore_ascii_case("idempotency-key"))
    }) {
        return;
    }
    params.push(json!({
        "name": "Idempotency-Key",
        "in": "header",
        "required": false,
        "description": "Makes a retry safe: the same key with the same body replays the first answer \
            (with `Idempotent-Replayed: true`) for 24 hours; with another body it is refused (422), \
            and while the first request runs, 409.",
        "schema": {
            "type": "string",
            "minLength": 1,
            "maxLength": crate::idempotency::MAX_KEY_LEN,
            "pattern": "^[\\x21-\\x7e]+$",
        },
    }));
}

/// Every 401 carries the RFC 6750 challenge ([`crate::error`] adds it).
fn challenge_header(op: &mut Map<String, Value>) {
    let Some(response) = op
        .get_mut("responses")
        .and_then(|r| r.get_mut("401"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    let headers = response.entry("headers").or_insert_with(|| json!({}));
    headers["WWW-Authenticate"] = json!({
        "description": "`Bearer realm=\"plateau\"`, with `error=\"invalid_token\"` when a token was sent",
        "required": true,
        "schema": { "type": "string" },
    });
}

/// utoipa spells a `Vec<u8>` body as an array of integers; on the wire it
/// is the bytes themselves.
fn binary_bodies(op: &mut Map<String, Value>) {
    let Some(content) = op
        .get_mut("requestBody")
        .and_then(|b| b.get_mut("content"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for (media, body) in content.iter_mut() {
        let bytes =
            body["schema"]["type"] == "array" && body["schema"]["items"]["type"] == "integer";
        if bytes && !media.ends_with("json") {
            body["schema"] = json!({ "type": "string", "format": "binary" });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids_of(paths: Value) -> BTreeMap<String, String> {
        let mut doc = json!({ "paths": paths });
        finish(&mut doc);
        let mut out = BTreeMap::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                out.insert(
                    format!("{} {path}", method.to_uppercase()),
                    op["operationId"].as_str().unwrap().to_owned(),
                );
            }
        }
        out
    }

    #[test]
    fn ids_follow_the_route() {
        let op = json!({ "operationId": "list", "responses": {} });
        let ids = ids_of(json!({
            "/apps": { "get": op, "post": op },
            "/apps/{id}": { "get": op, "patch": op, "delete": op },
            "/apps/{id}/pause": { "post": op },
            "/apps/{id}/source-upload/{uploadId}": { "put": op },
            "/me": { "get": op },
            "/apps/{id}/logs": { "get": { "parameters": [{ "in": "query", "name": "cursor" }] } },
            "/x": { "get": { "operationId": "custom.name" } },
        }));
        let expected = [
            ("GET /apps", "apps.list"),
            ("POST /apps", "apps.create"),
            ("GET /apps/{id}", "apps.get"),
            ("PATCH /apps/{id}", "apps.update"),
            ("DELETE /apps/{id}", "apps.delete"),
            ("POST /apps/{id}/pause", "apps.pause"),
            (
                "PUT /apps/{id}/source-upload/{uploadId}",
                "apps.sourceUpload.put",
            ),
            ("GET /me", "me.get"),
            ("GET /apps/{id}/logs", "apps.logs.list"),
            ("GET /x", "custom.name"),
        ];
        for (route, id) in expected {
            assert_eq!(ids[route], id, "{route}");
        }
    }

    #[test]
    fn ids_that_meet_are_told_apart() {
        let ids = ids_of(json!({
            "/a/{x}/b": { "post": {} },
            "/a/b": { "post": {} },
        }));
        let unique: BTreeSet<&String> = ids.values().collect();
        assert_eq!(unique.len(), 2, "{ids:?}");
    }

    #[test]
    fn binary_bodies_are_binary() {
        let mut doc = json!({ "paths": { "/u": { "put": { "requestBody": { "content": {
            "application/octet-stream": { "schema": { "type": "array", "items": { "type": "integer" } } }
        } } } } } });
        finish(&mut doc);
        let body = &doc["paths"]["/u"]["put"]["requestBody"]["content"]["application/octet-stream"];
        assert_eq!(
            body["schema"],
            json!({ "type": "string", "format": "binary" })
        );
        let params = doc["paths"]["/u"]["put"]["parameters"].as_array().unwrap();
        assert!(params.iter().any(|p| p["name"] == "Idempotency-Key"));
    }
}
