//! `fractional`: the hash, the bucketing arithmetic and flagd's published assignments.

use crate::{NOW, flags, summary};
use plateau_plugin_flags::jsonlogic::{bucket, murmur3_x86_32};
use serde_json::{Value, json};

#[test]
fn murmur3_edge_vectors() {
    // Keys whose MurmurHash3 x86_32 (seed 0) lands on the boundaries, and where a 50/50 split
    // puts them.
    let cases = [
        ("ejOoVL", 0, 0),
        ("bY9fO-", 1, 0),
        ("SI7p-", 2_147_483_647, 0),
        ("6LvT0", 2_147_483_648, 1),
        ("ceQdGm", 4_294_967_295, 1),
    ];
    for (key, hash, half) in cases {
        assert_eq!(murmur3_x86_32(key.as_bytes(), 0), hash, "{key}");
        assert_eq!(bucket(hash, &[50, 50]), Some(half), "{key}");
    }
}

#[test]
fn bucketing_is_proportional_to_weights() {
    // (hash, weights, bucket): bucket = (hash * total) >> 32, first cumulative weight above it.
    let cases: &[(u32, &[u64], Option<usize>)] = &[
        (0, &[1], Some(0)),
        (u32::MAX, &[1], Some(0)),
        (u32::MAX / 4, &[25, 25, 25, 25], Some(0)),
        (u32::MAX / 4 + 1, &[25, 25, 25, 25], Some(1)),
        // 0.9 * 2^32 = 3865470566.4: the boundary between the 90 and the 10.
        (3_865_470_566, &[90, 10], Some(0)),
        (3_865_470_567, &[90, 10], Some(1)),
        (u32::MAX, &[0, 100, 0], Some(1)),
        (12345, &[0, 0], None),
        (12345, &[], None),
    ];
    for (hash, weights, expected) in cases {
        assert_eq!(bucket(*hash, weights), *expected, "{hash} {weights:?}");
    }
}

