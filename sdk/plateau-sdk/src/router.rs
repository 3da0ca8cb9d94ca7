//! The router: method and path pattern to handler, and the route list of the
//! plugin's self-description, from one table so the two never drift.
//!
//! Patterns are paths below the API base whose segments are literals,
//! `{name}` (one non-empty segment) or, as the last segment, `{name...}`
//! (one or more segments). When several patterns match a path, the most
//! specific wins: segment by segment from the left, a literal beats a
//! parameter, which beats a rest parameter. A path no pattern matches is a
//! 404 problem; a path matched only by routes of other methods is a 405
//! problem with an `Allow` header.

use std::ops::Index;

use crate::description::{Access, RouteInfo};
use crate::error::ApiError;
use crate::http::{Method, Request, Response};
use crate::query::percent_decode;

/// A route handler.
pub type Handler = fn(&Request, &Params) -> Result<Response, ApiError>;

/// The values of a matched pattern's parameters, percent-decoded.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    pairs: Vec<(String, String)>,
}

impl Params {
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }
}

impl Index<&str> for Params {
    type Output = str;

    /// Panics if the pattern has no parameter `name`: a bug in the route
    /// table, not a client error.
    fn index(&self, name: &str) -> &str {
        self.get(name)
            .unwrap_or_else(|| panic!("the matched route has no parameter {name}"))
    }
}

/// One segment of a pattern, borrowed from its text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment<'a> {
    Literal(&'a str),
    Param(&'a str),
    Rest(&'a str),
}

impl Segment<'_> {
    /// Lower is more specific.
    fn rank(&self) -> u8 {
        match self {
            Segment::Literal(_) => 0,
            Segment::Param(_) => 1,
            Segment::Rest(_) => 2,
        }
    }
}

#[derive(Debug, Clone)]
struct Pattern<'a> {
    segments: Vec<Segment<'a>>,
}

impl<'a> Pattern<'a> {
    /// Panics on a malformed pattern: route tables are written by the
    /// plugin's author and a typo must fail the first test, not a request.
    fn parse(text: &'a str) -> Pattern<'a> {
        let bad = |why: &str| -> ! { panic!("route pattern {text:?} is invalid: {why}") };
        let Some(body) = text.strip_prefix('/') else {
            bad("it must start with /")
        };
        let pieces: Vec<&str> = body.split('/').collect();
        let mut segments = Vec::with_capacity(pieces.len());
        for (i, piece) in pieces.iter().enumerate() {
            let segment = match piece.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                Some(inner) => match inner.strip_suffix("...") {
                    Some(name) if i + 1 == pieces.len() => Segment::Rest(name),
                    Some(_) => bad("only the last segment may be {name...}"),
                    None => Segment::Param(inner),
                },
                None if piece.is_empty() => bad("it has an empty segment"),
                None if piece.contains(['{', '}']) => bad("braces must enclose a whole segment"),
                None => Segment::Literal(piece),
            };
            if let Segment::Param(name) | Segment::Rest(name) = &segment {
                let valid = !name.is_empty()
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
                if !valid {
                    bad("parameter names are letters, digits, - and _");
                }
                let taken = segments
                    .iter()
                    .any(|s| matches!(s, Segment::Param(n) | Segment::Rest(n) if n == name));
                if taken {
                    bad("a parameter name is used twice");
                }
            }
            segments.push(segment);
        }
        Pattern { segments }
    }

