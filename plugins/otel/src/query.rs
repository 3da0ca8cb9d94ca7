//! What the queries share: the project and its kept days, filters read
//! from the query string, and times.

use plateau_sdk::serde_json::Value;
use plateau_sdk::{ApiError, Bucket, Request, clock};

use crate::record::{self, Attributes};
use crate::retention;

/// The most chunks one query reads before it answers with what it found.
pub const MAX_CHUNKS: usize = 400;

/// The scope of a query: the caller's bucket and project, and the days
/// kept, newest first.
pub struct Scope {
    pub bucket: Bucket,
    pub project: String,
    pub days: Vec<String>,
}

impl Scope {
    pub fn of(req: &Request) -> Result<Scope, ApiError> {
        req.caller.organization()?;
        let project = req
            .caller
            .project_id
            .clone()
            .ok_or_else(|| ApiError::bad_request("the request names no project"))?;
        let bucket = Bucket::caller()?;
        retention::remember_plan(&bucket, req.caller.plan.as_deref())?;
        let now = clock::now_millis();
        let first = retention::first_kept_day(&bucket, now)?;
        let today = now / record::DAY_MS;
        let days = (first..=today)
            .rev()
            .map(|d| record::day(d * record::DAY_MS))
            .collect();
        Ok(Scope {
            bucket,
            project,
            days,
        })
    }

    /// Chunk names under `{kind}/{project}/{day}/{trace}/` (a pointer list).
    pub fn pointed(&self, kind: &str, day: &str, trace: &str) -> Result<Vec<String>, ApiError> {
        let prefix = format!("{}{trace}/", record::daily_prefix(kind, &self.project, day));
        Ok(self
            .bucket
            .list_all(&prefix)?
            .into_iter()
            .map(|e| e.key[prefix.len()..].to_owned())
            .collect())
    }

    /// The records of chunk `name` of `kind` on `day`; none if it is gone.
    pub fn chunk<T: serde::de::DeserializeOwned>(
        &self,
        kind: &str,
        day: &str,
        name: &str,
    ) -> Result<Vec<T>, ApiError> {
        let key = format!("{}{name}", record::daily_prefix(kind, &self.project, day));
        Ok(self.bucket.get::<Vec<T>>(&key)?.unwrap_or_default())
    }
}

/// `limit` of the query: 1 to `max`, else `default`.
pub fn limit(req: &Request, default: u32, max: u32) -> Result<usize, ApiError> {
    limit_named(req, "limit", default, max)
}

pub fn limit_named(req: &Request, name: &str, default: u32, max: u32) -> Result<usize, ApiError> {
    match req.query().parse_as::<u32>(name)? {
        None => Ok(default as usize),
        Some(n) if (1..=max).contains(&n) => Ok(n as usize),
        Some(_) => Err(ApiError::validation(name, format!("must be 1 to {max}"))),
    }
}

/// A trace id of the path or query: 32 hex digits, lowercased.
pub fn trace_id(raw: &str, field: &str) -> Result<String, ApiError> {
    if raw.len() == 32 && raw.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(raw.to_ascii_lowercase())
    } else {
        Err(ApiError::validation(field, "must be 32 hexadecimal digits"))
    }
}

/// Attribute filters: every `attr.{key}={value}` of the query.
pub fn attribute_filters(req: &Request) -> Vec<(String, String)> {
    req.query()
        .pairs()
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix("attr.")?.to_owned(), v.clone())))
        .collect()
}

/// An attribute value as a filter compares it: a string as itself, any
/// other value as its JSON.
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Whether every filter matches an attribute of the record or of its
/// resource.
pub fn attributes_match(
    filters: &[(String, String)],
    own: &Attributes,
    resource: &Attributes,
) -> bool {
    filters.iter().all(|(key, want)| {
        own.get(key)
            .or_else(|| resource.get(key))
            .is_some_and(|v| text(v) == *want)
    })
}

/// Nanoseconds as RFC 3339 (to the millisecond).
pub fn time(ns: u64) -> String {
    clock::rfc3339(ns / 1_000_000)
}

#[cfg(test)]
mod tests {
    use super::*;
    use plateau_sdk::serde_json::json;

    #[test]
    fn filters_compare_text_against_own_then_resource_attributes() {
        let own: Attributes = [("code".to_owned(), json!(200))].into();
        let resource: Attributes = [("env".to_owned(), json!("prod"))].into();
        let f = |k: &str, v: &str| vec![(k.to_owned(), v.to_owned())];
        assert!(attributes_match(&f("code", "200"), &own, &resource));
        assert!(attributes_match(&f("env", "prod"), &own, &resource));
        assert!(!attributes_match(&f("env", "dev"), &own, &resource));
        assert!(!attributes_match(&f("missing", "x"), &own, &resource));
    }

    #[test]
    fn trace_ids_are_32_hex_digits() {
        assert_eq!(
            trace_id(&"AB".repeat(16), "traceId").unwrap(),
            "ab".repeat(16)
        );
        assert!(trace_id("xyz", "traceId").is_err());
    }
}
