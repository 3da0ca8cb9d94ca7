//! Flag resolution against the fixture set: flag key and context in, resolution out.

use crate::{NOW, flags, parse, summary};
use plateau_plugin_flags::{ErrorCode, Reason, ValueType};
use serde_json::json;

/// (flag key, context, expected summary)
type Case = (&'static str, &'static str, &'static str);

fn check(cases: &[Case]) {
    let mut failures = Vec::new();
    for (key, context, expected) in cases {
        let actual = summary(&flags().evaluate(key, &parse(context), NOW));
        if actual != parse(expected) {
            failures.push(format!(
                "{key} {context}\n  expected {expected}\n  actual   {actual}"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn static_flags_resolve_their_default_variant() {
    check(&[
        (
            "bool-static",
            "{}",
            r#"{"value": true, "variant": "on", "reason": "STATIC"}"#,
        ),
        (
            "string-static",
            "{}",
            r#"{"value": "hi", "variant": "greeting", "reason": "STATIC"}"#,
        ),
        (
            "int-static",
            "{}",
            r#"{"value": 10, "variant": "ten", "reason": "STATIC"}"#,
        ),
        (
            "float-static",
            "{}",
            r#"{"value": 0.5, "variant": "half", "reason": "STATIC"}"#,
        ),
        (
            "object-static",
            "{}",
            r#"{"value": {"showImages": true, "title": "Pictures", "perPage": 100},
                "variant": "gallery", "reason": "STATIC"}"#,
        ),
        // Zero values are values, not absences.
        (
            "bool-zero",
            "{}",
            r#"{"value": false, "variant": "zero", "reason": "STATIC"}"#,
        ),
        (
            "string-zero",
            "{}",
            r#"{"value": "", "variant": "zero", "reason": "STATIC"}"#,
        ),
        (
            "int-zero",
            "{}",
            r#"{"value": 0, "variant": "zero", "reason": "STATIC"}"#,
        ),
        (
            "object-zero",
            "{}",
            r#"{"value": {}, "variant": "zero", "reason": "STATIC"}"#,
        ),
        // `{}` as targeting is no targeting at all.
        (
            "empty-targeting",
            "{}",
            r#"{"value": 1, "variant": "false", "reason": "STATIC"}"#,
        ),
        // A null context is an empty one.
        (
            "bool-static",
            "null",
            r#"{"value": true, "variant": "on", "reason": "STATIC"}"#,
        ),
    ]);
}

#[test]
fn targeting_selects_variants_and_null_falls_back_to_the_default() {
    let ballmer = r#"{"email": "ballmer@macrosoft.com"}"#;
    let other = r#"{"email": "someone@else.com"}"#;
    check(&[
        (
            "greeting-by-email",
            ballmer,
            r#"{"value": "hi", "variant": "hi", "reason": "TARGETING_MATCH"}"#,
        ),
        (
            "greeting-by-email",
            other,
            r#"{"value": "bye", "variant": "bye", "reason": "TARGETING_MATCH"}"#,
        ),
        (
            "int-zero-targeted",
            ballmer,
            r#"{"value": 0, "variant": "zero", "reason": "TARGETING_MATCH"}"#,
        ),
        (
            "int-zero-targeted",
            other,
            r#"{"value": 0, "variant": "zero", "reason": "DEFAULT"}"#,
        ),
        (
            "string-zero-targeted",
            ballmer,
            r#"{"value": "", "variant": "zero", "reason": "TARGETING_MATCH"}"#,
        ),
        (
            "string-zero-targeted",
            other,
            r#"{"value": "", "variant": "zero", "reason": "DEFAULT"}"#,
        ),
        (
            "targeting-key",
            r#"{"targetingKey": "5c3d8535-f81a-4478-a6d3-afaa4d51199e"}"#,
            r#"{"value": "hit", "variant": "hit", "reason": "TARGETING_MATCH"}"#,
        ),
        (
            "targeting-key",
            r#"{"targetingKey": "f20bd32d-703b-48b6-bc8e-79d53c85134a"}"#,
            r#"{"value": "miss", "variant": "miss", "reason": "DEFAULT"}"#,
        ),
        (
            "null-from-targeting",
            "{}",
            r#"{"value": 2, "variant": "two", "reason": "DEFAULT"}"#,
        ),
        // true and false name the variants "true" and "false".
        (
            "boolean-from-targeting",
            "{}",
            r#"{"value": 2, "variant": "true", "reason": "TARGETING_MATCH"}"#,
        ),
    ]);
}

#[test]
fn targeting_results_that_are_not_variants_are_general_errors() {
    check(&[
        (
            "unknown-variant-from-targeting",
            "{}",
            r#"{"reason": "ERROR", "error": "GENERAL"}"#,
        ),
        // flagd documents that only strings, true and false name variants.
        (
            "number-from-targeting",
            "{}",
            r#"{"reason": "ERROR", "error": "GENERAL"}"#,
        ),
    ]);
    let resolution = flags().evaluate("unknown-variant-from-targeting", &json!({}), NOW);
    assert_eq!(
        resolution.error.unwrap().message,
        r#"targeting returned "three", which is not one of the variants: one, two"#
    );
}

#[test]
fn flags_without_default_variant_defer_to_the_code_default() {
    check(&[
        ("code-default-null", "{}", r#"{"reason": "DEFAULT"}"#),
        ("code-default-absent", "{}", r#"{"reason": "DEFAULT"}"#),
        (
            "code-default-targeted",
            r#"{"email": "wozniak@orange.com"}"#,
            r#"{"reason": "DEFAULT"}"#,
        ),
        (
            "code-default-targeted",
            r#"{"email": "jobs@orange.com"}"#,
            r#"{"value": "CEO", "variant": "special", "reason": "TARGETING_MATCH"}"#,
        ),
        (
            "code-default-two-arg-if",
            r#"{"email": "wozniak@orange.com"}"#,
            r#"{"reason": "DEFAULT"}"#,
        ),
    ]);
}

#[test]
fn disabled_flags_resolve_with_reason_disabled_and_no_value() {
    check(&[
        ("disabled-bool", "{}", r#"{"reason": "DISABLED"}"#),
        // Targeting is not consulted for a disabled flag.
        ("disabled-string", "{}", r#"{"reason": "DISABLED"}"#),
    ]);
}

#[test]
fn context_is_enriched_with_flagd_properties() {
    check(&[
        (
            "flag-key-aware",
            "{}",
            r#"{"value": "mine", "variant": "mine", "reason": "TARGETING_MATCH"}"#,
        ),
        // A caller cannot forge `$flagd`.
        (
            "flag-key-aware",
            r#"{"$flagd": {"flagKey": "something-else"}}"#,
            r#"{"value": "mine", "variant": "mine", "reason": "TARGETING_MATCH"}"#,
        ),
        (
            "clock",
            r#"{"time": 1}"#,
            r#"{"value": -1, "variant": "past", "reason": "TARGETING_MATCH"}"#,
        ),
        (
            "clock",
            r#"{"time": 4133980802}"#,
            r#"{"value": 1, "variant": "future", "reason": "TARGETING_MATCH"}"#,
        ),
        (
            "clock",
            r#"{"time": 1700000000}"#,
            r#"{"value": 0, "variant": "now", "reason": "TARGETING_MATCH"}"#,
        ),
    ]);
}

#[test]
fn string_operators() {
    check(&[
        (
            "prefix-suffix",
            r#"{"id": "abcdef"}"#,
            r#"{"value": "prefix", "variant": "prefix", "reason": "TARGETING_MATCH"}"#,
        ),
        (
            "prefix-suffix",
            r#"{"id": "uvwxyz"}"#,
            r#"{"value": "postfix", "variant": "postfix", "reason": "TARGETING_MATCH"}"#,
        ),
        (
            "prefix-suffix",
            r#"{"id": "abcxyz"}"#,
            r#"{"value": "prefix", "variant": "prefix", "reason": "TARGETING_MATCH"}"#,
        ),
        (
            "prefix-suffix",
            r#"{"id": "lmnopq"}"#,
            r#"{"value": "none", "variant": "none", "reason": "TARGETING_MATCH"}"#,
        ),
        (
            "prefix-suffix",
            r#"{"id": 3}"#,
            r#"{"value": "none", "variant": "none", "reason": "TARGETING_MATCH"}"#,
        ),
        // Bad input gives null, so the default variant, not the variant "false".
        (
            "starts-with-number",
            r#"{"num": 123}"#,
            r#"{"value": "fallback", "variant": "fallback", "reason": "DEFAULT"}"#,
        ),
        (
            "ends-with-one-arg",
            "{}",
            r#"{"value": "fallback", "variant": "fallback", "reason": "DEFAULT"}"#,
        ),
    ]);
}

#[test]
fn errors_for_missing_flags_and_bad_contexts() {
    check(&[
        (
            "no-such-flag",
            "{}",
            r#"{"reason": "ERROR", "error": "FLAG_NOT_FOUND"}"#,
        ),
        (
            "bool-static",
            "[1, 2]",
            r#"{"reason": "ERROR", "error": "INVALID_CONTEXT"}"#,
        ),
        (
            "bool-static",
            r#""user""#,
            r#"{"reason": "ERROR", "error": "INVALID_CONTEXT"}"#,
        ),
    ]);
}

#[test]
fn typed_resolution_reports_type_mismatch() {
    // (flag, expected type, mismatch?)
    let cases = [
        ("string-static", ValueType::Integer, true),
        ("string-static", ValueType::String, false),
        ("int-static", ValueType::Integer, false),
        ("int-static", ValueType::Float, false),
        ("float-static", ValueType::Integer, true),
        ("float-static", ValueType::Float, false),
        ("bool-static", ValueType::Object, true),
        ("object-static", ValueType::Object, false),
        // Nothing to check without a value: the code default is the caller's own type.
        ("disabled-bool", ValueType::String, false),
        ("code-default-null", ValueType::String, false),
    ];
    for (key, expected, mismatch) in cases {
        let resolution = flags().evaluate(key, &json!({}), NOW).expect_type(expected);
        let code = resolution.error.as_ref().map(|e| e.code);
        assert_eq!(
            code == Some(ErrorCode::TypeMismatch),
            mismatch,
            "{key} as {expected:?}"
        );
        if mismatch {
            assert_eq!(resolution.reason, Reason::Error);
            assert_eq!(resolution.value, None);
        }
    }
}

#[test]
fn metadata_merges_flag_over_flag_set() {
    let resolution = flags().evaluate("with-metadata", &json!({}), NOW);
    let expected = json!({
        "string": "1.0.2", "integer": 2, "boolean": true, "float": 0.1,
        "tier": 7, "owner": "platform"
    });
    assert_eq!(json!(resolution.metadata), expected);
    // Set metadata alone, also on errors and disabled flags.
    let set_only = json!({"owner": "platform", "tier": 1});
    for key in [
        "bool-static",
        "disabled-bool",
        "unknown-variant-from-targeting",
        "no-such-flag",
    ] {
        let metadata = flags().evaluate(key, &json!({}), NOW).metadata;
        assert_eq!(json!(metadata), set_only, "{key}");
    }
}

#[test]
fn evaluate_all_covers_every_flag_in_key_order() {
    let all = flags().evaluate_all(&json!({}), NOW);
    assert_eq!(all.len(), flags().len());
    let keys: Vec<&str> = all.iter().map(|(key, _)| key.as_str()).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(keys, sorted);
}
