//! `sem_ver`, through flags and through the operator directly.

use crate::{NOW, flags};
use plateau_plugin_flags::Rule;
use serde_json::{Value, json};

/// The value a flag resolves to for `{"version": version}`.
fn resolve(key: &str, version: Value) -> Value {
    let resolution = flags().evaluate(key, &json!({ "version": version }), NOW);
    resolution.value.unwrap_or(Value::Null)
}

#[test]
fn comparisons_through_flags() {
    let cases = [
        ("semver-compare", json!("2.0.0"), "equal"),
        ("semver-compare", json!("2.1.0"), "greater"),
        ("semver-compare", json!("1.9.0"), "lesser"),
        ("semver-compare", json!("2.0.0-alpha"), "lesser"),
        ("semver-compare", json!("2.0.0.0"), "none"),
        ("semver-range", json!("3.0.1"), "minor"),
        ("semver-range", json!("3.1.0"), "major"),
        ("semver-range", json!("4.0.0"), "none"),
        // Wrong argument count: null, so the default variant.
        ("semver-two-args", json!("1.0.0"), "fallback"),
    ];
    for (key, version, expected) in cases {
        assert_eq!(
            resolve(key, version.clone()),
            json!(expected),
            "{key} {version}"
        );
    }
}

#[test]
fn operator_table() {
    // (version, operator, target, result): true, false, or null for unusable input.
    let cases = [
        (json!("1.0.0"), "=", json!("1.0.0"), json!(true)),
        (json!("v1.0.0"), "=", json!("1.0.0"), json!(true)),
        (json!("V1.0.0"), "=", json!("v1.0.0"), json!(true)),
        (json!("2.0.0"), "=", json!("v1.0.0"), json!(false)),
        (json!("1.0.0"), "!=", json!("1.0.1"), json!(true)),
        (json!("1.0.0"), "<", json!("1.0.1"), json!(true)),
        (json!("1.0.1"), "<=", json!("1.0.1"), json!(true)),
        (json!("1.10.0"), ">", json!("1.9.0"), json!(true)),
        (json!("1.0.0"), ">=", json!("1.0.0-rc.1"), json!(true)),
        (
            json!("1.0.0-alpha.10"),
            ">",
            json!("1.0.0-alpha.9"),
            json!(true),
        ),
        (
            json!("1.0.0-alpha.beta"),
            ">",
            json!("1.0.0-alpha.1"),
            json!(true),
        ),
        // Partial versions are completed.
        (json!("1.5.0"), "^", json!("1"), json!(true)),
        (json!("1.0"), "^", json!("1"), json!(true)),
        (json!("1"), "^", json!("1"), json!(true)),
        (json!(1), "^", json!("1"), json!(true)),
        (json!(1.0), "^", json!("1"), json!(true)),
        (json!(1.2), "^", json!("1"), json!(true)),
        (json!("2.0.0"), "^", json!("1"), json!(false)),
        (json!("3.0.9"), "~", json!("3.0.0"), json!(true)),
        (json!("3.1.0"), "~", json!("3.0.0"), json!(false)),
        // Numbers in the context are read as their decimal text.
        (json!(1.2), ">", json!("1.1"), json!(true)),
        (json!(1.1), ">", json!("1.1"), json!(false)),
        (json!(2), ">", json!("1.1"), json!(true)),
        (json!(1), ">", json!("1.1"), json!(false)),
        (json!("1.2"), ">", json!("1.1"), json!(true)),
        // Build metadata is ignored.
        (json!("1.0.0+other"), "=", json!("1.0.0+build"), json!(true)),
        (json!("1.0.0"), "=", json!("1.0.0+build"), json!(true)),
        (json!("2.0.0"), "=", json!("1.0.0+build"), json!(false)),
        // Unusable input.
        (json!("not-a-version"), "=", json!("1.0.0"), json!(null)),
        (json!("1.0.0"), "===", json!("1.0.0"), json!(null)),
        (json!("1.2.3.4"), "=", json!("1.2.3"), json!(null)),
        (json!("01.2.3"), "=", json!("1.2.3"), json!(null)),
        (json!(null), "=", json!("1.2.3"), json!(null)),
        (json!(true), "=", json!("1.2.3"), json!(null)),
    ];
    for (version, op, target, expected) in cases {
        let rule = Rule::compile(&json!({"sem_ver": [{"var": "v"}, op, target]})).unwrap();
        let actual = rule.apply(&json!({ "v": version }));
        assert_eq!(actual, expected, "{version} {op} {target}");
    }
}

#[test]
fn unusable_versions_select_the_default_variant() {
    let resolution = flags().evaluate(
        "semver-raw",
        &json!({"version": "not-a-version", "op": "=", "target": "1.0.0"}),
        NOW,
    );
    assert_eq!(resolution.variant.as_deref(), Some("fallback"));
    assert_eq!(resolution.reason, plateau_plugin_flags::Reason::Default);
    let resolution = flags().evaluate(
        "semver-raw",
        &json!({"version": "1.0.0", "op": "===", "target": "1.0.0"}),
        NOW,
    );
    assert_eq!(resolution.variant.as_deref(), Some("fallback"));
    let resolution = flags().evaluate(
        "semver-raw",
        &json!({"version": "1.0.0", "op": "=", "target": "1.0.0"}),
        NOW,
    );
    assert_eq!(resolution.variant.as_deref(), Some("true"));
}
