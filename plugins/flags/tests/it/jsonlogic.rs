//! JsonLogic operations: rule and data in, result out.

use crate::parse;
use plateau_plugin_flags::Rule;

/// (rule, data, expected result), all JSON.
type Case = (&'static str, &'static str, &'static str);

fn check(cases: &[Case]) {
    let mut failures = Vec::new();
    for (rule, data, expected) in cases {
        let compiled = Rule::compile(&parse(rule)).unwrap_or_else(|e| panic!("{rule}: {e}"));
        let actual = compiled.apply(&parse(data));
        if actual != parse(expected) {
            failures.push(format!(
                "{rule} on {data}: expected {expected}, got {actual}"
            ));
        }
    }
    assert!(failures.is_empty(), "\n{}", failures.join("\n"));
}

#[test]
fn literals_and_var() {
    check(&[
        ("1", "{}", "1"),
        (r#""text""#, "{}", r#""text""#),
        (r#"[1, {"var": "a"}]"#, r#"{"a": 2}"#, "[1, 2]"),
        (r#"{"var": "a"}"#, r#"{"a": 1}"#, "1"),
        (r#"{"var": ["a"]}"#, r#"{"a": 1}"#, "1"),
        (
            r#"{"var": "a.b.c"}"#,
            r#"{"a": {"b": {"c": "deep"}}}"#,
            r#""deep""#,
        ),
        (r#"{"var": "list.1"}"#, r#"{"list": ["x", "y"]}"#, r#""y""#),
        (r#"{"var": 1}"#, r#"["x", "y"]"#, r#""y""#),
        (r#"{"var": "missing"}"#, "{}", "null"),
        (r#"{"var": ["missing", 26]}"#, "{}", "26"),
        (r#"{"var": ["a.missing", "d"]}"#, r#"{"a": 1}"#, r#""d""#),
        (r#"{"var": ["a", "d"]}"#, r#"{"a": null}"#, "null"),
        (r#"{"var": ""}"#, r#"{"a": 1}"#, r#"{"a": 1}"#),
        (r#"{"var": []}"#, "5", "5"),
        (
            r#"{"var": {"cat": ["a", ".b"]}}"#,
            r#"{"a": {"b": 3}}"#,
            "3",
        ),
    ]);
}

#[test]
fn missing_and_missing_some() {
    check(&[
        (r#"{"missing": ["a", "b"]}"#, r#"{"a": "x"}"#, r#"["b"]"#),
        (
            r#"{"missing": ["a", "b"]}"#,
            r#"{"a": "", "b": null}"#,
            r#"["a", "b"]"#,
        ),
        (
            r#"{"missing": [["a", "b.c"]]}"#,
            r#"{"b": {"c": 1}}"#,
            r#"["a"]"#,
        ),
        (
            r#"{"missing_some": [1, ["a", "b", "c"]]}"#,
            r#"{"a": 1}"#,
            "[]",
        ),
        (
            r#"{"missing_some": [2, ["a", "b", "c"]]}"#,
            r#"{"a": 1}"#,
            r#"["b", "c"]"#,
        ),
    ]);
}

#[test]
fn conditionals_and_logic() {
    check(&[
        (r#"{"if": [true, "yes", "no"]}"#, "{}", r#""yes""#),
        (r#"{"if": [false, "yes", "no"]}"#, "{}", r#""no""#),
        (r#"{"if": [false, "a", false, "b", "c"]}"#, "{}", r#""c""#),
        (r#"{"if": [false, "a", true, "b", "c"]}"#, "{}", r#""b""#),
        (r#"{"if": [false, "a"]}"#, "{}", "null"),
        (r#"{"if": []}"#, "{}", "null"),
        (r#"{"?:": [[], "full", "empty"]}"#, "{}", r#""empty""#),
        (r#"{"if": ["0", "truthy", "falsy"]}"#, "{}", r#""truthy""#),
        (r#"{"if": [0, "truthy", "falsy"]}"#, "{}", r#""falsy""#),
        (r#"{"or": [false, 0, "a", "b"]}"#, "{}", r#""a""#),
        (r#"{"or": [false, 0]}"#, "{}", "0"),
        (r#"{"and": [true, "a", 3]}"#, "{}", "3"),
        (r#"{"and": [true, "", 3]}"#, "{}", r#""""#),
        (r#"{"!": [[]]}"#, "{}", "true"),
        (r#"{"!": true}"#, "{}", "false"),
        (r#"{"!!": ["0"]}"#, "{}", "true"),
        (r#"{"!!": [[]]}"#, "{}", "false"),
        (r#"{"!!": [{}]}"#, "{}", "true"),
        // `or` and `and` return the value that decided, not a boolean.
        (r#"{"or": [true, {"var": "never"}]}"#, "{}", "true"),
        (r#"{"and": [0, {"var": "never"}]}"#, "{}", "0"),
    ]);
}

#[test]
fn equality() {
    check(&[
        (r#"{"==": [1, 1]}"#, "{}", "true"),
        (r#"{"==": [1, "1"]}"#, "{}", "true"),
        (r#"{"==": [1.0, 1]}"#, "{}", "true"),
        (r#"{"==": [0, false]}"#, "{}", "true"),
        (r#"{"==": ["", 0]}"#, "{}", "true"),
        (r#"{"==": ["1", true]}"#, "{}", "true"),
        (r#"{"==": [null, 0]}"#, "{}", "false"),
        (r#"{"==": [null, null]}"#, "{}", "true"),
        (r#"{"==": [[1], 1]}"#, "{}", "true"),
        (r#"{"==": ["a", "b"]}"#, "{}", "false"),
        (r#"{"===": [1, "1"]}"#, "{}", "false"),
        (r#"{"===": [1, 1.0]}"#, "{}", "true"),
        (r#"{"!=": [1, 2]}"#, "{}", "true"),
        (r#"{"!=": [1, "1"]}"#, "{}", "false"),
        (r#"{"!==": [1, "1"]}"#, "{}", "true"),
        (r#"{"!==": ["a", "a"]}"#, "{}", "false"),
    ]);
}

#[test]
fn comparisons() {
    check(&[
        (r#"{">": [2, 1]}"#, "{}", "true"),
        (r#"{">": ["2", 1]}"#, "{}", "true"),
        (r#"{">=": [1, 1]}"#, "{}", "true"),
        (r#"{"<": [1, 2]}"#, "{}", "true"),
        (r#"{"<": ["a", "b"]}"#, "{}", "true"),
        (r#"{"<": ["10", "9"]}"#, "{}", "true"),
        (r#"{"<": ["abc", 1]}"#, "{}", "false"),
        (r#"{">": ["abc", 1]}"#, "{}", "false"),
        (r#"{"<=": [2, 1]}"#, "{}", "false"),
        (r#"{"<": [null, 1]}"#, "{}", "true"),
        // Between, exclusive and inclusive.
        (r#"{"<": [1, 5, 10]}"#, "{}", "true"),
        (r#"{"<": [1, 1, 10]}"#, "{}", "false"),
        (r#"{"<": [1, 11, 10]}"#, "{}", "false"),
        (r#"{"<=": [1, 1, 10]}"#, "{}", "true"),
        (r#"{"<=": [1, 10, 10]}"#, "{}", "true"),
        (r#"{"<=": [1, 11, 10]}"#, "{}", "false"),
    ]);
}

#[test]
fn arithmetic() {
    check(&[
        (r#"{"max": [1, 3, 2]}"#, "{}", "3"),
        (r#"{"min": [1, "-3", 2]}"#, "{}", "-3"),
        (r#"{"max": []}"#, "{}", "null"),
        (r#"{"max": [1, "x"]}"#, "{}", "null"),
        (r#"{"+": [1, 2, 3]}"#, "{}", "6"),
        (r#"{"+": ["3.5", 1]}"#, "{}", "4.5"),
        (r#"{"+": "3"}"#, "{}", "3"),
        (r#"{"+": []}"#, "{}", "0"),
        (r#"{"+": [1, "x"]}"#, "{}", "null"),
        (r#"{"-": [5, 2]}"#, "{}", "3"),
        (r#"{"-": [2]}"#, "{}", "-2"),
        (r#"{"*": [2, "3", 4]}"#, "{}", "24"),
        (r#"{"/": [7, 2]}"#, "{}", "3.5"),
        (r#"{"/": [1, 0]}"#, "{}", "null"),
        (r#"{"%": [7, 3]}"#, "{}", "1"),
        (r#"{"%": [-7, 3]}"#, "{}", "-1"),
        (r#"{"*": [0.1, 3]}"#, "{}", "0.30000000000000004"),
    ]);
}

#[test]
fn array_operations() {
    check(&[
        (
            r#"{"map": [{"var": "xs"}, {"*": [{"var": ""}, 2]}]}"#,
            r#"{"xs": [1, 2]}"#,
            "[2, 4]",
        ),
        (r#"{"map": [{"var": "missing"}, 1]}"#, "{}", "[]"),
        (
            r#"{"filter": [[1, 2, 3, 4], {"%": [{"var": ""}, 2]}]}"#,
            "{}",
            "[1, 3]",
        ),
        (
            r#"{"reduce": [[1, 2, 3], {"+": [{"var": "current"}, {"var": "accumulator"}]}, 10]}"#,
            "{}",
            "16",
        ),
        (r#"{"reduce": ["x", 1, 7]}"#, "{}", "7"),
        (
            r#"{"all": [[1, 2], {">": [{"var": ""}, 0]}]}"#,
            "{}",
            "true",
        ),
        (
            r#"{"all": [[1, -2], {">": [{"var": ""}, 0]}]}"#,
            "{}",
            "false",
        ),
        (r#"{"all": [[], true]}"#, "{}", "false"),
        (
            r#"{"none": [[1, 2], {">": [{"var": ""}, 5]}]}"#,
            "{}",
            "true",
        ),
        (r#"{"none": [[], true]}"#, "{}", "true"),
        (
            r#"{"some": [[1, 6], {">": [{"var": ""}, 5]}]}"#,
            "{}",
            "true",
        ),
        (r#"{"some": [[], true]}"#, "{}", "false"),
        (
            r#"{"some": [{"var": "pies"}, {"==": [{"var": "filling"}, "apple"]}]}"#,
            r#"{"pies": [{"filling": "pumpkin"}, {"filling": "apple"}]}"#,
            "true",
        ),
        (r#"{"merge": [[1, 2], 3, [[4]]]}"#, "{}", "[1, 2, 3, [4]]"),
        (r#"{"merge": []}"#, "{}", "[]"),
    ]);
}

#[test]
fn string_operations() {
    check(&[
        (r#"{"in": ["Spring", "Springfield"]}"#, "{}", "true"),
        (r#"{"in": ["Illinois", "Springfield"]}"#, "{}", "false"),
        (r#"{"in": ["Mike", ["Bob", "Mike"]]}"#, "{}", "true"),
        (r#"{"in": [1, ["1"]]}"#, "{}", "false"),
        (r#"{"in": ["a", null]}"#, "{}", "false"),
        (
            r#"{"in": ["@faas.com", {"var": "email"}]}"#,
            r#"{"email": "x@faas.com"}"#,
            "true",
        ),
        (r#"{"cat": ["I love", " pie"]}"#, "{}", r#""I love pie""#),
        (
            r#"{"cat": ["n", 1, 1.5, true, null]}"#,
            "{}",
            r#""n11.5true""#,
        ),
        (r#"{"substr": ["jsonlogic", 4]}"#, "{}", r#""logic""#),
        (r#"{"substr": ["jsonlogic", -5]}"#, "{}", r#""logic""#),
        (r#"{"substr": ["jsonlogic", 1, 3]}"#, "{}", r#""son""#),
        (r#"{"substr": ["jsonlogic", 4, -2]}"#, "{}", r#""log""#),
        (r#"{"substr": ["héllo", 1, 1]}"#, "{}", r#""é""#),
        (r#"{"substr": ["abc", -1e300, 1e300]}"#, "{}", r#""abc""#),
        (r#"{"substr": ["abc", 1e300, -1e300]}"#, "{}", r#""""#),
        (
            r#"{"starts_with": ["192.168.0.1", "192.168"]}"#,
            "{}",
            "true",
        ),
        (r#"{"starts_with": ["10.0.0.1", "192.168"]}"#, "{}", "false"),
        (
            r#"{"ends_with": ["noreply@example.com", "@example.com"]}"#,
            "{}",
            "true",
        ),
        (
            r#"{"ends_with": ["noreply@example.com", "@test.com"]}"#,
            "{}",
            "false",
        ),
        (r#"{"starts_with": [123, "1"]}"#, "{}", "null"),
        (r#"{"ends_with": ["abc"]}"#, "{}", "null"),
        (r#"{"log": ["kept"]}"#, "{}", r#""kept""#),
    ]);
}

#[test]
fn compile_errors_name_the_operator_and_its_place() {
    // (rule, path, message)
    let cases = [
        (
            r#"{"invalid": ["x"]}"#,
            "$",
            r#"unknown operator "invalid""#,
        ),
        (
            r#"{"if": [true, {"nope": 1}]}"#,
            "$.if[1]",
            r#"unknown operator "nope""#,
        ),
        (
            r#"{"and": [{"or": [{"==": [1, {"Var": "a"}]}]}]}"#,
            "$.and[0].or[0][\"==\"][1]",
            r#"unknown operator "Var""#,
        ),
        (
            r#"{"$ref": "shared"}"#,
            "$.$ref",
            r#"unknown evaluator "shared": no $evaluators are defined"#,
        ),
    ];
    for (rule, path, message) in cases {
        let error = Rule::compile(&parse(rule)).unwrap_err();
        assert_eq!(
            (error.path.as_str(), error.message.as_str()),
            (path, message),
            "{rule}"
        );
    }
}