    fn matches(&self, path: &[&str]) -> Option<Params> {
        let mut pairs = Vec::new();
        for (i, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Literal(lit) => (path.get(i)? == lit).then_some(())?,
                Segment::Param(name) => {
                    let value = path.get(i).filter(|v| !v.is_empty())?;
                    pairs.push((name.to_string(), percent_decode(value)));
                }
                Segment::Rest(name) => {
                    let rest = path
                        .get(i..)
                        .filter(|r| !r.is_empty() && r.iter().all(|s| !s.is_empty()))?;
                    let value: Vec<String> = rest.iter().map(|s| percent_decode(s)).collect();
                    pairs.push((name.to_string(), value.join("/")));
                    return Some(Params { pairs });
                }
            }
        }
        (path.len() == self.segments.len()).then_some(Params { pairs })
    }

    /// Whether the two patterns are the same but for parameter names, so
    /// they match the same paths.
    fn same_shape(&self, other: &Pattern<'_>) -> bool {
        self.segments.len() == other.segments.len()
            && self
                .segments
                .iter()
                .zip(&other.segments)
                .all(|(a, b)| match (a, b) {
                    (Segment::Literal(a), Segment::Literal(b)) => a == b,
                    _ => a.rank() == b.rank(),
                })
    }

    fn ranks(&self) -> Vec<u8> {
        self.segments.iter().map(Segment::rank).collect()
    }
}

#[derive(Debug, Clone)]
struct Entry {
    method: Method,
    /// As written; parsed when matched (see [`Router::route`]).
    pattern: String,
    access: Access,
    summary: String,
    handler: Handler,
}

/// A matched route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched<'a> {
    pub method: Method,
    /// The pattern as written: `/notes/{id}`.
    pub pattern: &'a str,
    pub access: &'a Access,
    pub params: Params,
}

/// The route table of a plugin.
///
/// Each route gets its access rule and summary from the calls that follow
/// it; a route without one is [`Access::Authenticated`].
///
/// ```
/// # use plateau_sdk::{Router, Request, Params, Response, ApiError};
/// fn get_note(_req: &Request, p: &Params) -> Result<Response, ApiError> {
///     Err(ApiError::not_found(format!("note {} does not exist", &p["id"])))
/// }
/// let router = Router::new()
///     .get("/notes/{id}", get_note).scope("notes:read").summary("Get a note");
/// assert_eq!(router.routes()[0].path, "/notes/{id}");
/// ```
#[derive(Debug, Clone, Default)]
pub struct Router {
    entries: Vec<Entry>,
}

impl Router {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a route. Panics on a malformed pattern or a duplicate route.
    ///
    /// A component builds its router in every fresh instance, so there the
    /// table is checked once, when the host loads the component and asks
    /// for its routes ([`Router::routes`]): a bad table fails the load.
    /// Native builds check each route as it is added, so a typo fails the
    /// first unit test.
    pub fn route(mut self, method: Method, pattern: &str, handler: Handler) -> Self {
        self.entries.push(Entry {
            method,
            pattern: pattern.to_owned(),
            access: Access::Authenticated,
            summary: String::new(),
            handler,
        });
        if cfg!(not(target_arch = "wasm32")) {
            self.check(self.entries.len() - 1);
        }
        self
    }

    /// Panics if route `i` has a malformed pattern or repeats an earlier
    /// route.
    fn check(&self, i: usize) {
        let entry = &self.entries[i];
        let pattern = Pattern::parse(&entry.pattern);
        let duplicate = self.entries[..i]
            .iter()
            .any(|e| e.method == entry.method && Pattern::parse(&e.pattern).same_shape(&pattern));
        assert!(
            !duplicate,
            "route {} {} is declared twice",
            entry.method, entry.pattern
        );
    }

    pub fn get(self, pattern: &str, handler: Handler) -> Self {
        self.route(Method::Get, pattern, handler)
    }

    pub fn post(self, pattern: &str, handler: Handler) -> Self {
        self.route(Method::Post, pattern, handler)
    }

    pub fn put(self, pattern: &str, handler: Handler) -> Self {
        self.route(Method::Put, pattern, handler)
    }

    pub fn patch(self, pattern: &str, handler: Handler) -> Self {
        self.route(Method::Patch, pattern, handler)
    }

    pub fn delete(self, pattern: &str, handler: Handler) -> Self {
        self.route(Method::Delete, pattern, handler)
    }

    /// The last route needs a token carrying `scope`.
    pub fn scope(self, scope: &str) -> Self {
        self.access(Access::Scope(scope.to_owned()))
    }

    /// The last route is open to anyone, without a token.
    pub fn public(self) -> Self {
        self.access(Access::Public)
    }

