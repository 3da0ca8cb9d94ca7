//! JavaScript-style coercions that JsonLogic inherits: truthiness, loose equality, `ToNumber`,
//! `ToString` and relational comparison, over `serde_json::Value`.
//!
//! Where JavaScript compares arrays and objects by identity, we compare them structurally: a JSON
//! document has no identities, and `{"==": [[1], [1]]}` being `true` is what a flag author means.

use serde_json::{Number, Value};
use std::cmp::Ordering;

/// JsonLogic truthiness: JavaScript's, except that an empty array is falsy.
pub fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Value::String(s) => !s.is_empty(),
        Value::Array(items) => !items.is_empty(),
        Value::Object(_) => true,
    }
}

/// Turns an `f64` into a JSON value the way `JSON.stringify` would: integral values print without
/// a fraction, and `NaN` or infinities become `null`.
pub fn number(f: f64) -> Value {
    if !f.is_finite() {
        return Value::Null;
    }
    // 2^53: above it not every integer is exact, so keep the float.
    if f.fract() == 0.0 && f.abs() <= 9_007_199_254_740_992.0 {
        // The cast is exact: the value is integral and within i64's range.
        return Value::Number(Number::from(f as i64));
    }
    Number::from_f64(f).map_or(Value::Null, Value::Number)
}

/// JavaScript's `ToNumber`; `NaN` when there is no number.
pub fn to_number(value: &Value) -> f64 {
    match value {
        Value::Null => 0.0,
        Value::Bool(b) => f64::from(u8::from(*b)),
        Value::Number(n) => n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) => string_to_number(s),
        Value::Array(_) | Value::Object(_) => string_to_number(&to_string(value)),
    }
}

fn string_to_number(s: &str) -> f64 {
    let t = s.trim();
    if t.is_empty() {
        return 0.0;
    }
    match t {
        "Infinity" | "+Infinity" => return f64::INFINITY,
        "-Infinity" => return f64::NEG_INFINITY,
        _ => {}
    }
    if let Some(hex) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(hex, 16).map_or(f64::NAN, |n| n as f64);
    }
    // Rust also accepts "inf" and "nan", which JavaScript does not.
    if t.bytes()
        .any(|b| b.is_ascii_alphabetic() && b != b'e' && b != b'E')
    {
        return f64::NAN;
    }
    t.parse().unwrap_or(f64::NAN)
}

/// JavaScript's `parseFloat`: the longest numeric prefix, after leading white space.
pub fn parse_float(value: &Value) -> f64 {
    let text = match value {
        Value::Number(n) => return n.as_f64().unwrap_or(f64::NAN),
        Value::String(s) => s.trim_start().to_owned(),
        Value::Array(_) => to_string(value),
        _ => return f64::NAN,
    };
    if text.starts_with("Infinity") || text.starts_with("+Infinity") {
        return f64::INFINITY;
    }
    if text.starts_with("-Infinity") {
        return f64::NEG_INFINITY;
    }
    let bytes = text.as_bytes();
    let mut end = 0;
    let mut seen_digit = false;
    let mut seen_dot = false;
    let mut seen_exp = false;
    let mut best = None;
    while end < bytes.len() {
        let b = bytes[end];
        let sign_ok = end == 0 || matches!(bytes[end - 1], b'e' | b'E');
        match b {
            b'+' | b'-' if sign_ok => {}
            b'0'..=b'9' => {
                seen_digit = true;
                best = Some(end + 1);
            }
            b'.' if !seen_dot && !seen_exp => seen_dot = true,
            b'e' | b'E' if seen_digit && !seen_exp => seen_exp = true,
            _ => break,
        }
        end += 1;
    }
    best.and_then(|end| text[..end].parse().ok())
        .unwrap_or(f64::NAN)
}

/// JavaScript's `ToString`, as used by `cat`, `in` and `substr`.
pub fn to_string(value: &Value) -> String {
    match value {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => number_to_string(n),
        Value::String(s) => s.clone(),
        // Array.prototype.join: null elements print as nothing.
        Value::Array(items) => items.iter().map(to_string).collect::<Vec<_>>().join(","),
        Value::Object(_) => "[object Object]".to_owned(),
    }
}

/// How JavaScript prints a number: `1` rather than `1.0`.
pub fn number_to_string(n: &Number) -> String {
    if n.is_f64() {
        let f = n.as_f64().unwrap_or(f64::NAN);
        if f.fract() == 0.0 && f.abs() < 1e21 {
            return format!("{f:.0}");
        }
        return f.to_string();
    }
    n.to_string()
}

/// Strict equality (`===`): same type and same value; numbers compare by value.
pub fn strict_equals(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| strict_equals(a, b))
        }
        _ => a == b,
    }
}

/// Loose equality (`==`) with JavaScript's coercions between types.
pub fn loose_equals(a: &Value, b: &Value) -> bool {
    use Value::{Array, Bool, Null, Number as Num, Object, String as Str};
    match (a, b) {
        (Null, Null) => true,
        (Null, _) | (_, Null) => false,
        (Num(_), Num(_)) | (Str(_), Str(_)) | (Bool(_), Bool(_)) => strict_equals(a, b),
        (Array(_), Array(_)) | (Object(_), Object(_)) => strict_equals(a, b),
        (Num(_), Str(_)) | (Str(_), Num(_)) => to_number(a) == to_number(b),
        (Bool(_), _) => loose_equals(&number(to_number(a)), b),
        (_, Bool(_)) => loose_equals(a, &number(to_number(b))),
        (Array(_) | Object(_), _) => loose_equals(&Value::String(to_string(a)), b),
        (_, Array(_) | Object(_)) => loose_equals(a, &Value::String(to_string(b))),
    }
}

/// JavaScript's abstract relational comparison; `None` when either side is `NaN`.
pub fn compare(a: &Value, b: &Value) -> Option<Ordering> {
    let primitive = |v: &Value| match v {
        Value::Array(_) | Value::Object(_) => Value::String(to_string(v)),
        other => other.clone(),
    };
    let (a, b) = (primitive(a), primitive(b));
    if let (Value::String(x), Value::String(y)) = (&a, &b) {
        return Some(x.encode_utf16().cmp(y.encode_utf16()));
    }
    to_number(&a).partial_cmp(&to_number(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn to_number_follows_javascript() {
        let cases = [
            (json!(" 12 "), 12.0),
            (json!(""), 0.0),
            (json!(null), 0.0),
            (json!(true), 1.0),
            (json!([7]), 7.0),
            (json!("0x10"), 16.0),
            (json!("1e3"), 1000.0),
        ];
        for (input, expected) in cases {
            assert_eq!(to_number(&input), expected, "{input}");
        }
        for nan in [json!("inf"), json!("nan"), json!("12abc"), json!({})] {
            assert!(to_number(&nan).is_nan(), "{nan}");
        }
    }

    #[test]
    fn parse_float_takes_the_numeric_prefix() {
        assert_eq!(parse_float(&json!("12.5px")), 12.5);
        assert_eq!(parse_float(&json!("-3e2x")), -300.0);
        assert!(parse_float(&json!("px")).is_nan());
        assert!(parse_float(&json!(true)).is_nan());
    }

    #[test]
    fn numbers_print_like_javascript() {
        assert_eq!(to_string(&json!(1.0)), "1");
        assert_eq!(to_string(&json!(1.5)), "1.5");
        assert_eq!(to_string(&json!([1, null, "a"])), "1,,a");
        assert_eq!(number(3.0), json!(3));
        assert_eq!(number(f64::NAN), json!(null));
    }
}
