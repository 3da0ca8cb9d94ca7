//! References between keys: `${NAME}` in a value stands for the resolved
//! value of key `NAME` of the same environment, resolved at read time.
//! Anything else (`${` not followed by a key name and `}`) is literal.
//! Pure: the graph of references is checked when a change is written (a
//! missing key or a cycle refuses it, naming the key), and resolution
//! expands values the caller hands in.

use std::collections::{BTreeMap, BTreeSet};

use crate::input::is_key_name;

/// The longest resolved value, in bytes (an app's variable's limit).
pub const MAX_RESOLVED: usize = 32 * 1024;

/// Why references do not resolve; each names the key at fault.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RefError {
    /// `key` refers to `missing`, which the environment does not have.
    Missing { key: String, missing: String },
    /// `path` goes round: its first and last names are the same key.
    Cycle { path: Vec<String> },
    /// `key` resolves to more than [`MAX_RESOLVED`] bytes.
    TooLong { key: String },
}

impl RefError {
    /// The key a problem body names.
    pub fn key(&self) -> &str {
        match self {
            RefError::Missing { key, .. } | RefError::TooLong { key } => key,
            RefError::Cycle { path } => &path[0],
        }
    }

    pub fn message(&self) -> String {
        match self {
            RefError::Missing { key, missing } => format!(
                "{key} refers to ${{{missing}}}, which this environment does not have: set {missing} first"
            ),
            RefError::Cycle { path } => format!(
                "{} refers to itself: {}; break the cycle",
                path[0],
                path.join(" -> ")
            ),
            RefError::TooLong { key } => {
                format!("{key} resolves to more than {MAX_RESOLVED} bytes")
            }
        }
    }
}

/// One piece of a value: literal text or a reference.
enum Piece<'a> {
    Text(&'a str),
    Ref(&'a str),
}

fn pieces(value: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        match after.find('}') {
            Some(end) if is_key_name(&after[..end]) => {
                if start > 0 {
                    out.push(Piece::Text(&rest[..start]));
                }
                out.push(Piece::Ref(&after[..end]));
                rest = &after[end + 1..];
            }
            _ => {
                out.push(Piece::Text(&rest[..start + 2]));
                rest = after;
            }
        }
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest));
    }
    out
}

/// The names `value` refers to, each once, in order of first use.
pub fn references(value: &str) -> Vec<String> {
    let mut seen = BTreeSet::new();
    let mut names = Vec::new();
    for piece in pieces(value) {
        if let Piece::Ref(name) = piece
            && seen.insert(name)
        {
            names.push(name.to_owned());
        }
    }
    names
}

/// Checks a whole environment's graph (key → the names it refers to):
/// every reference names a key, and none goes round.
pub fn check(graph: &BTreeMap<String, Vec<String>>) -> Result<(), RefError> {
    let mut done = BTreeSet::new();
    for key in graph.keys() {
        let mut path = Vec::new();
        visit(graph, key, &mut path, &mut done)?;
    }
    Ok(())
}

fn visit(
    graph: &BTreeMap<String, Vec<String>>,
    key: &str,
    path: &mut Vec<String>,
    done: &mut BTreeSet<String>,
) -> Result<(), RefError> {
    if done.contains(key) {
        return Ok(());
    }
    if let Some(at) = path.iter().position(|k| k == key) {
        let mut cycle: Vec<String> = path[at..].to_vec();
        cycle.push(key.to_owned());
        return Err(RefError::Cycle { path: cycle });
    }
    let Some(refs) = graph.get(key) else {
        return Err(RefError::Missing {
            key: path.last().cloned().unwrap_or_default(),
            missing: key.to_owned(),
        });
    };
    path.push(key.to_owned());
    for r in refs {
        visit(graph, r, path, done)?;
    }
    path.pop();
    done.insert(key.to_owned());
    Ok(())
}

/// The keys `key` needs to resolve, itself included: everything reachable
/// through references.
pub fn closure(graph: &BTreeMap<String, Vec<String>>, key: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![key.to_owned()];
    while let Some(k) = stack.pop() {
        if seen.insert(k.clone())
            && let Some(refs) = graph.get(&k)
        {
            stack.extend(refs.iter().cloned());
        }
    }
    seen
}

/// Resolves `key` given the raw values of its [`closure`].
pub fn resolve(raw: &BTreeMap<String, String>, key: &str) -> Result<String, RefError> {
    let mut memo = BTreeMap::new();
    let mut path = Vec::new();
    expand(raw, key, &mut memo, &mut path)
}

