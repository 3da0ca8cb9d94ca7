//! JsonLogic with flagd's extensions: rules are compiled once from JSON (so an unknown operator
//! or a dangling `$ref` is found when a flag is saved) and then applied to evaluation contexts.
//!
//! **Architecture Invariant:** applying a compiled rule never fails and never panics. Like the
//! JsonLogic reference and flagd, an operator given arguments it cannot use returns `null` (or
//! `false`), and the caller decides what `null` means.

mod coerce;
mod eval;
mod fractional;
mod murmur3;
mod semver;

use crate::path::JsonPath;
use serde_json::Value;
use std::collections::BTreeMap;

pub use coerce::{loose_equals, strict_equals, truthy};
pub use fractional::bucket;
pub use murmur3::murmur3_x86_32;
pub use semver::{SemVer, sem_ver};

/// A compiled JsonLogic rule.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule(Node);

#[derive(Debug, Clone, PartialEq)]
enum Node {
    Literal(Value),
    Array(Vec<Node>),
    Op(Op, Vec<Node>),
}

/// A rule that could not be compiled, with the path of the offending part inside the rule
/// (`$` is the rule itself).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} (at {path})")]
pub struct CompileError {
    pub path: String,
    pub message: String,
}

/// Where `{"$ref": "name"}` may point while compiling.
#[derive(Debug, Clone, Copy)]
pub enum Refs<'a> {
    /// The shared evaluators of the flag set, already compiled.
    To(&'a BTreeMap<String, Rule>),
    /// Compiling a shared evaluator itself: flagd does not resolve nested references.
    Forbidden,
}

macro_rules! operators {
    ($($variant:ident = $($name:literal)|+),* $(,)?) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        enum Op { $($variant),* }

        impl Op {
            fn from_name(name: &str) -> Option<Op> {
                match name {
                    $($($name)|+ => Some(Op::$variant),)*
                    _ => None,
                }
            }
        }

        /// Every operator name a targeting rule may use.
        pub const OPERATORS: &[&str] = &[$($($name),+),*];
    };
}

operators! {
    Var = "var", Missing = "missing", MissingSome = "missing_some",
    If = "if" | "?:", Eq = "==", StrictEq = "===", Ne = "!=", StrictNe = "!==",
    Not = "!", NotNot = "!!", Or = "or", And = "and",
    Gt = ">", Ge = ">=", Lt = "<", Le = "<=", Max = "max", Min = "min",
    Add = "+", Sub = "-", Mul = "*", Div = "/", Mod = "%",
    Map = "map", Filter = "filter", Reduce = "reduce", All = "all", None = "none", Some = "some",
    Merge = "merge", In = "in", Cat = "cat", Substr = "substr", Log = "log",
    Fractional = "fractional", SemVer = "sem_ver", StartsWith = "starts_with", EndsWith = "ends_with",
}

impl Rule {
    /// Compiles a rule that may not use `$ref`.
    pub fn compile(logic: &Value) -> Result<Rule, CompileError> {
        Rule::compile_with(logic, Refs::To(&BTreeMap::new()))
    }

    /// Compiles a rule, replacing each `{"$ref": "name"}` by the shared evaluator of that name.
    pub fn compile_with(logic: &Value, refs: Refs<'_>) -> Result<Rule, CompileError> {
        compile(logic, refs, &JsonPath::Root).map(Rule)
    }

    /// Applies the rule to `data`, the evaluation context.
    pub fn apply(&self, data: &Value) -> Value {
        eval::apply(&self.0, data)
    }
}

fn compile(logic: &Value, refs: Refs<'_>, at: &JsonPath<'_>) -> Result<Node, CompileError> {
    match logic {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, item)| compile(item, refs, &at.index(i)))
            .collect::<Result<_, _>>()
            .map(Node::Array),
        // As in JsonLogic, only an object with exactly one key is an operation; any other
        // object is data.
        Value::Object(map) if map.len() == 1 => {
            let (name, args) = map.iter().next().expect("one entry");
            let args_at = at.key(name);
            if name == "$ref" {
                return resolve_ref(args, refs, &args_at);
            }
            let Some(op) = Op::from_name(name) else {
                return Err(CompileError {
                    path: at.to_string(),
                    message: format!("unknown operator \"{name}\""),
                });
            };
            // `{"var": "x"}` is shorthand for `{"var": ["x"]}`.
            let args = match args {
                Value::Array(items) => items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| compile(item, refs, &args_at.index(i)))
                    .collect::<Result<_, _>>()?,
                single => vec![compile(single, refs, &args_at)?],
            };
            Ok(Node::Op(op, args))
        }
        other => Ok(Node::Literal(other.clone())),
    }
}

fn resolve_ref(name: &Value, refs: Refs<'_>, at: &JsonPath<'_>) -> Result<Node, CompileError> {
    let error = |message: String| CompileError {
        path: at.to_string(),
        message,
    };
    let Value::String(name) = name else {
        return Err(error(
            "$ref must be the name of a shared evaluator".to_owned(),
        ));
    };
    match refs {
        Refs::Forbidden => Err(error(format!(
            "shared evaluators cannot reference other evaluators (\"{name}\")"
        ))),
        Refs::To(evaluators) => match evaluators.get(name) {
            Some(rule) => Ok(rule.0.clone()),
            None if evaluators.is_empty() => Err(error(format!(
                "unknown evaluator \"{name}\": no $evaluators are defined"
            ))),
            None => Err(error(format!(
                "unknown evaluator \"{name}\"; defined evaluators: {}",
                evaluators.keys().cloned().collect::<Vec<_>>().join(", ")
            ))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_operators_are_rejected_with_their_path() {
        let err = Rule::compile(&json!({"if": [{"invalid": [1]}, "a", "b"]})).unwrap_err();
        assert_eq!(err.path, "$.if[0]");
        assert_eq!(err.message, "unknown operator \"invalid\"");
    }

    #[test]
    fn objects_with_several_keys_are_data() {
        let rule = Rule::compile(&json!({"a": 1, "b": 2})).unwrap();
        assert_eq!(rule.apply(&json!({})), json!({"a": 1, "b": 2}));
    }

    #[test]
    fn refs_are_replaced_by_the_shared_rule() {
        let shared = BTreeMap::from([("yes".to_owned(), Rule::compile(&json!(true)).unwrap())]);
        let rule = Rule::compile_with(&json!({"if": [{"$ref": "yes"}, 1, 2]}), Refs::To(&shared));
        assert_eq!(rule.unwrap().apply(&json!({})), json!(1));
        let err = Rule::compile_with(&json!({"$ref": "no"}), Refs::To(&shared)).unwrap_err();
        assert_eq!(
            err.message,
            "unknown evaluator \"no\"; defined evaluators: yes"
        );
    }
}