    /// The last route needs any valid token of the organisation (default).
    pub fn authenticated(self) -> Self {
        self.access(Access::Authenticated)
    }

    /// Sets the last route's access rule.
    pub fn access(mut self, access: Access) -> Self {
        self.last("access").access = access;
        self
    }

    /// Sets the last route's one-line summary.
    pub fn summary(mut self, summary: &str) -> Self {
        self.last("summary").summary = summary.to_owned();
        self
    }

    fn last(&mut self, what: &str) -> &mut Entry {
        self.entries
            .last_mut()
            .unwrap_or_else(|| panic!("Router::{what} needs a route before it"))
    }

    /// The routes for [`crate::Description`], in declaration order. Panics
    /// on a malformed pattern or a duplicate route.
    pub fn routes(&self) -> Vec<RouteInfo> {
        (0..self.entries.len()).for_each(|i| self.check(i));
        self.entries
            .iter()
            .map(|e| RouteInfo {
                method: e.method,
                path: e.pattern.clone(),
                access: e.access.clone(),
                summary: e.summary.clone(),
            })
            .collect()
    }

    /// Finds the route for `method` and `path`, or the 404 or 405 problem.
    pub fn recognize(&self, method: &str, path: &str) -> Result<Matched<'_>, ApiError> {
        self.find(method, path).map(|(entry, params)| Matched {
            method: entry.method,
            pattern: &entry.pattern,
            access: &entry.access,
            params,
        })
    }

    fn find(&self, method: &str, path: &str) -> Result<(&Entry, Params), ApiError> {
        self.find_hinted(method, path, "")
    }

    /// [`Router::find`], trying first the route named by `hint`: the
    /// pattern the host matched the request to, from this router's own
    /// route list, so a request routed by the host is matched once.
    fn find_hinted(
        &self,
        method: &str,
        path: &str,
        hint: &str,
    ) -> Result<(&Entry, Params), ApiError> {
        let segments: Vec<&str> = path.strip_prefix('/').unwrap_or(path).split('/').collect();
        let hinted = self
            .entries
            .iter()
            .filter(|e| !hint.is_empty() && e.pattern == hint && e.method.as_str() == method)
            .find_map(|e| Some((e, Pattern::parse(&e.pattern).matches(&segments)?)));
        if let Some(found) = hinted {
            return Ok(found);
        }
        let candidates: Vec<(&Entry, Pattern, Params)> = self
            .entries
            .iter()
            .filter_map(|e| {
                let pattern = Pattern::parse(&e.pattern);
                let params = pattern.matches(&segments)?;
                Some((e, pattern, params))
            })
            .collect();
        if candidates.is_empty() {
            return Err(ApiError::not_found(format!(
                "no route matches {path}: check the path"
            )));
        }
        let best = candidates
            .iter()
            .filter(|(e, _, _)| e.method.as_str() == method)
            .min_by_key(|(_, pattern, _)| pattern.ranks());
        match best {
            Some((entry, _, params)) => Ok((entry, params.clone())),
            None => {
                let mut allowed: Vec<Method> =
                    candidates.iter().map(|(e, _, _)| e.method).collect();
                allowed.sort();
                allowed.dedup();
                Err(ApiError::method_not_allowed(method, &allowed))
            }
        }
    }

    /// Checks the route's access rule against the caller (the host already
    /// did; this keeps a misrouted request from reaching a handler), then
    /// runs its handler.
    pub fn dispatch(&self, req: &Request) -> Result<Response, ApiError> {
        let (entry, params) = self.find_hinted(&req.method, &req.path, &req.route)?;
        match &entry.access {
            Access::Public => {}
            Access::Authenticated => {
                req.caller.organization()?;
            }
            Access::Scope(scope) => {
                req.caller.organization()?;
                req.caller.require_scope(scope)?;
            }
        }
        (entry.handler)(req, &params)
    }

    /// [`Router::dispatch`] with errors turned into problem responses.
    pub fn handle(&self, req: &Request) -> Response {
        self.dispatch(req).unwrap_or_else(ApiError::into_response)
    }
}
