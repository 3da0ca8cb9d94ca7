//! Flag and flag-set definitions: invalid documents give a message and the path of the field.

use crate::parse;
use plateau_plugin_flags::{Flag, FlagSet, FlagType, State};
use serde_json::json;

/// (definition, path, message)
type Case = (&'static str, &'static str, &'static str);

fn check(
    cases: &[Case],
    parse_one: impl Fn(&str) -> Result<(), plateau_plugin_flags::DefinitionError>,
) {
    let mut failures = Vec::new();
    for (input, path, message) in cases {
        match parse_one(input) {
            Ok(()) => failures.push(format!("{input}: accepted")),
            Err(e) if e.path != *path || e.message != *message => {
                failures.push(format!(
                    "{input}\n  expected {message} (at {path})\n  actual   {e}"
                ));
            }
            Err(_) => {}
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn invalid_flags() {
    check(
        &[
            (
                r#"{"state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "x"}"#,
                "$.defaultVariant",
                r#"defaultVariant "x" is not one of the variants: off, on"#,
            ),
            (
                r#"{"state": "ENABLED", "variants": {"on": true}, "defaultVariant": 1}"#,
                "$.defaultVariant",
                "defaultVariant must be a variant name or null, not 1",
            ),
            (
                r#"{"variants": {"on": true}}"#,
                "$.state",
                r#"state is required: "ENABLED" or "DISABLED""#,
            ),
            (
                r#"{"state": "enabled", "variants": {"on": true}}"#,
                "$.state",
                r#"state must be "ENABLED" or "DISABLED", not "enabled""#,
            ),
            (
                r#"{"state": "ENABLED"}"#,
                "$.variants",
                "variants is required",
            ),
            (
                r#"{"state": "ENABLED", "variants": {}}"#,
                "$.variants",
                "variants must name at least one variant",
            ),
            (
                r#"{"state": "ENABLED", "variants": ["on", "off"]}"#,
                "$.variants",
                r#"variants must be an object of variant name to value, not ["on","off"]"#,
            ),
            (
                r#"{"state": "ENABLED", "variants": {"on": true, "off": "false"}}"#,
                "$.variants.on",
                r#"variant "on" is a boolean but variant "off" is a string; all variants must have the same type"#,
            ),
            (
                r#"{"state": "ENABLED", "variants": {"list": [1, 2]}}"#,
                "$.variants.list",
                r#"variant "list" must be a boolean, string, number or object, not [1,2]"#,
            ),
            (
                r#"{"state": "ENABLED", "variants": {"dark-mode": null}}"#,
                r#"$.variants["dark-mode"]"#,
                r#"variant "dark-mode" must be a boolean, string, number or object, not null"#,
            ),
            (
                r#"{"state": "ENABLED", "variants": {"on": true}, "defaultvariant": "on"}"#,
                "$.defaultvariant",
                r#"unknown field "defaultvariant"; a flag has the fields state, variants, defaultVariant, targeting, metadata"#,
            ),
            (
                r#"{"state": "ENABLED", "variants": {"one": 1}, "targeting": {"invalid": ["this is not valid targeting"]}}"#,
                "$.targeting",
                r#"unknown operator "invalid""#,
            ),
            (
                r#"{"state": "ENABLED", "variants": {"on": true}, "targeting": {"if": [{"sem-ver": ["1.0.0", "=", "1.0.0"]}, "on"]}}"#,
                "$.targeting.if[0]",
                r#"unknown operator "sem-ver""#,
            ),
            (
                r#"{"state": "ENABLED", "variants": {"on": true}, "targeting": {"if": [{"$ref": "beta-users"}, "on"]}}"#,
                "$.targeting.if[0].$ref",
                r#"unknown evaluator "beta-users": no $evaluators are defined"#,
            ),
            (
                r#"{"state": "ENABLED", "variants": {"on": true}, "targeting": "on"}"#,
                "$.targeting",
                r#"targeting must be a JsonLogic object, not "on""#,
            ),
            (
                r#"{"state": "ENABLED", "variants": {"on": true}, "metadata": {"owner": {"team": "a"}}}"#,
                "$.metadata.owner",
                r#"metadata "owner" must be a string, number or boolean, not {"team":"a"}"#,
            ),
            (r#"["state"]"#, "$", "a flag must be a JSON object"),
        ],
        |text| Flag::from_value(&parse(text)).map(drop),
    );
}

#[test]
fn invalid_flag_sets() {
    check(
        &[
            (r#"{"metadata": {}}"#, "$.flags", "flags is required"),
            (
                r#"{"flags": {}, "evaluators": {}}"#,
                "$.evaluators",
                r#"unknown field "evaluators"; a flag set has the fields $schema, flags, $evaluators, metadata"#,
            ),
            (
                r#"{"flags": {"new-banner": {"state": "ENABLED", "variants": {"on": true}, "defaultVariant": "off"}}}"#,
                r#"$.flags["new-banner"].defaultVariant"#,
                r#"defaultVariant "off" is not one of the variants: on"#,
            ),
            (
                r#"{"$evaluators": {"staff": {"ends_with": [{"var": "email"}, "@corp.com"]}},
                    "flags": {"f": {"state": "ENABLED", "variants": {"on": true},
                                    "targeting": {"if": [{"$ref": "nonexistent"}, "on"]}}}}"#,
                "$.flags.f.targeting.if[0].$ref",
                r#"unknown evaluator "nonexistent"; defined evaluators: staff"#,
            ),
            (
                r#"{"$evaluators": {"a": {"$ref": "b"}, "b": {"==": [1, 1]}}, "flags": {}}"#,
                "$.$evaluators.a.$ref",
                r#"shared evaluators cannot reference other evaluators ("b")"#,
            ),
            (
                r#"{"$evaluators": {"a": {"bogus": 1}}, "flags": {}}"#,
                "$.$evaluators.a",
                r#"unknown operator "bogus""#,
            ),
            (
                r#"{"$evaluators": {"a": {}}, "flags": {}}"#,
                "$.$evaluators.a",
                r#"evaluator "a" must be a non-empty JsonLogic object"#,
            ),
            (
                r#"{"flags": {"": {"state": "ENABLED", "variants": {"on": true}}}}"#,
                r#"$.flags[""]"#,
                "a flag key must not be empty",
            ),
            (
                r#"{"flags": {}, "metadata": [1]}"#,
                "$.metadata",
                "metadata must be an object, not [1]",
            ),
        ],
        |text| FlagSet::from_value(&parse(text)).map(drop),
    );
}

#[test]
fn errors_display_message_and_path() {
    let error = Flag::from_value(&json!({
        "state": "ENABLED", "variants": {"on": true, "off": false}, "defaultVariant": "x"
    }))
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"defaultVariant "x" is not one of the variants: off, on (at $.defaultVariant)"#
    );
    let error = FlagSet::from_json("{\"flags\": ").unwrap_err();
    assert_eq!(error.path, "$");
    assert!(
        error
            .message
            .starts_with("the flag set is not valid JSON: "),
        "{error}"
    );
}

#[test]
fn valid_flags_expose_their_parts() {
    let flag = Flag::from_json(
        r#"{"state": "DISABLED", "variants": {"a": {"x": 1}, "b": {}}, "defaultVariant": "b",
            "targeting": {}, "metadata": {"version": 17}}"#,
    )
    .unwrap();
    assert_eq!(flag.state(), State::Disabled);
    assert_eq!(flag.flag_type(), FlagType::Object);
    assert_eq!(flag.default_variant(), Some("b"));
    assert!(flag.targeting().is_none(), "{{}} is no targeting");
    assert_eq!(json!(flag.metadata()), json!({"version": 17}));

    let flag =
        Flag::from_json(r#"{"state": "ENABLED", "variants": {"n": 1.5}, "defaultVariant": null}"#)
            .unwrap();
    assert_eq!(flag.flag_type(), FlagType::Number);
    assert_eq!(flag.default_variant(), None);
    assert!(flag.metadata().is_empty());
}

#[test]
fn refs_resolve_whatever_the_whitespace() {
    let set = FlagSet::from_json(
        r#"{"$evaluators": {"yes": {"==": [1, 1]}}, "flags": {
            "compact": {"state": "ENABLED", "variants": {"a": "a"}, "targeting": {"if": [{"$ref":"yes"}, "a"]}},
            "spaced": {"state": "ENABLED", "variants": {"a": "a"}, "targeting": {"if": [{ "$ref" : "yes" }, "a"]}},
            "direct": {"state": "ENABLED", "variants": {"true": "t"}, "targeting": {"$ref": "yes"}}
        }}"#,
    )
    .unwrap();
    for (key, variant) in [("compact", "a"), ("spaced", "a"), ("direct", "true")] {
        let resolution = set.evaluate(key, &json!({}), 0);
        assert_eq!(resolution.variant.as_deref(), Some(variant), "{key}");
    }
}