/// Resolves every key of `raw` (a whole environment).
pub fn resolve_all(raw: &BTreeMap<String, String>) -> Result<BTreeMap<String, String>, RefError> {
    let mut memo = BTreeMap::new();
    for key in raw.keys() {
        let mut path = Vec::new();
        expand(raw, key, &mut memo, &mut path)?;
    }
    Ok(memo)
}

fn expand(
    raw: &BTreeMap<String, String>,
    key: &str,
    memo: &mut BTreeMap<String, String>,
    path: &mut Vec<String>,
) -> Result<String, RefError> {
    if let Some(done) = memo.get(key) {
        return Ok(done.clone());
    }
    if let Some(at) = path.iter().position(|k| k == key) {
        let mut cycle: Vec<String> = path[at..].to_vec();
        cycle.push(key.to_owned());
        return Err(RefError::Cycle { path: cycle });
    }
    let Some(value) = raw.get(key) else {
        return Err(RefError::Missing {
            key: path.last().cloned().unwrap_or_else(|| key.to_owned()),
            missing: key.to_owned(),
        });
    };
    path.push(key.to_owned());
    let mut out = String::new();
    for piece in pieces(value) {
        match piece {
            Piece::Text(t) => out.push_str(t),
            Piece::Ref(name) => out.push_str(&expand(raw, name, memo, path)?),
        }
        if out.len() > MAX_RESOLVED {
            return Err(RefError::TooLong {
                key: key.to_owned(),
            });
        }
    }
    path.pop();
    memo.insert(key.to_owned(), out.clone());
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn graph(raw: &BTreeMap<String, String>) -> BTreeMap<String, Vec<String>> {
        raw.iter()
            .map(|(k, v)| (k.clone(), references(v)))
            .collect()
    }

    #[test]
    fn references_are_key_names_in_braces() {
        assert_eq!(references("a${HOST}:${PORT}/${HOST}"), ["HOST", "PORT"]);
        assert!(references("${not a key} $HOME ${} ${1X}").is_empty());
        assert_eq!(references("${${A}}"), ["A"]);
    }

    #[test]
    fn values_resolve_through_chains() {
        let r = raw(&[
            ("HOST", "db.internal"),
            ("PORT", "5432"),
            ("ADDR", "${HOST}:${PORT}"),
            ("URL", "postgres://${ADDR}/app ${literal"),
        ]);
        check(&graph(&r)).unwrap();
        assert_eq!(
            resolve(&r, "URL").unwrap(),
            "postgres://db.internal:5432/app ${literal"
        );
        assert_eq!(resolve_all(&r).unwrap()["ADDR"], "db.internal:5432");
    }

    #[test]
    fn a_cycle_names_its_path() {
        let r = raw(&[("A", "${B}"), ("B", "x${C}"), ("C", "${A}"), ("D", "ok")]);
        let err = check(&graph(&r)).unwrap_err();
        assert_eq!(
            err,
            RefError::Cycle {
                path: vec!["A".into(), "B".into(), "C".into(), "A".into()]
            }
        );
        assert!(
            err.message().contains("A -> B -> C -> A"),
            "{}",
            err.message()
        );
        assert!(matches!(resolve(&r, "B"), Err(RefError::Cycle { .. })));
        let own = raw(&[("SELF", "${SELF}")]);
        assert_eq!(check(&graph(&own)).unwrap_err().key(), "SELF");
    }

    #[test]
    fn a_missing_key_names_who_refers_to_it() {
        let r = raw(&[("A", "${NOPE}")]);
        let err = check(&graph(&r)).unwrap_err();
        assert_eq!(err.key(), "A");
        assert!(err.message().contains("${NOPE}"));
    }

    #[test]
    fn expansion_is_bounded() {
        let mut pairs = vec![("K0".to_owned(), "x".repeat(1024))];
        for i in 1..8 {
            pairs.push((format!("K{i}"), format!("${{K{}}}${{K{}}}", i - 1, i - 1)));
        }
        let r: BTreeMap<String, String> = pairs.into_iter().collect();
        check(&graph(&r)).unwrap();
        assert!(matches!(resolve(&r, "K7"), Err(RefError::TooLong { .. })));
        assert_eq!(closure(&graph(&r), "K2").len(), 3);
    }
}
