//! Source patterns and destinations.
//!
//! A pattern is a path of `/`-separated segments, each one of:
//! - a literal (`blog`), matched exactly (case-sensitive, as received);
//! - `:name`, one whole segment, captured;
//! - `:name*` (zero or more segments) or `:name+` (one or more), the rest
//!   of the path, captured with its slashes; only as the last segment.
//!
//! Names are ASCII letters, digits and `_`, not starting with a digit, each
//! used once. A destination is a path (or, for a redirect, an `http://` or
//! `https://` URL) in which `:name` is replaced by that capture.

use crate::RuleError;

/// One compiled segment of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Literal(String),
    One(String),
    /// The rest of the path; `at_least_one` for `+`.
    Rest {
        name: String,
        at_least_one: bool,
    },
}

/// A compiled source pattern.
#[derive(Debug, Clone)]
pub struct Pattern {
    segments: Vec<Segment>,
}

/// What a match captured, by name.
pub type Captures = Vec<(String, String)>;

impl Pattern {
    pub fn parse(text: &str) -> Result<Pattern, RuleError> {
        let err = |at: usize, message: &str| RuleError::new("source", at, message);
        if !text.starts_with('/') {
            return Err(err(1, "must start with /"));
        }
        if text.len() > 1024 {
            return Err(err(1025, "must be at most 1024 characters"));
        }
        let mut segments = Vec::new();
        let mut names: Vec<String> = Vec::new();
        // Byte offset of each segment (after its `/`); 1-based columns.
        let mut offset = 1;
        let parts: Vec<&str> = text[1..].split('/').collect();
        for (i, part) in parts.iter().enumerate() {
            let column = offset + 1;
            offset += part.len() + 1;
            if part.is_empty() {
                if i + 1 == parts.len() && parts.len() > 1 {
                    return Err(err(column - 1, "must not end with /"));
                }
                if parts.len() == 1 {
                    break; // the root, `/`
                }
                return Err(err(column, "an empty segment (//)"));
            }
            let Some(name) = part.strip_prefix(':') else {
                if let Some(bad) =
                    part.find(|c: char| c == ':' || c == '*' || c.is_control() || c == ' ')
                {
                    return Err(err(
                        column + bad,
                        "a literal segment cannot hold `:`, `*`, spaces or control characters; a capture is a whole segment such as :name",
                    ));
                }
                segments.push(Segment::Literal((*part).to_owned()));
                continue;
            };
            let (name, rest) = match name.strip_suffix('*') {
                Some(n) => (n, Some(false)),
                None => match name.strip_suffix('+') {
                    Some(n) => (n, Some(true)),
                    None => (name, None),
                },
            };
            if !valid_name(name) {
                return Err(err(
                    column + 1,
                    "a capture's name is letters, digits and _, not starting with a digit",
                ));
            }
            if names.iter().any(|n| n == name) {
                return Err(err(column + 1, "this name is captured twice"));
            }
            names.push(name.to_owned());
            match rest {
                Some(at_least_one) => {
                    if i + 1 != parts.len() {
                        return Err(err(
                            column,
                            "a capture of the rest (:name* or :name+) must be the last segment",
                        ));
                    }
                    segments.push(Segment::Rest {
                        name: name.to_owned(),
                        at_least_one,
                    });
                }
                None => segments.push(Segment::One(name.to_owned())),
            }
        }
        Ok(Pattern { segments })
    }

    /// The names this pattern captures.
    pub fn names(&self) -> Vec<&str> {
        self.segments
            .iter()
            .filter_map(|s| match s {
                Segment::One(n) | Segment::Rest { name: n, .. } => Some(n.as_str()),
                Segment::Literal(_) => None,
            })
            .collect()
    }

    /// The captures if `path` (without its query) matches.
    pub fn matches(&self, path: &str) -> Option<Captures> {
        let rest = path.strip_prefix('/')?;
        let parts: Vec<&str> = if rest.is_empty() {
            Vec::new()
        } else {
            rest.split('/').collect()
        };
        let mut captures = Vec::new();
        for (i, segment) in self.segments.iter().enumerate() {
            match segment {
                Segment::Literal(l) => {
                    if parts.get(i) != Some(&l.as_str()) {
                        return None;
                    }
                }
                Segment::One(name) => {
                    let part = parts.get(i).filter(|p| !p.is_empty())?;
                    captures.push((name.clone(), (*part).to_owned()));
                }
                Segment::Rest { name, at_least_one } => {
                    let tail = parts.get(i..).unwrap_or_default().join("/");
                    if *at_least_one && tail.is_empty() {
                        return None;
                    }
                    captures.push((name.clone(), tail));
                    return Some(captures);
                }
            }
        }
        (parts.len() == self.segments.len()).then_some(captures)
    }
}

fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A destination with `:name` references, checked against the names a
/// source captures.
#[derive(Debug, Clone)]
pub struct Destination {
    text: String,
}

impl Destination {
    /// `absolute_ok`: a redirect may go to an `http(s)://` URL.
    pub fn parse(text: &str, names: &[&str], absolute_ok: bool) -> Result<Destination, RuleError> {
        let err = |at: usize, message: &str| RuleError::new("destination", at, message);
        let absolute = text.starts_with("https://") || text.starts_with("http://");
        if !(text.starts_with('/') || absolute_ok && absolute) {
            return Err(err(
                1,
                if absolute_ok {
                    "must start with / or http(s)://"
                } else {
                    "must start with /"
                },
            ));
        }
        if text.len() > 2048 {
            return Err(err(2049, "must be at most 2048 characters"));
        }
        if let Some(bad) = text.find(|c: char| c.is_control() || c == ' ') {
            return Err(err(bad + 1, "must not hold spaces or control characters"));
        }
        for (at, name) in references(text) {
            if !names.contains(&name) {
                return Err(err(at + 1, "names a capture the source does not make"));
            }
        }
        Ok(Destination {
            text: text.to_owned(),
        })
    }

    /// The destination with each reference replaced by its capture.
    pub fn fill(&self, captures: &Captures) -> String {
        let mut out = String::with_capacity(self.text.len());
        let mut last = 0;
        for (at, name) in references(&self.text) {
            out.push_str(&self.text[last..at]);
            let value = captures
                .iter()
                .find(|(n, _)| n == name)
                .map_or("", |(_, v)| v.as_str());
            out.push_str(value);
            last = at + 1 + name.len();
        }
        out.push_str(&self.text[last..]);
        out
    }
}

/// `(byte offset of ':', name)` of each `:name` in `text`; a `:` not
/// followed by a name (as in `https:`) is text.
fn references(text: &str) -> Vec<(usize, &str)> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b':' {
            let start = i + 1;
            let mut end = start;
            while end < bytes.len() && (bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_') {
                end += 1;
            }
            if end > start && !bytes[start].is_ascii_digit() {
                found.push((i, &text[start..end]));
                i = end;
                continue;
            }
        }
        i += 1;
    }
    found
}
