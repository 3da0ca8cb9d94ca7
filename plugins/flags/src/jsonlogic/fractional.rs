//! flagd's `fractional` operator: deterministic, sticky percentage splits.
//!
//! `{"fractional": [bucketBy?, [variant, weight?], ...]}`. The optional first argument is the
//! bucketing string; when it does not evaluate to a string, flagd buckets on `$flagd.flagKey`
//! followed by `targetingKey` (a `null` first argument, such as a missing `var`, is dropped).
//! The string is hashed with MurmurHash3 x86_32 (seed 0) into `h`, the bucket is
//! `(h * totalWeight) >> 32`, and the first variant whose cumulative weight exceeds the bucket
//! wins. Any unusable input makes the operator return `null`, so targeting falls back to the
//! default variant, as flagd does.

use super::murmur3::murmur3_x86_32;
use serde_json::Value;

/// Weights and their sum are limited to `i32::MAX`, as in flagd.
const MAX_WEIGHT: i64 = i32::MAX as i64;

/// Evaluates `fractional` on its already evaluated arguments; `context` is the evaluation
/// context with flagd's `$flagd` properties.
pub(super) fn evaluate(args: &[Value], context: &Value) -> Value {
    let Some((bucket_by, distributions)) = bucketing_value(args, context) else {
        return Value::Null;
    };
    let Some(variants) = parse_distributions(distributions) else {
        return Value::Null;
    };
    let weights: Vec<u64> = variants.iter().map(|(_, weight)| *weight).collect();
    match bucket(murmur3_x86_32(bucket_by.as_bytes(), 0), &weights) {
        Some(index) => variants[index].0.clone(),
        None => Value::Null,
    }
}

/// The index of the bucket a hash falls into, for the given weights; `None` when they sum to 0.
pub fn bucket(hash: u32, weights: &[u64]) -> Option<usize> {
    let total: u64 = weights.iter().sum();
    if total == 0 {
        return None;
    }
    let bucket = (u64::from(hash) * total) >> 32;
    let mut range_end = 0;
    weights.iter().position(|weight| {
        range_end += weight;
        bucket < range_end
    })
}

fn bucketing_value<'a>(args: &'a [Value], context: &Value) -> Option<(String, &'a [Value])> {
    let (first, rest) = args.split_first()?;
    if let Value::String(bucket_by) = first {
        return Some((bucket_by.clone(), rest));
    }
    let distributions = if first.is_null() { rest } else { args };
    // Without a usable targeting key flagd returns null (and so the default variant) rather
    // than an error: TARGETING_KEY_MISSING is never produced.
    let targeting_key = match context.get("targetingKey")? {
        Value::String(key) if !key.is_empty() => key,
        _ => return None,
    };
    let flag_key = context
        .get("$flagd")
        .and_then(|flagd| flagd.get("flagKey"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    Some(([flag_key, targeting_key.as_str()].concat(), distributions))
}

fn parse_distributions(distributions: &[Value]) -> Option<Vec<(Value, u64)>> {
    let mut total = 0;
    let mut parsed = Vec::with_capacity(distributions.len());
    for distribution in distributions {
        let Value::Array(parts) = distribution else {
            return None;
        };
        let variant = match parts.first()? {
            v @ (Value::String(_) | Value::Bool(_) | Value::Number(_) | Value::Null) => v.clone(),
            Value::Array(_) | Value::Object(_) => return None,
        };
        let weight = match parts.get(1) {
            None | Some(Value::Null) => 1,
            Some(Value::Number(n)) => {
                let w = n.as_f64()?;
                if w.fract() != 0.0 || w > MAX_WEIGHT as f64 {
                    return None;
                }
                // Negative weights come from rollout arithmetic; flagd clamps them to 0.
                (w as i64).max(0)
            }
            Some(_) => return None,
        };
        total += weight;
        if total > MAX_WEIGHT {
            return None;
        }
        parsed.push((variant, weight.unsigned_abs()));
    }
    Some(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn weights_default_to_one_and_negative_weights_count_as_zero() {
        let parsed = parse_distributions(&[json!(["a"]), json!(["b", -5]), json!(["c", null])]);
        assert_eq!(
            parsed.unwrap(),
            vec![(json!("a"), 1), (json!("b"), 0), (json!("c"), 1)]
        );
    }

    #[test]
    fn unusable_distributions_are_rejected() {
        for bad in [
            json!([["a", 1.5]]),
            json!([["a", "1"]]),
            json!([[{"a": 1}, 1]]),
            json!([[]]),
            json!(["a"]),
            json!([["a", 2147483647], ["b", 1]]),
        ] {
            let Value::Array(items) = &bad else {
                unreachable!()
            };
            assert_eq!(parse_distributions(items), None, "{bad}");
        }
    }

    #[test]
    fn buckets_follow_cumulative_weights() {
        assert_eq!(bucket(0, &[1, 1]), Some(0));
        assert_eq!(bucket(u32::MAX, &[1, 1]), Some(1));
        assert_eq!(bucket(u32::MAX, &[0, 0]), None);
        assert_eq!(bucket(1 << 31, &[0, 5, 0]), Some(1));
    }
}
