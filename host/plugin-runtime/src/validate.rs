//! Checks of a plugin's self-description, made at load before the plugin
//! can serve anything.

use std::collections::{BTreeSet, HashSet};

use crate::config::Capability;
use crate::types::{Access, Description};

const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE"];

/// `[a-z][a-z0-9-]*`
fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

fn is_literal_segment(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~'))
}

/// `{name}` or, as the last segment, `{name...}`.
fn is_param_segment(s: &str, last: bool) -> bool {
    let Some(inner) = s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) else {
        return false;
    };
    let inner = match inner.strip_suffix("...") {
        Some(rest) if last => rest,
        Some(_) => return false,
        None => inner,
    };
    let mut chars = inner.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Whether `path` is `prefix` or below it.
fn is_under(path: &str, prefix: &str) -> bool {
    path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Checks `d` against the rules of the WIT and the operator's grants;
/// returns every problem found.
pub fn validate_description(
    d: &Description,
    grants: &BTreeSet<Capability>,
    reserved_prefixes: &[String],
) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    if !is_name(&d.name) || d.name.len() > 64 {
        problems.push(format!(
            "name `{}` must match [a-z][a-z0-9-]* (at most 64 bytes)",
            d.name
        ));
    }
    if semver::Version::parse(&d.version).is_err() {
        problems.push(format!(
            "version `{}` must be semver, such as 1.2.0",
            d.version
        ));
    }

    for prefix in &d.prefixes {
        let segments: Vec<&str> = prefix.split('/').skip(1).collect();
        if !prefix.starts_with('/') || segments.iter().any(|s| !is_literal_segment(s)) {
            problems.push(format!(
                "prefix `{prefix}` must be a path such as /flags, without a trailing slash"
            ));
        } else if let Some(core) = reserved_prefixes
            .iter()
            .find(|r| is_under(prefix, r) || is_under(r, prefix))
        {
            problems.push(format!("prefix `{prefix}` overlaps the core path `{core}`"));
        }
    }

    let declared_scopes: HashSet<&str> = d.scopes.iter().map(|s| s.name.as_str()).collect();
    for scope in &d.scopes {
        let valid = scope
            .name
            .split_once(':')
            .is_some_and(|(area, verb)| is_name(area) && is_name(verb));
        if !valid {
            problems.push(format!(
                "scope `{}` must be `area:verb`, such as flags:read",
                scope.name
            ));
        }
    }

    let mut seen_routes = HashSet::new();
    for route in &d.routes {
        let label = format!("route {} {}", route.method, route.path);
        if !METHODS.contains(&route.method.as_str()) {
            problems.push(format!(
                "{label}: method must be one of {}",
                METHODS.join(", ")
            ));
        }
        let segments: Vec<&str> = route.path.split('/').skip(1).collect();
        let pattern_ok = route.path.starts_with('/')
            && segments.iter().enumerate().all(|(i, s)| {
                is_literal_segment(s) || is_param_segment(s, i + 1 == segments.len())
            });
        if !pattern_ok {
            problems.push(format!(
                "{label}: path must be a pattern such as /flags/{{key}}"
            ));
        }
        if !d.prefixes.iter().any(|p| is_under(&route.path, p)) {
            problems.push(format!(
                "{label}: path is under none of the declared prefixes"
            ));
        }
        if let Access::Scope(scope) = &route.access
            && !declared_scopes.contains(scope.as_str())
        {
            problems.push(format!(
                "{label}: scope `{scope}` is not declared in scopes"
            ));
        }
        if !seen_routes.insert((&route.method, &route.path)) {
            problems.push(format!("{label}: declared twice"));
        }
    }

    for capability in &d.capabilities {
        match capability.parse::<Capability>() {
            Ok(c) if grants.contains(&c) => {}
            Ok(c) => problems.push(format!("capability `{c}` is not granted to the plugin")),
            Err(e) => problems.push(e),
        }
    }

    for subscription in &d.subscriptions {
        let body = subscription.strip_suffix('*').unwrap_or(subscription);
        let valid = !subscription.is_empty()
            && body.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
            });
        if !valid {
            problems.push(format!(
                "subscription `{subscription}` must be an event type, optionally ending in `*`"
            ));
        }
    }

    let mut schedule_names = HashSet::new();
    for schedule in &d.schedules {
        if !is_name(&schedule.name) || !schedule_names.insert(&schedule.name) {
            problems.push(format!(
                "schedule `{}` needs a unique name matching [a-z][a-z0-9-]*",
                schedule.name
            ));
        }
        if schedule.every_seconds == 0 {
            problems.push(format!(
                "schedule `{}`: every-seconds must be at least 1",
                schedule.name
            ));
        }
    }

    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Route, Schedule, ScopeInfo};

    fn valid() -> Description {
        Description {
            name: "flags".into(),
            version: "1.0.0".into(),
            prefixes: vec!["/flags".into()],
            routes: vec![
                Route {
                    method: "GET".into(),
                    path: "/flags/{key}".into(),
                    access: Access::Scope("flags:read".into()),
                    summary: "read a flag".into(),
                },
                Route {
                    method: "POST".into(),
                    path: "/flags/ingest/{rest...}".into(),
                    access: Access::Public,
                    summary: String::new(),
                },
            ],
            scopes: vec![ScopeInfo {
                name: "flags:read".into(),
                description: "read flags".into(),
            }],
            capabilities: vec!["kv".into()],
            subscriptions: vec!["flags.*".into()],
            schedules: vec![Schedule {
                name: "sweep".into(),
                every_seconds: 60,
            }],
        }
    }

    fn check(edit: impl FnOnce(&mut Description)) -> Result<(), Vec<String>> {
        let mut d = valid();
        edit(&mut d);
        let grants = [Capability::Kv].into_iter().collect();
        validate_description(&d, &grants, &["/orgs".to_string()])
    }

    #[test]
    fn accepts_a_valid_description() {
        assert_eq!(check(|_| {}), Ok(()));
    }

    #[test]
    fn reports_each_problem() {
        type Edit = Box<dyn FnOnce(&mut Description)>;
        let cases: Vec<(Edit, &str)> = vec![
            (Box::new(|d| d.name = "Flags".into()), "name `Flags`"),
            (Box::new(|d| d.name = "9lives".into()), "name `9lives`"),
            (Box::new(|d| d.version = "1.0".into()), "version `1.0`"),
            (
                Box::new(|d| d.prefixes = vec!["flags".into()]),
                "prefix `flags`",
            ),
            (
                Box::new(|d| d.prefixes.push("/orgs/x".into())),
                "overlaps the core path `/orgs`",
            ),
            (Box::new(|d| d.prefixes.push("/".into())), "prefix `/`"),
            (
                Box::new(|d| d.routes[0].method = "TRACE".into()),
                "method must be",
            ),
            (
                Box::new(|d| d.routes[0].path = "/other/{key}".into()),
                "under none",
            ),
            (
                Box::new(|d| d.routes[0].path = "/flags/{rest...}/x".into()),
                "must be a pattern",
            ),
            (
                Box::new(|d| d.routes[0].access = Access::Scope("flags:write".into())),
                "not declared",
            ),
            (
                Box::new(|d| d.scopes[0].name = "flags".into()),
                "`area:verb`",
            ),
            (
                Box::new(|d| d.capabilities.push("http".into())),
                "`http` is not granted",
            ),
            (
                Box::new(|d| d.capabilities.push("disk".into())),
                "unknown capability `disk`",
            ),
            (
                Box::new(|d| d.subscriptions.push("fl*ags".into())),
                "subscription `fl*ags`",
            ),
            (Box::new(|d| d.schedules[0].every_seconds = 0), "at least 1"),
            (
                Box::new(|d| d.routes.push(d.routes[0].clone())),
                "declared twice",
            ),
        ];
        for (edit, expected) in cases {
            let problems = check(edit).expect_err(expected);
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "expected a problem with {expected:?}, got {problems:?}"
            );
        }
    }
}