/// (flag key, context, expected value; `null` for "no value")
type Case = (&'static str, Value, Value);

fn check(cases: Vec<Case>) {
    let mut failures = Vec::new();
    for (key, context, expected) in cases {
        let resolution = flags().evaluate(key, &context, NOW);
        let actual = resolution.value.clone().unwrap_or(Value::Null);
        if actual != expected {
            let got = summary(&resolution);
            failures.push(format!("{key} {context}: expected {expected}, got {got}"));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

fn user(name: &str) -> Value {
    json!({"user": {"name": name}})
}

#[test]
fn flagd_assignments_with_custom_bucketing_values() {
    check(vec![
        // Bucketing on "fractional-flag" + user.name, four equal buckets.
        ("fractional-flag", user("jack"), json!("hearts")),
        ("fractional-flag", user("queen"), json!("spades")),
        ("fractional-flag", user("ten"), json!("clubs")),
        ("fractional-flag", user("nine"), json!("diamonds")),
        ("fractional-flag", user("3"), json!("clubs")),
        // Bucketing on "shared-seed" + user.name.
        ("shared-seed-cards", user("seven"), json!("ace-of-hearts")),
        ("shared-seed-cards", user("eight"), json!("ace-of-diamonds")),
        ("shared-seed-cards", user("nine"), json!("ace-of-clubs")),
        ("shared-seed-cards", user("two"), json!("ace-of-spades")),
    ]);
}

#[test]
fn flagd_assignments_with_the_default_bucketing_value() {
    let key = |k: &str| json!({"targetingKey": k});
    check(vec![
        // flag key + targeting key; weights default to 1.
        (
            "fractional-flag-shorthand",
            key("jon@company.com"),
            json!("heads"),
        ),
        (
            "fractional-flag-shorthand",
            key("jane@company.com"),
            json!("tails"),
        ),
        (
            "fractional-single",
            key("some-targeting-key"),
            json!("single"),
        ),
        ("hash-edges", key("ejOoVL"), json!("lower")),
        ("hash-edges", key("bY9fO-"), json!("lower")),
        ("hash-edges", key("SI7p-"), json!("lower")),
        ("hash-edges", key("6LvT0"), json!("upper")),
        ("hash-edges", key("ceQdGm"), json!("upper")),
    ]);
}

#[test]
fn variants_and_weights_may_be_expressions() {
    let ctx = |k: &str, field: &str, v: &str| json!({"targetingKey": k, field: v});
    check(vec![
        (
            "fractional-if-variant",
            ctx("jon@company.com", "tier", "premium"),
            json!("premium"),
        ),
        (
            "fractional-if-variant",
            ctx("jon@company.com", "tier", "basic"),
            json!("standard"),
        ),
        (
            "fractional-if-variant",
            ctx("user1", "tier", "premium"),
            json!("standard"),
        ),
        (
            "fractional-if-variant",
            ctx("user1", "tier", "basic"),
            json!("standard"),
        ),
        (
            "fractional-var-variant",
            ctx("jon@company.com", "color", "red"),
            json!("red"),
        ),
        (
            "fractional-var-variant",
            ctx("jon@company.com", "color", "green"),
            json!("green"),
        ),
        (
            "fractional-var-variant",
            ctx("user1", "color", "red"),
            json!("blue"),
        ),
        (
            "fractional-if-weight",
            ctx("jon@company.com", "tier", "premium"),
            json!("red"),
        ),
        (
            "fractional-if-weight",
            ctx("jon@company.com", "tier", "basic"),
            json!("blue"),
        ),
        (
            "fractional-if-weight",
            ctx("user1", "tier", "premium"),
            json!("red"),
        ),
        (
            "fractional-if-weight",
            ctx("user1", "tier", "basic"),
            json!("blue"),
        ),
        // Booleans as bucket values, used as a condition.
        (
            "fractional-condition-true",
            json!({"targetingKey": "some-targeting-key"}),
            json!("hundreds"),
        ),
        (
            "fractional-condition-false",
            json!({"targetingKey": "some-targeting-key"}),
            json!("ones"),
        ),
        // A negative weight counts as 0.
        (
            "fractional-negative-weight",
            json!({"targetingKey": "any-user"}),
            json!("two"),
        ),
    ]);
}

#[test]
fn unusable_inputs_fall_back_to_the_default_variant() {
    let cases = [
        // No bucketing value and no targeting key: flagd gives the default variant, not
        // TARGETING_KEY_MISSING.
        ("fractional-missing-bucket", json!({})),
        ("fractional-flag-shorthand", json!({})),
        ("fractional-flag-shorthand", json!({"targetingKey": ""})),
        ("fractional-flag-shorthand", json!({"targetingKey": 12345})),
        ("fractional-flag-shorthand", json!({"targetingKey": true})),
        ("fractional-null-first", json!({})),
        (
            "fractional-zero-weights",
            json!({"targetingKey": "any-user"}),
        ),
    ];
    for (key, context) in cases {
        let resolution = flags().evaluate(key, &context, NOW);
        let default = flags().get(key).unwrap().default_variant().unwrap();
        let expected = json!({
            "value": flags().get(key).unwrap().variants()[default],
            "variant": default,
            "reason": "DEFAULT",
        });
        assert_eq!(summary(&resolution), expected, "{key} {context}");
    }
}

#[test]
fn a_bucket_naming_no_variant_is_an_error() {
    for color in ["yellow", ""] {
        let context = json!({"targetingKey": "jon@company.com", "color": color});
        let resolution = flags().evaluate("fractional-var-variant", &context, NOW);
        assert_eq!(
            summary(&resolution),
            json!({"reason": "ERROR", "error": "GENERAL"}),
            "{color:?}"
        );
    }
}

#[test]
fn distribution_is_roughly_proportional() {
    // 20 000 synthetic users over a 10/30/60 split land within 2 points of each share.
    let set = plateau_plugin_flags::FlagSet::from_value(&json!({"flags": {"split": {
        "state": "ENABLED",
        "variants": {"a": "a", "b": "b", "c": "c"},
        "defaultVariant": "a",
        "targeting": {"fractional": [{"cat": ["salt-", {"var": "id"}]}, ["a", 10], ["b", 30], ["c", 60]]}
    }}}))
    .unwrap();
    let mut counts = [0usize; 3];
    let n = 20_000;
    for i in 0..n {
        let resolution = set.evaluate("split", &json!({"id": i.to_string()}), NOW);
        let index = match resolution.variant.as_deref() {
            Some("a") => 0,
            Some("b") => 1,
            _ => 2,
        };
        counts[index] += 1;
    }
    for (count, share) in counts.iter().zip([10.0, 30.0, 60.0]) {
        let percent = *count as f64 * 100.0 / n as f64;
        assert!((percent - share).abs() < 2.0, "{counts:?}");
    }
}
