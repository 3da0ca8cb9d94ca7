//! Applies a compiled rule to data, following the JsonLogic reference implementation operation
//! by operation (`jsonlogic.js`), plus flagd's `fractional`, `sem_ver`, `starts_with` and
//! `ends_with`.

use super::coerce::{compare, loose_equals, number, parse_float, strict_equals, to_number};
use super::coerce::{to_string, truthy};
use super::{Node, Op, fractional, semver};
use serde_json::{Map, Value};
use std::cmp::Ordering;

pub(super) fn apply(node: &Node, data: &Value) -> Value {
    Scope { data, root: data }.eval(node)
}

/// `data` is what `var` reads (an array item inside `map`); `root` is the evaluation context,
/// where `fractional` finds `targetingKey` and `$flagd.flagKey`.
#[derive(Clone, Copy)]
struct Scope<'a> {
    data: &'a Value,
    root: &'a Value,
}

impl Scope<'_> {
    fn eval(&self, node: &Node) -> Value {
        match node {
            Node::Literal(value) => value.clone(),
            Node::Array(items) => Value::Array(items.iter().map(|n| self.eval(n)).collect()),
            Node::Op(op, args) => self.op(*op, args),
        }
    }

    fn op(&self, op: Op, args: &[Node]) -> Value {
        match op {
            Op::If => {
                let mut i = 0;
                while i + 1 < args.len() {
                    if truthy(&self.eval(&args[i])) {
                        return self.eval(&args[i + 1]);
                    }
                    i += 2;
                }
                args.get(i).map_or(Value::Null, |last| self.eval(last))
            }
            Op::Or | Op::And => {
                let mut last = Value::Null;
                for arg in args {
                    last = self.eval(arg);
                    // `or` stops at the first truthy value, `and` at the first falsy one.
                    if truthy(&last) == (op == Op::Or) {
                        break;
                    }
                }
                last
            }
            Op::Map => Value::Array(self.each(args).into_iter().map(|(_, r)| r).collect()),
            Op::Filter => Value::Array(self.filter(args)),
            Op::All => {
                let items = self.each(args);
                !items.is_empty() && items.iter().all(|(_, result)| truthy(result))
            }
            .into(),
            Op::None => self.filter(args).is_empty().into(),
            Op::Some => (!self.filter(args).is_empty()).into(),
            Op::Reduce => self.reduce(args),
            _ => {
                let values: Vec<Value> = args.iter().map(|arg| self.eval(arg)).collect();
                self.eager(op, &values)
            }
        }
    }

    /// The items of the array that `args[0]` evaluates to, each with `args[1]` applied to it.
    fn each(&self, args: &[Node]) -> Vec<(Value, Value)> {
        let items = match args.first().map(|n| self.eval(n)) {
            Some(Value::Array(items)) => items,
            _ => Vec::new(),
        };
        items
            .into_iter()
            .map(|item| {
                let result = args.get(1).map_or(Value::Null, |logic| {
                    Scope {
                        data: &item,
                        root: self.root,
                    }
                    .eval(logic)
                });
                (item, result)
            })
            .collect()
    }

    fn filter(&self, args: &[Node]) -> Vec<Value> {
        self.each(args)
            .into_iter()
            .filter(|(_, keep)| truthy(keep))
            .map(|(item, _)| item)
            .collect()
    }

    fn reduce(&self, args: &[Node]) -> Value {
        let initial = args.get(2).map_or(Value::Null, |n| self.eval(n));
        let Some(Value::Array(items)) = args.first().map(|n| self.eval(n)) else {
            return initial;
        };
        items.into_iter().fold(initial, |accumulator, current| {
            let mut data = Map::new();
            data.insert("current".to_owned(), current);
            data.insert("accumulator".to_owned(), accumulator);
            let data = Value::Object(data);
            args.get(1).map_or(Value::Null, |logic| {
                Scope {
                    data: &data,
                    root: self.root,
                }
                .eval(logic)
            })
        })
    }

    fn eager(&self, op: Op, v: &[Value]) -> Value {
        let arg = |i: usize| v.get(i).unwrap_or(&Value::Null);
        match op {
            Op::Var => self.var(arg(0), arg(1)),
            Op::Missing => Value::Array(self.missing(v)),
            Op::MissingSome => {
                let keys = match arg(1) {
                    Value::Array(keys) => keys.as_slice(),
                    _ => &[],
                };
                let missing = self.missing(&[Value::Array(keys.to_vec())]);
                let found = (keys.len() - missing.len()) as f64;
                if found >= to_number(arg(0)) {
                    Value::Array(Vec::new())
                } else {
                    Value::Array(missing)
                }
            }
            Op::Eq => loose_equals(arg(0), arg(1)).into(),
            Op::Ne => (!loose_equals(arg(0), arg(1))).into(),
            Op::StrictEq => strict_equals(arg(0), arg(1)).into(),
            Op::StrictNe => (!strict_equals(arg(0), arg(1))).into(),
            Op::Not => (!truthy(arg(0))).into(),
            Op::NotNot => truthy(arg(0)).into(),
            Op::Gt => is(compare(arg(0), arg(1)), &[Ordering::Greater]),
            Op::Ge => is(
                compare(arg(0), arg(1)),
                &[Ordering::Greater, Ordering::Equal],
            ),
            Op::Lt | Op::Le => {
                let allowed: &[Ordering] = if op == Op::Lt {
                    &[Ordering::Less]
                } else {
                    &[Ordering::Less, Ordering::Equal]
                };
                let first = is(compare(arg(0), arg(1)), allowed);
                // The three-argument form tests that the middle value lies between the others.
                if v.len() < 3 || first == Value::Bool(false) {
                    return first;
                }
                is(compare(arg(1), arg(2)), allowed)
            }
            Op::Max | Op::Min => {
                let numbers: Vec<f64> = v.iter().map(to_number).collect();
                // Math.max is NaN as soon as one argument is not a number; we say null.
                if numbers.is_empty() || numbers.iter().any(|n| n.is_nan()) {
                    return Value::Null;
                }
                let pick = if op == Op::Max { f64::max } else { f64::min };
                number(numbers.into_iter().reduce(pick).unwrap_or(f64::NAN))
            }
            Op::Add => number(v.iter().map(parse_float).sum()),
            Op::Mul => match v.iter().map(parse_float).reduce(|a, b| a * b) {
                Some(product) => number(product),
                None => Value::Null,
            },
            Op::Sub if v.len() == 1 => number(-to_number(arg(0))),
            Op::Sub => number(to_number(arg(0)) - to_number(arg(1))),
            Op::Div => number(to_number(arg(0)) / to_number(arg(1))),
            Op::Mod => number(to_number(arg(0)) % to_number(arg(1))),
            Op::Merge => Value::Array(
                v.iter()
                    .flat_map(|item| match item {
                        Value::Array(items) => items.clone(),
                        other => vec![other.clone()],
                    })
                    .collect(),
            ),
            Op::In => match arg(1) {
                Value::String(haystack) if !haystack.is_empty() => {
                    haystack.contains(&to_string(arg(0))).into()
                }
                Value::Array(items) => items.iter().any(|item| strict_equals(item, arg(0))).into(),
                _ => false.into(),
            },
            Op::Cat => Value::String(v.iter().map(to_string).collect()),
            Op::Substr => substr(arg(0), arg(1), v.get(2)),
            Op::Log => arg(0).clone(),
            Op::Fractional => fractional::evaluate(v, self.root),
            Op::SemVer => semver::evaluate(v),
            Op::StartsWith | Op::EndsWith => match v {
                [Value::String(value), Value::String(affix)] => if op == Op::StartsWith {
                    value.starts_with(affix.as_str())
                } else {
                    value.ends_with(affix.as_str())
                }
                .into(),
                // flagd returns null, not false, so that targeting falls back to the default.
                _ => Value::Null,
            },
            // The lazy operators never get here: `op` handles them.
            Op::If | Op::Or | Op::And | Op::Map | Op::Filter | Op::All | Op::None | Op::Some => {
                Value::Null
            }
            Op::Reduce => Value::Null,
        }
    }

    /// `var`: a dotted path into the data, or the whole data for `""` or `null`.
    fn var(&self, path: &Value, default: &Value) -> Value {
        let path = match path {
            Value::Null => return self.data.clone(),
            Value::String(s) if s.is_empty() => return self.data.clone(),
            Value::String(s) => s.clone(),
            other => to_string(other),
        };
        let mut current = self.data;
        for segment in path.split('.') {
            let next = match current {
                Value::Object(map) => map.get(segment),
                Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
                _ => None,
            };
            match next {
                Some(value) => current = value,
                None => return default.clone(),
            }
        }
        current.clone()
    }

    /// The keys among `args` (or among the array `args[0]`) whose value is null, absent or "".
    fn missing(&self, args: &[Value]) -> Vec<Value> {
        let keys = match args {
            [Value::Array(keys), ..] => keys.as_slice(),
            keys => keys,
        };
        keys.iter()
            .filter(|key| {
                let value = self.var(key, &Value::Null);
                value.is_null() || value == ""
            })
            .cloned()
            .collect()
    }
}

fn is(ordering: Option<Ordering>, allowed: &[Ordering]) -> Value {
    ordering.is_some_and(|o| allowed.contains(&o)).into()
}

/// JavaScript's `substr(start, length)`, counting characters; a negative length drops that many
/// characters from the end.
fn substr(source: &Value, start: &Value, length: Option<&Value>) -> Value {
    let chars: Vec<char> = to_string(source).chars().collect();
    let len = chars.len() as i64;
    let start = to_number(start);
    let start = if start.is_nan() { 0 } else { start as i64 };
    // `as` saturates, and so do the additions: huge arguments cannot overflow.
    let from = if start < 0 {
        len.saturating_add(start).max(0)
    } else {
        start.min(len)
    };
    let to = match length.map(to_number) {
        None => len,
        Some(n) if n.is_nan() => from,
        Some(n) if n < 0.0 => len.saturating_add(n as i64).max(from),
        Some(n) => from.saturating_add(n as i64).min(len),
    };
    // Both bounds are within 0..=len here.
    Value::String(chars[from as usize..to as usize].iter().collect())
}
