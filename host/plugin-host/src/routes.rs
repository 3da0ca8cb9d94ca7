//! Matching request paths against the route patterns of a plugin's
//! self-description, with the contract's matcher
//! ([`plateau_contract::route`]), the same the SDK's router runs inside the
//! plugin: `/flags/{key}`, a last segment `{rest...}` that takes the rest of
//! the path, and the most specific route wins.

use plateau_contract::route::{self, Found};
use plateau_plugin_runtime::{Access, Route};

/// A route of a plugin version, as the dispatcher needs it.
#[derive(Clone, Debug)]
pub struct CompiledRoute {
    pub method: String,
    pub pattern: String,
    pub access: Access,
    pub summary: String,
}

impl CompiledRoute {
    pub fn new(route: &Route) -> Self {
        CompiledRoute {
            method: route.method.to_ascii_uppercase(),
            pattern: route.path.clone(),
            access: route.access.clone(),
            summary: route.summary.clone(),
        }
    }
}

/// The outcome of matching a request against a version's routes.
pub enum Matched<'a> {
    Route(&'a CompiledRoute),
    /// The path exists with other methods: the `Allow` header.
    WrongMethod(Vec<String>),
    NoRoute,
}

/// The route of `method` (`HEAD` is served by `GET`) for `path`.
pub fn find<'a>(routes: &'a [CompiledRoute], method: &str, path: &str) -> Matched<'a> {
    let method = if method == "HEAD" { "GET" } else { method };
    let segments = route::path_segments(path);
    match route::find(routes, method, &segments, |r| {
        (r.method.as_str(), r.pattern.as_str())
    }) {
        Found::Route { route, .. } => Matched::Route(route),
        Found::WrongMethod(allowed) => {
            Matched::WrongMethod(allowed.iter().map(|m| m.as_str().to_owned()).collect())
        }
        Found::NoRoute => Matched::NoRoute,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_is_served_by_get() {
        let routes = [CompiledRoute::new(&Route {
            method: "get".to_owned(),
            path: "/flags/{key}".to_owned(),
            access: Access::Public,
            summary: String::new(),
        })];
        let outcome = |m: &str, p: &str| match find(&routes, m, p) {
            Matched::Route(r) => r.pattern.clone(),
            Matched::WrongMethod(a) => format!("405 {}", a.join(", ")),
            Matched::NoRoute => "404".to_owned(),
        };
        assert_eq!(outcome("HEAD", "/flags/checkout"), "/flags/{key}");
        assert_eq!(outcome("GET", "/flags/checkout"), "/flags/{key}");
        assert_eq!(outcome("DELETE", "/flags/checkout"), "405 GET");
        assert_eq!(outcome("GET", "/flags"), "404");
    }
}
