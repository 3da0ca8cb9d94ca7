//! The checks of a self-description that need nothing from the operator:
//! the host runs them at load (adding its own: the version is semver, no
//! prefix overlaps the core API, every capability is granted), and a
//! plugin's native test runs them to find the same mistakes first.

use std::collections::HashSet;

use crate::description::{Access, Capability, Description};
use crate::http::Method;
use crate::route::{Pattern, is_literal_segment};

/// `[a-z][a-z0-9-]*`: plugin, schedule, scope area and verb names.
pub fn is_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
}

/// Whether `path` is `prefix` or below it.
pub fn is_under(path: &str, prefix: &str) -> bool {
    path == prefix
        || path
            .strip_prefix(prefix)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// A prefix is a path of literal segments without a trailing slash: `/flags`.
pub fn is_prefix(prefix: &str) -> bool {
    prefix
        .strip_prefix('/')
        .is_some_and(|body| body.split('/').all(is_literal_segment))
}

impl Description {
    /// Every mistake the host refuses at load whatever the operator set;
    /// empty when there is none.
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !is_name(&self.name) || self.name.len() > 64 {
            problems.push(format!(
                "name `{}` must match [a-z][a-z0-9-]* (at most 64 bytes)",
                self.name
            ));
        }
        if self.prefixes.is_empty() {
            problems.push("declare at least one prefix, such as /flags".to_owned());
        }
        for prefix in self.prefixes.iter().filter(|p| !is_prefix(p)) {
            problems.push(format!(
                "prefix `{prefix}` must be a path such as /flags, without a trailing slash"
            ));
        }
        for scope in &self.scopes {
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
        self.route_problems(&mut problems);
        for capability in &self.capabilities {
            if let Err(e) = capability.parse::<Capability>() {
                problems.push(e);
            }
        }
        for subscription in &self.subscriptions {
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
        for schedule in &self.schedules {
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
        problems
    }

    fn route_problems(&self, problems: &mut Vec<String>) {
        let mut seen: Vec<(&str, Pattern<'_>)> = Vec::new();
        for route in &self.routes {
            let label = format!("route {} {}", route.method, route.path);
            if Method::parse(&route.method).is_none() {
                problems.push(format!(
                    "{label}: method must be one of GET, POST, PUT, PATCH, DELETE"
                ));
            }
            match Pattern::parse(&route.path) {
                Ok(pattern) => {
                    let twice = seen
                        .iter()
                        .any(|(m, p)| *m == route.method && p.same_shape(&pattern));
                    if twice {
                        problems.push(format!("{label}: declared twice"));
                    }
                    seen.push((&route.method, pattern));
                }
                Err(why) => problems.push(format!(
                    "{label}: path must be a pattern such as /flags/{{key}}: {why}"
                )),
            }
            if !self.prefixes.iter().any(|p| is_under(&route.path, p)) {
                problems.push(format!(
                    "{label}: path is under none of the declared prefixes"
                ));
            }
            if let Access::Scope(scope) = &route.access
                && !self.scopes.iter().any(|s| s.name == *scope)
            {
                problems.push(format!(
                    "{label}: scope `{scope}` is not declared in scopes"
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests;
