//! A small JSONPath subset for API check assertions: `$`, child names
//! (`.items`, `['a key']`, `["a key"]`), array indexes (`[0]`, `[-1]` from
//! the end) and wildcards (`.*`, `[*]`). Filters, slices and recursive
//! descent (`..`) are refused when the check is saved, with the reason.
//!
//! A path without a wildcard selects one value or nothing; a path with one
//! selects the list of every match (possibly empty).

use std::fmt;

use serde_json::Value;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(i64),
    Wildcard,
}

/// A parsed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonPath {
    text: String,
    segments: Vec<Segment>,
}

/// What a path selects in a document.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection<'a> {
    /// A path without a wildcard that leads nowhere.
    Missing,
    One(&'a Value),
    /// Every match of a path with a wildcard, in document order.
    Many(Vec<&'a Value>),
}

impl Selection<'_> {
    /// The selection as one JSON value (`Many` as an array); `None` when
    /// missing.
    pub fn value(&self) -> Option<Value> {
        match self {
            Selection::Missing => None,
            Selection::One(v) => Some((*v).clone()),
            Selection::Many(vs) => Some(Value::Array(vs.iter().map(|v| (*v).clone()).collect())),
        }
    }
}

impl JsonPath {
    /// Parses `text`; the error says what is wrong and where.
    pub fn parse(text: &str) -> Result<JsonPath, String> {
        let mut rest = text
            .strip_prefix('$')
            .ok_or_else(|| "a JSON path starts with $, as in $.data.items[0].id".to_owned())?;
        let mut segments = Vec::new();
        while !rest.is_empty() {
            let at = text.len() - rest.len();
            if rest.starts_with("..") {
                return Err(format!(
                    "recursive descent (..) at {at} is not supported: name each step"
                ));
            }
            if let Some(after) = rest.strip_prefix('.') {
                if let Some(after) = after.strip_prefix('*') {
                    segments.push(Segment::Wildcard);
                    rest = after;
                    continue;
                }
                let end = after.find(['.', '[']).unwrap_or(after.len());
                let name = &after[..end];
                if name.is_empty() {
                    return Err(format!("a name must follow the dot at {at}"));
                }
                segments.push(Segment::Key(name.to_owned()));
                rest = &after[end..];
            } else if let Some(after) = rest.strip_prefix('[') {
                let (segment, after) = bracket(after, at)?;
                segments.push(segment);
                rest = after;
            } else {
                return Err(format!(
                    "expected . or [ at {at}, found {:?}",
                    rest.chars().next().unwrap_or_default()
                ));
            }
        }
        Ok(JsonPath {
            text: text.to_owned(),
            segments,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    fn has_wildcard(&self) -> bool {
        self.segments.contains(&Segment::Wildcard)
    }

    /// Applies the path to `root`.
    pub fn select<'a>(&self, root: &'a Value) -> Selection<'a> {
        let mut current = vec![root];
        for segment in &self.segments {
            let mut next = Vec::new();
            for value in current {
                match (segment, value) {
                    (Segment::Key(key), Value::Object(map)) => next.extend(map.get(key)),
                    (Segment::Index(i), Value::Array(items)) => {
                        let index = if *i < 0 {
                            items.len().checked_sub(i.unsigned_abs() as usize)
                        } else {
                            Some(*i as usize)
                        };
                        next.extend(index.and_then(|i| items.get(i)));
                    }
                    (Segment::Wildcard, Value::Array(items)) => next.extend(items.iter()),
                    (Segment::Wildcard, Value::Object(map)) => next.extend(map.values()),
                    _ => {}
                }
            }
            current = next;
        }
        if self.has_wildcard() {
            Selection::Many(current)
        } else {
            current
                .into_iter()
                .next()
                .map_or(Selection::Missing, Selection::One)
        }
    }
}

/// One `[...]` step; `after` is the text after the `[`.
fn bracket(after: &str, at: usize) -> Result<(Segment, &str), String> {
    if let Some(quote) = after.chars().next().filter(|c| *c == '\'' || *c == '"') {
        let body = &after[1..];
        let mut name = String::new();
        let mut chars = body.char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, escaped)) => name.push(escaped),
                    None => break,
                },
                c if c == quote => {
                    let rest = body[i + 1..]
                        .strip_prefix(']')
                        .ok_or_else(|| format!("the quoted name at {at} must end with {quote}]"))?;
                    return Ok((Segment::Key(name), rest));
                }
                c => name.push(c),
            }
        }
        return Err(format!("the quoted name at {at} is not closed"));
    }
    let end = after
        .find(']')
        .ok_or_else(|| format!("the [ at {at} is not closed"))?;
    let inner = after[..end].trim();
    let rest = &after[end + 1..];
    if inner == "*" {
        return Ok((Segment::Wildcard, rest));
    }
    if inner.starts_with('?') || inner.contains(':') || inner.contains(',') {
        return Err(format!(
            "filters, slices and unions ([{inner}] at {at}) are not supported: use an index, a quoted name or *"
        ));
    }
    inner
        .parse::<i64>()
        .map(|i| (Segment::Index(i), rest))
        .map_err(|_| {
            format!("[{inner}] at {at} must be an index, a quoted name such as ['id'], or *")
        })
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc() -> Value {
        json!({
            "data": {"items": [{"id": "a1", "n": 1}, {"id": "b2", "n": 2}], "count": 2},
            "a key": {"x": true},
            "empty": [],
            "nothing": null
        })
    }

    #[test]
    fn selects_names_indexes_and_wildcards() {
        let doc = doc();
        let cases: &[(&str, Option<Value>)] = &[
            ("$", Some(doc.clone())),
            ("$.data.count", Some(json!(2))),
            ("$.data.items[0].id", Some(json!("a1"))),
            ("$.data.items[-1].id", Some(json!("b2"))),
            ("$['a key'].x", Some(json!(true))),
            ("$[\"a key\"][\"x\"]", Some(json!(true))),
            ("$.data.items[*].id", Some(json!(["a1", "b2"]))),
            ("$.data.items.*.n", Some(json!([1, 2]))),
            ("$.empty[*]", Some(json!([]))),
            ("$.nothing", Some(Value::Null)),
            ("$.data.items[2].id", None),
            ("$.data.items[-3]", None),
            ("$.missing.deeper", None),
            ("$.data.count.x", None),
        ];
        for (path, want) in cases {
            let parsed = JsonPath::parse(path).unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(parsed.select(&doc).value(), *want, "{path}");
        }
    }

    #[test]
    fn refuses_what_it_does_not_support() {
        let cases = [
            ("data.items", "starts with $"),
            ("$..id", "recursive descent"),
            ("$.data.items[?(@.n > 1)]", "filters"),
            ("$.data.items[0:2]", "slices"),
            ("$.data.items[0", "not closed"),
            ("$['id", "not closed"),
            ("$.", "must follow the dot"),
            ("$.a[x]", "must be an index"),
            ("$x", "expected . or ["),
        ];
        for (path, want) in cases {
            let err = JsonPath::parse(path).unwrap_err();
            assert!(err.contains(want), "{path}: {err}");
        }
    }
}
