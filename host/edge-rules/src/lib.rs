//! An app's edge rules (issue 30): redirects, rewrites and response
//! headers, each matched by a source pattern ([`pattern`]) on the
//! request's path.
//!
//! **Order.** Enabled rules apply in their list order, by kind:
//! 1. the first `redirect` whose source matches answers at once (the
//!    request's query is kept unless the destination has its own);
//! 2. otherwise the first `rewrite` whose source matches changes the path
//!    the app sees (once: a rewritten path is not matched again);
//! 3. every `header` rule whose source matches the request's original
//!    path sets or removes its header on the app's answer, in order.
//!
//! Rules are compiled once ([`RuleSet::compile`]); a bad one is refused
//! with the field and the 1-based column of the problem.

mod pattern;

use serde::{Deserialize, Serialize};

pub use pattern::{Captures, Destination, Pattern};

/// What a rule does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Action {
    /// Answer with `status` and `Location: destination`.
    Redirect { destination: String, status: u16 },
    /// Serve `destination` from the app instead.
    Rewrite { destination: String },
    /// Set (`value`) or remove (no `value`) a response header.
    Header {
        header: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        value: Option<String>,
    },
}

/// A rule as stored and sent over the API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleSpec {
    pub source: String,
    #[serde(flatten)]
    pub action: Action,
}

/// Why a rule is refused: the field, and the 1-based column in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}, column {column}: {message}")]
pub struct RuleError {
    pub field: &'static str,
    pub column: usize,
    pub message: String,
}

impl RuleError {
    pub(crate) fn new(field: &'static str, column: usize, message: &str) -> RuleError {
        RuleError {
            field,
            column,
            message: message.to_owned(),
        }
    }
}

/// Response headers a rule may not touch: the edge and HTTP own them.
const RESERVED_HEADERS: &[&str] = &[
    "connection",
    "content-length",
    "transfer-encoding",
    "upgrade",
    "keep-alive",
    "te",
    "trailer",
    "proxy-connection",
    "host",
    "date",
];

#[derive(Debug, Clone)]
struct Compiled {
    source: Pattern,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Redirect { to: Destination, status: u16 },
    Rewrite { to: Destination },
    Header { name: String, value: Option<String> },
}

/// What the edge does with a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    Redirect {
        status: u16,
        location: String,
    },
    /// Forward with this path and query instead.
    Rewrite {
        path_and_query: String,
    },
    Pass,
}

/// A response header change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderChange {
    Set(String, String),
    Remove(String),
}

/// An app's enabled rules, compiled.
#[derive(Debug, Clone, Default)]
pub struct RuleSet {
    rules: Vec<Compiled>,
}

impl RuleSet {
    /// Compiles `rules`; the first bad one is refused with its index.
    pub fn compile(rules: &[RuleSpec]) -> Result<RuleSet, (usize, RuleError)> {
        let compiled = rules
            .iter()
            .enumerate()
            .map(|(i, r)| compile(r).map_err(|e| (i, e)))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RuleSet { rules: compiled })
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// What to do with a request for `path` and `query` (without `?`).
    pub fn on_request(&self, path: &str, query: Option<&str>) -> Decision {
        let keep_query = |to: String| match query {
            Some(q) if !q.is_empty() && !to.contains('?') => format!("{to}?{q}"),
            _ => to,
        };
        for rule in &self.rules {
            if let Kind::Redirect { to, status } = &rule.kind
                && let Some(captures) = rule.source.matches(path)
            {
                return Decision::Redirect {
                    status: *status,
                    location: keep_query(to.fill(&captures)),
                };
            }
        }
        for rule in &self.rules {
            if let Kind::Rewrite { to } = &rule.kind
                && let Some(captures) = rule.source.matches(path)
            {
                return Decision::Rewrite {
                    path_and_query: keep_query(to.fill(&captures)),
                };
            }
        }
        Decision::Pass
    }

    /// The header changes for the answer to a request for `path` (the
    /// original path, before any rewrite), in order.
    pub fn on_response(&self, path: &str) -> Vec<HeaderChange> {
        self.rules
            .iter()
            .filter_map(|rule| match &rule.kind {
                Kind::Header { name, value } if rule.source.matches(path).is_some() => {
                    Some(match value {
                        Some(v) => HeaderChange::Set(name.clone(), v.clone()),
                        None => HeaderChange::Remove(name.clone()),
                    })
                }
                _ => None,
            })
            .collect()
    }
}

fn compile(rule: &RuleSpec) -> Result<Compiled, RuleError> {
    let source = Pattern::parse(&rule.source)?;
    let names = source.names();
    let kind = match &rule.action {
        Action::Redirect {
            destination,
            status,
        } => {
            if ![301, 302, 307, 308].contains(status) {
                return Err(RuleError::new("status", 1, "must be 301, 302, 307 or 308"));
            }
            Kind::Redirect {
                to: Destination::parse(destination, &names, true)?,
                status: *status,
            }
        }
        Action::Rewrite { destination } => Kind::Rewrite {
            to: Destination::parse(destination, &names, false)?,
        },
        Action::Header { header, value } => {
            let name = header.to_ascii_lowercase();
            if let Some(bad) =
                header.find(|c: char| !(c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)))
            {
                return Err(RuleError::new(
                    "header",
                    bad + 1,
                    "a header name is letters, digits and !#$%&'*+-.^_`|~",
                ));
            }
            if header.is_empty() || header.len() > 256 {
                return Err(RuleError::new("header", 1, "must be 1 to 256 characters"));
            }
            if RESERVED_HEADERS.contains(&name.as_str()) {
                return Err(RuleError::new(
                    "header",
                    1,
                    "the edge sets this header itself",
                ));
            }
            if let Some(v) = value
                && let Some(bad) = v.find(|c: char| c.is_control() && c != '\t')
            {
                return Err(RuleError::new(
                    "value",
                    bad + 1,
                    "must not hold control characters",
                ));
            }
            if value.as_ref().is_some_and(|v| v.len() > 4096) {
                return Err(RuleError::new(
                    "value",
                    4097,
                    "must be at most 4096 characters",
                ));
            }
            Kind::Header {
                name,
                value: value.clone(),
            }
        }
    };
    Ok(Compiled { source, kind })
}

#[cfg(test)]
mod tests;
