//! JSON paths (`$.flags["new-banner"].targeting.if[0]`) that name the field an error is about.

/// Appends an object key: `.key` for plain identifiers, `["key"]` otherwise.
pub fn key(parent: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && !key.starts_with(|c: char| c.is_ascii_digit())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if plain {
        format!("{parent}.{key}")
    } else {
        // A JSON string literal is a valid, unambiguous bracket key.
        let quoted = serde_json::Value::String(key.to_owned()).to_string();
        format!("{parent}[{quoted}]")
    }
}

/// Appends an array index: `[3]`.
pub fn index(parent: &str, index: usize) -> String {
    format!("{parent}[{index}]")
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_are_quoted_only_when_needed() {
        assert_eq!(super::key("$", "flags"), "$.flags");
        assert_eq!(super::key("$", "$evaluators"), "$.$evaluators");
        assert_eq!(
            super::key("$.flags", "new-banner"),
            r#"$.flags["new-banner"]"#
        );
        assert_eq!(super::key("$", "9lives"), r#"$["9lives"]"#);
        assert_eq!(super::index("$.if", 2), "$.if[2]");
    }
}
