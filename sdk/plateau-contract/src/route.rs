//! Route patterns: the grammar a plugin writes its routes in, and the one
//! matcher that the host (to authorize and route a request) and the SDK's
//! router (to pick the handler) both run, so a path is routed the same on
//! both sides of the WIT line.
//!
//! A pattern is a path below the API base whose segments are literals
//! (letters, digits, `-`, `_`, `.`, `~`), `{name}` (one non-empty segment)
//! or, as the last segment, `{name...}` (one or more segments). Parameter
//! names are lowercase letters, digits and `_`, not starting with a digit,
//! and unique within a pattern. A pattern may end with `/` after its first
//! segment (Sentry's ingest paths do, `/api/{project}/envelope/`): it then
//! matches only paths with that trailing slash, as `/flags` matches only
//! paths without. When several patterns match a path, the
//! most specific wins: segment by segment from the left, a literal beats a
//! parameter, which beats a rest parameter.

use std::cmp::Ordering;

use crate::http::Method;

/// One segment of a pattern, borrowed from its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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

/// A route pattern, borrowed from its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pattern<'a> {
    segments: Vec<Segment<'a>>,
}

/// The path segments a parameter matched, not yet percent-decoded: one
/// segment for `{name}`, one or more for `{name...}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capture<'a, 'p> {
    pub name: &'a str,
    pub segments: &'p [&'p str],
}

/// `[A-Za-z0-9-_.~]+`: the unreserved characters of a URI.
pub fn is_literal_segment(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '~'))
}

/// `[a-z_][a-z0-9_]*`
fn is_param_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// The segments of a request path below the API base: `/a/b` is `["a", "b"]`.
pub fn path_segments(path: &str) -> Vec<&str> {
    path.strip_prefix('/').unwrap_or(path).split('/').collect()
}

impl<'a> Pattern<'a> {
    /// Parses `text` against the grammar; the error says what is wrong.
    pub fn parse(text: &'a str) -> Result<Pattern<'a>, String> {
        let body = text
            .strip_prefix('/')
            .ok_or_else(|| "it must start with /".to_owned())?;
        let pieces: Vec<&str> = body.split('/').collect();
        let mut segments = Vec::with_capacity(pieces.len());
        for (i, piece) in pieces.iter().enumerate() {
            let segment = match piece.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                Some(inner) => match inner.strip_suffix("...") {
                    Some(name) if i + 1 == pieces.len() => Segment::Rest(name),
                    Some(_) => return Err("only the last segment may be {name...}".to_owned()),
                    None => Segment::Param(inner),
                },
                None if is_literal_segment(piece) => Segment::Literal(piece),
                // A trailing slash: the empty last segment, matched literally.
                None if piece.is_empty() && i > 0 && i + 1 == pieces.len() => {
                    Segment::Literal(piece)
                }
                None => {
                    return Err(format!(
                        "segment `{piece}` must be letters, digits, -, _, . or ~, or a {{name}}"
                    ));
                }
            };
            if let Segment::Param(name) | Segment::Rest(name) = segment {
                if !is_param_name(name) {
                    return Err(format!(
                        "parameter `{name}` must be lowercase letters, digits and _, not starting with a digit"
                    ));
                }
                let taken = segments
                    .iter()
                    .any(|s| matches!(s, Segment::Param(n) | Segment::Rest(n) if *n == name));
                if taken {
                    return Err(format!("parameter `{name}` is used twice"));
                }
            }
            segments.push(segment);
        }
        Ok(Pattern { segments })
    }

    /// Splits `text` without checking the grammar: for route tables that
    /// were checked when they were declared, on the path of every request.
    pub fn split(text: &'a str) -> Pattern<'a> {
        let body = text.strip_prefix('/').unwrap_or(text);
        let segments = body
            .split('/')
            .map(
                |piece| match piece.strip_prefix('{').and_then(|p| p.strip_suffix('}')) {
                    Some(inner) => match inner.strip_suffix("...") {
                        Some(name) => Segment::Rest(name),
                        None => Segment::Param(inner),
                    },
                    None => Segment::Literal(piece),
                },
            )
            .collect();
        Pattern { segments }
    }

    /// The parameters, when the pattern matches `path` (see
    /// [`path_segments`]).
    pub fn captures<'p>(&self, path: &'p [&'p str]) -> Option<Vec<Capture<'a, 'p>>> {
        let mut captures = Vec::new();
        for (i, segment) in self.segments.iter().enumerate() {
            match *segment {
                Segment::Literal(lit) => (*path.get(i)? == lit).then_some(())?,
                Segment::Param(name) => {
                    let one = path.get(i..=i).filter(|s| !s[0].is_empty())?;
                    captures.push(Capture {
                        name,
                        segments: one,
                    });
                }
                Segment::Rest(name) => {
                    let rest = path
                        .get(i..)
                        .filter(|r| !r.is_empty() && r.iter().all(|s| !s.is_empty()))?;
                    captures.push(Capture {
                        name,
                        segments: rest,
                    });
                    return Some(captures);
                }
            }
        }
        (path.len() == self.segments.len()).then_some(captures)
    }

    /// Whether the two patterns are the same but for parameter names, so
    /// they match the same paths.
    pub fn same_shape(&self, other: &Pattern<'_>) -> bool {
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

    /// `Less` when `self` is more specific than `other`.
    fn specificity(&self, other: &Pattern<'_>) -> Ordering {
        let self_ranks = self.segments.iter().map(Segment::rank);
        self_ranks.cmp(other.segments.iter().map(Segment::rank))
    }
}

/// The outcome of matching a request against a route table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found<'r, 'p, R> {
    /// The most specific route of the request's method.
    Route {
        route: &'r R,
        captures: Vec<Capture<'r, 'p>>,
    },
    /// The path exists with these other methods, in [`Method`] order: the
    /// `Allow` header of a 405.
    WrongMethod(Vec<Method>),
    NoRoute,
}

/// Finds the route of `method` for `path` (see [`path_segments`]) in
/// `routes`, whose method and pattern `key` gives.
pub fn find<'r, 'p, R>(
    routes: &'r [R],
    method: &str,
    path: &'p [&'p str],
    key: impl Fn(&'r R) -> (&'r str, &'r str),
) -> Found<'r, 'p, R> {
    let mut best: Option<(&'r R, Pattern<'r>, Vec<Capture<'r, 'p>>)> = None;
    let mut allowed: Vec<Method> = Vec::new();
    for route in routes {
        let (route_method, text) = key(route);
        let pattern = Pattern::split(text);
        let Some(captures) = pattern.captures(path) else {
            continue;
        };
        if route_method != method {
            allowed.extend(Method::parse(route_method));
            continue;
        }
        let better = best
            .as_ref()
            .is_none_or(|(_, b, _)| pattern.specificity(b) == Ordering::Less);
        if better {
            best = Some((route, pattern, captures));
        }
    }
    match best {
        Some((route, _, captures)) => Found::Route { route, captures },
        None if !allowed.is_empty() => {
            allowed.sort();
            allowed.dedup();
            Found::WrongMethod(allowed)
        }
        None => Found::NoRoute,
    }
}

#[cfg(test)]
mod tests;
