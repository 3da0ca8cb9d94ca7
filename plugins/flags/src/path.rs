//! JSON paths (`$.flags["new-banner"].targeting.if[0]`) that name the field an error is about.
//!
//! A [`JsonPath`] is built on the stack while a document is walked and rendered only when an
//! error names it, so a definition that is valid costs no string building.

use std::fmt;

/// A path into a JSON document: the root, or a parent and an object key or array index.
#[derive(Debug, Clone, Copy)]
pub enum JsonPath<'a> {
    /// The document itself: `$`.
    Root,
    Key(&'a JsonPath<'a>, &'a str),
    Index(&'a JsonPath<'a>, usize),
}

impl JsonPath<'_> {
    /// The path of `key` in the object at this path.
    pub fn key<'b>(&'b self, key: &'b str) -> JsonPath<'b> {
        JsonPath::Key(self, key)
    }

    /// The path of item `index` in the array at this path.
    pub fn index(&self, index: usize) -> JsonPath<'_> {
        JsonPath::Index(self, index)
    }
}

impl fmt::Display for JsonPath<'_> {
    /// Object keys are `.key` for plain identifiers and `["key"]` otherwise; indexes `[3]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            JsonPath::Root => f.write_str("$"),
            JsonPath::Key(parent, key) => {
                parent.fmt(f)?;
                let plain = !key.is_empty()
                    && !key.starts_with(|c: char| c.is_ascii_digit())
                    && key
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
                if plain {
                    write!(f, ".{key}")
                } else {
                    // A JSON string literal is a valid, unambiguous bracket key.
                    write!(f, "[{}]", serde_json::Value::String((*key).to_owned()))
                }
            }
            JsonPath::Index(parent, index) => {
                parent.fmt(f)?;
                write!(f, "[{index}]")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::JsonPath;

    #[test]
    fn keys_are_quoted_only_when_needed() {
        let root = JsonPath::Root;
        assert_eq!(root.key("flags").to_string(), "$.flags");
        assert_eq!(root.key("$evaluators").to_string(), "$.$evaluators");
        let flags = root.key("flags");
        assert_eq!(
            flags.key("new-banner").to_string(),
            r#"$.flags["new-banner"]"#
        );
        assert_eq!(root.key("9lives").to_string(), r#"$["9lives"]"#);
        assert_eq!(root.key("if").index(2).to_string(), "$.if[2]");
    }
}
