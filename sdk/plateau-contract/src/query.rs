//! Query strings and percent-decoding.
//!
//! `Query::parse("limit=10&tag=a%20b&tag=c")` decodes `+` as a space and
//! `%XX` escapes; a malformed escape is kept literally rather than refused,
//! as browsers and most servers do.

use std::str::FromStr;

use crate::error::ApiError;

/// The decoded parameters of a query string, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    /// Decodes `raw` (without the leading `?`). A parameter without `=` has
    /// an empty value; empty pieces (`a=1&&b=2`) are skipped.
    pub fn parse(raw: &str) -> Self {
        let pairs = raw
            .split('&')
            .filter(|piece| !piece.is_empty())
            .map(|piece| {
                let (name, value) = piece.split_once('=').unwrap_or((piece, ""));
                (decode_form(name), decode_form(value))
            })
            .collect();
        Query { pairs }
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name`, in order.
    pub fn get_all(&self, name: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    pub fn contains(&self, name: &str) -> bool {
        self.pairs.iter().any(|(n, _)| n == name)
    }

    /// All parameters, in order.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The first value of `name` parsed as `T`; `Ok(None)` when absent and
    /// 400 `bad_request` naming the parameter when it does not parse.
    ///
    /// ```
    /// # use plateau_contract::Query;
    /// let q = Query::parse("days=7&all=yes");
    /// assert_eq!(q.parse_as::<u32>("days").unwrap(), Some(7));
    /// assert_eq!(q.parse_as::<u32>("weeks").unwrap(), None);
    /// assert!(q.parse_as::<bool>("all").is_err());
    /// ```
    pub fn parse_as<T: FromStr>(&self, name: &str) -> Result<Option<T>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(raw) => raw.parse().map(Some).map_err(|_| {
                ApiError::bad_request(format!(
                    "query parameter {name} has the invalid value {raw:?}: expected {}",
                    type_hint::<T>()
                ))
            }),
        }
    }
}

fn type_hint<T>() -> &'static str {
    let name = std::any::type_name::<T>();
    match name {
        "bool" => "true or false",
        "u8" | "u16" | "u32" | "u64" | "u128" | "usize" => "a non-negative integer",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "an integer",
        "f32" | "f64" => "a number",
        _ => "a valid value",
    }
}

/// Decodes a query-string component: `+` is a space, `%XX` a byte.
pub(crate) fn decode_form(raw: &str) -> String {
    if raw.contains('+') {
        percent_decode(&raw.replace('+', " "))
    } else {
        percent_decode(raw)
    }
}

/// Decodes `%XX` escapes (a path segment: `+` stays `+`). Bytes that do not
/// form UTF-8 become U+FFFD.
pub fn percent_decode(raw: &str) -> String {
    if !raw.contains('%') {
        return raw.to_owned();
    }
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let escaped = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .filter(|hex| hex.iter().all(u8::is_ascii_hexdigit))
            .and_then(|hex| std::str::from_utf8(hex).ok())
            .and_then(|hex| u8::from_str_radix(hex, 16).ok());
        match escaped {
            Some(byte) => {
                out.push(byte);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Encodes `raw` for a query-string value or a path segment: everything but
/// unreserved characters (`A-Z a-z 0-9 - . _ ~`) is escaped.
pub fn percent_encode(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    for byte in raw.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
