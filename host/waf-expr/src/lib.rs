//! The firewall rules' expression language, in the style of Cloudflare's
//! wirefilter: a rule is an expression over the head of a request,
//! `http.request.uri.path contains "/admin" and not ip.src in {10.0.0.0/8}`,
//! parsed ([`parse`], with the `nom` parser combinators) and type-checked
//! ([`compile`]) once into a [`Program`], which then answers
//! [`Program::matches`] for each request without allocating for plain
//! field comparisons.
//!
//! The grammar (keywords are lowercase, whitespace is free):
//!
//! ```text
//! expr    = and ("or" | "||") and ...
//! and     = not ("and" | "&&") not ...
//! not     = ("not" | "!") not | "(" expr ")" | test
//! test    = value op literal | value "in" "{" literal ... "}"
//! value   = field | field "[" string "]" | function "(" value ")"
//! op      = eq ne contains matches lt le gt ge, or == != ~ < <= > >=
//! literal = "a string" | 42 | 192.0.2.1 | 10.0.0.0/8
//! ```
//!
//! Strings are double-quoted; `\"` and `\\` are the only escapes, any other
//! backslash stays as written, so a regular expression reads as is
//! (`"^/wp-(admin|login)\.php"`). `matches` uses the `regex` crate, whose
//! matching time is linear in the input; a pattern is compiled once, with
//! a size limit. The fields and functions are listed in [`FIELDS`] and
//! [`FUNCTIONS`]; a header, a query argument or a cookie that the request
//! does not carry reads as the empty string.
//!
//! Errors are [`SyntaxError`]s pointing at a line and column (1-based,
//! in characters) of the source.
//!
//! **Invariant:** pure (no I/O), so it builds for `wasm32-wasip2` and an
//! edge-filter component links it as the host does.

pub mod bots;
mod compile;
mod eval;
pub mod managed;
#[cfg(test)]
mod managed_tests;
mod parse;
#[cfg(test)]
mod tests;

use std::fmt;

pub use compile::Program;
pub use eval::Request;

/// The longest expression, in bytes.
pub const MAX_LEN: usize = 4096;
/// The deepest nesting of parentheses and `not`s.
pub const MAX_DEPTH: usize = 32;

/// The fields a rule can read, with what they hold.
pub const FIELDS: &[(&str, &str)] = &[
    ("http.request.method", "the method, GET, POST, ..."),
    (
        "http.request.uri",
        "the path and the query string, as sent (`/a?b=c`)",
    ),
    ("http.request.uri.path", "the path, percent-encoded as sent"),
    (
        "http.request.uri.query",
        "the query string without `?`, as sent",
    ),
    (
        "http.host",
        "the Host the request named, lowercase, no port",
    ),
    ("http.user_agent", "the User-Agent header"),
    ("http.referer", "the Referer header"),
    ("http.cookie", "the Cookie header, whole"),
    (
        "ip.src",
        "the client's IP address (compare with eq, ne, in)",
    ),
    (
        "http.request.headers[\"name\"]",
        "a request header (values of a repeated header joined by `, `)",
    ),
    (
        "http.request.uri.args[\"name\"]",
        "a query argument, decoded (the first of that name)",
    ),
    ("http.request.cookies[\"name\"]", "a cookie's value"),
];

/// The functions, with what they do.
pub const FUNCTIONS: &[(&str, &str)] = &[
    ("lower", "a string in lowercase"),
    (
        "url_decode",
        "a string with `%XX` escapes and `+` decoded (invalid UTF-8 replaced)",
    ),
    ("len", "the length of a string in bytes, a number"),
];

/// Where and why an expression does not compile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters.
    pub column: usize,
    pub message: String,
}

impl fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "line {}, column {}: {}",
            self.line, self.column, self.message
        )
    }
}

impl std::error::Error for SyntaxError {}

impl SyntaxError {
    /// The error at byte `offset` of `source`.
    pub(crate) fn at(source: &str, offset: usize, message: impl Into<String>) -> SyntaxError {
        let offset = offset.min(source.len());
        let before = &source[..floor_char_boundary(source, offset)];
        let line = before.matches('\n').count() + 1;
        let column = before
            .rsplit_once('\n')
            .map_or(before, |(_, last)| last)
            .chars()
            .count()
            + 1;
        SyntaxError {
            line,
            column,
            message: message.into(),
        }
    }
}

fn floor_char_boundary(s: &str, mut at: usize) -> usize {
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Parses and type-checks `source` into a program.
pub fn compile(source: &str) -> Result<Program, SyntaxError> {
    let ast = parse::parse(source)?;
    compile::compile(source, &ast)
}
