//! `${{ kind.name.attribute }}` expressions in a manifest's strings
//! (Railway's reference variables): a [`Template`] is text and
//! references, resolved once every item it names exists.

use std::collections::BTreeMap;

use crate::model::{Key, Kind};

/// One reference: the item and the attribute read from it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ref {
    pub key: Key,
    pub attribute: String,
}

impl std::fmt::Display for Ref {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.key, self.attribute)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Part {
    Text(String),
    Ref(Ref),
}

/// A string with references in it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Template {
    parts: Vec<Part>,
}

/// The attribute values of the items a template may read, by reference
/// (`databases.main.uri`).
pub type Values = BTreeMap<String, String>;

impl Template {
    /// Parses `text`; the error says what is wrong with the first bad
    /// expression.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(start) = rest.find("${{") {
            if start > 0 {
                parts.push(Part::Text(rest[..start].to_owned()));
            }
            let after = &rest[start + 3..];
            let end = after
                .find("}}")
                .ok_or("an expression opened with ${{ is not closed with }}")?;
            parts.push(Part::Ref(parse_ref(after[..end].trim())?));
            rest = &after[end + 2..];
        }
        if !rest.is_empty() {
            parts.push(Part::Text(rest.to_owned()));
        }
        Ok(Template { parts })
    }

    /// The references, in order.
    pub fn refs(&self) -> impl Iterator<Item = &Ref> {
        self.parts.iter().filter_map(|p| match p {
            Part::Ref(r) => Some(r),
            Part::Text(_) => None,
        })
    }

    /// The value with every reference replaced, or `None` while one of
    /// them is not known yet (an item still to be created).
    pub fn resolve(&self, values: &Values) -> Option<String> {
        let mut out = String::new();
        for p in &self.parts {
            match p {
                Part::Text(t) => out.push_str(t),
                Part::Ref(r) => out.push_str(values.get(&r.to_string())?),
            }
        }
        Some(out)
    }
}

/// `kind.name.attribute`, each part checked.
fn parse_ref(expr: &str) -> Result<Ref, String> {
    let bad = || {
        format!(
            "${{{{ {expr} }}}} must read kind.name.attribute, kind one of databases, redis, apps"
        )
    };
    let mut it = expr.split('.');
    let (Some(section), Some(name), Some(attribute), None) =
        (it.next(), it.next(), it.next(), it.next())
    else {
        return Err(bad());
    };
    let kind = Kind::from_section(section).ok_or_else(bad)?;
    if !is_item_name(name) {
        return Err(bad());
    }
    if !kind.attributes().contains(&attribute) {
        return Err(format!(
            "{section} have no attribute {attribute:?}; use one of {}",
            kind.attributes().join(", ")
        ));
    }
    Ok(Ref {
        key: Key {
            kind,
            name: name.to_owned(),
        },
        attribute: attribute.to_owned(),
    })
}

/// An item's name: a letter or digit, then letters, digits, `-` or `_`,
/// at most 63 characters, so that references can name it.
pub fn is_item_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphanumeric())
        && s.len() <= 63
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_mix_text_and_references() {
        let t =
            Template::parse("postgres: ${{databases.main.uri}}?x=${{ redis.c-1.port }}").unwrap();
        let refs: Vec<String> = t.refs().map(ToString::to_string).collect();
        assert_eq!(refs, ["databases.main.uri", "redis.c-1.port"]);
        let mut values = Values::new();
        values.insert("databases.main.uri".into(), "pg://a".into());
        assert_eq!(t.resolve(&values), None);
        values.insert("redis.c-1.port".into(), "6379".into());
        assert_eq!(t.resolve(&values).unwrap(), "postgres: pg://a?x=6379");
        assert_eq!(
            Template::parse("plain").unwrap().resolve(&values).unwrap(),
            "plain"
        );
    }

    #[test]
    fn bad_expressions_are_refused() {
        for (text, needle) in [
            ("${{ databases.main.uri", "not closed"),
            ("${{ queues.main.uri }}", "kind.name.attribute"),
            ("${{ databases.main }}", "kind.name.attribute"),
            ("${{ databases.main.pass }}", "no attribute \"pass\""),
            ("${{ apps.my app.url }}", "kind.name.attribute"),
        ] {
            let e = Template::parse(text).unwrap_err();
            assert!(e.contains(needle), "{text}: {e}");
        }
    }
}
