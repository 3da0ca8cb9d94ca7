//! Matching request paths against the route patterns of a plugin's
//! self-description: `/flags/{key}`, and a last segment `{rest...}` that
//! takes the rest of the path. The most specific route wins: segment by
//! segment from the left, a literal beats `{x}`, which beats `{rest...}`.

use plateau_plugin_runtime::{Access, Route};

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Param,
    Rest,
}

/// A route of a plugin version, parsed once.
#[derive(Clone, Debug)]
pub struct CompiledRoute {
    pub method: String,
    pub pattern: String,
    pub access: Access,
    pub summary: String,
    segments: Vec<Segment>,
}

impl CompiledRoute {
    pub fn new(route: &Route) -> Self {
        let segments = route
            .path
            .trim_start_matches('/')
            .split('/')
            .map(|s| {
                if s.starts_with('{') && s.ends_with("...}") {
                    Segment::Rest
                } else if s.starts_with('{') && s.ends_with('}') {
                    Segment::Param
                } else {
                    Segment::Literal(s.to_owned())
                }
            })
            .collect();
        CompiledRoute {
            method: route.method.to_ascii_uppercase(),
            pattern: route.path.clone(),
            access: route.access.clone(),
            summary: route.summary.clone(),
            segments,
        }
    }

    /// A specificity rank when `path` matches: one digit per segment.
    fn rank(&self, parts: &[&str]) -> Option<Vec<u8>> {
        let mut rank = Vec::with_capacity(self.segments.len());
        for (i, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Rest => {
                    if parts.len() <= i || parts[i..].iter().any(|p| p.is_empty()) {
                        return None;
                    }
                    rank.push(0);
                    return Some(rank);
                }
                Segment::Param => {
                    let part = parts.get(i)?;
                    if part.is_empty() {
                        return None;
                    }
                    rank.push(1);
                }
                Segment::Literal(lit) => {
                    if parts.get(i)? != lit {
                        return None;
                    }
                    rank.push(2);
                }
            }
        }
        (parts.len() == self.segments.len()).then_some(rank)
    }
}

/// The outcome of matching a request against a version's routes.
pub enum Matched<'a> {
    Route(&'a CompiledRoute),
    /// The path exists with other methods.
    WrongMethod(Vec<String>),
    NoRoute,
}

pub fn find<'a>(routes: &'a [CompiledRoute], method: &str, path: &str) -> Matched<'a> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let method = if method == "HEAD" { "GET" } else { method };
    let mut best: Option<(Vec<u8>, &CompiledRoute)> = None;
    let mut allowed = Vec::new();
    for route in routes {
        let Some(rank) = route.rank(&parts) else {
            continue;
        };
        if route.method != method {
            allowed.push(route.method.clone());
            continue;
        }
        if best.as_ref().is_none_or(|(b, _)| rank > *b) {
            best = Some((rank, route));
        }
    }
    match best {
        Some((_, route)) => Matched::Route(route),
        None if !allowed.is_empty() => {
            allowed.sort();
            allowed.dedup();
            Matched::WrongMethod(allowed)
        }
        None => Matched::NoRoute,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(method: &str, path: &str) -> CompiledRoute {
        CompiledRoute::new(&Route {
            method: method.to_owned(),
            path: path.to_owned(),
            access: Access::Public,
            summary: String::new(),
        })
    }

    #[test]
    fn most_specific_route_wins() {
        let routes = vec![
            route("GET", "/flags/{key}"),
            route("GET", "/flags/evaluators"),
            route("POST", "/flags/ofrep/v1/evaluate/flags/{key}"),
            route("GET", "/files/{rest...}"),
        ];
        let pattern = |m: &str, p: &str| match find(&routes, m, p) {
            Matched::Route(r) => r.pattern.clone(),
            Matched::WrongMethod(a) => format!("405 {a:?}"),
            Matched::NoRoute => "404".to_owned(),
        };
        assert_eq!(pattern("GET", "/flags/evaluators"), "/flags/evaluators");
        assert_eq!(pattern("GET", "/flags/checkout"), "/flags/{key}");
        assert_eq!(pattern("HEAD", "/flags/checkout"), "/flags/{key}");
        assert_eq!(pattern("DELETE", "/flags/checkout"), "405 [\"GET\"]");
        assert_eq!(pattern("GET", "/flags/"), "404");
        assert_eq!(pattern("GET", "/flags/a/b"), "404");
        assert_eq!(pattern("GET", "/files/a/b/c"), "/files/{rest...}");
        assert_eq!(pattern("GET", "/files"), "404");
        assert_eq!(
            pattern("POST", "/flags/ofrep/v1/evaluate/flags/x"),
            "/flags/ofrep/v1/evaluate/flags/{key}"
        );
    }
}
