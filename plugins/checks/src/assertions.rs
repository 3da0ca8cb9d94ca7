//! API check assertions: on the status code, a header, a JSON path of the
//! body, the body as text, and the response time. Each is checked against
//! an observed response; a failure says which assertion, what it expected
//! and what it saw.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use crate::jsonpath::{JsonPath, Selection};

/// How an assertion compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum Operator {
    Equals,
    NotEquals,
    GreaterThan,
    GreaterThanOrEqual,
    LessThan,
    LessThanOrEqual,
    Contains,
    NotContains,
    Exists,
    NotExists,
}

impl Operator {
    const ALL: [Operator; 10] = [
        Operator::Equals,
        Operator::NotEquals,
        Operator::GreaterThan,
        Operator::GreaterThanOrEqual,
        Operator::LessThan,
        Operator::LessThanOrEqual,
        Operator::Contains,
        Operator::NotContains,
        Operator::Exists,
        Operator::NotExists,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "equals",
            Operator::NotEquals => "notEquals",
            Operator::GreaterThan => "greaterThan",
            Operator::GreaterThanOrEqual => "greaterThanOrEqual",
            Operator::LessThan => "lessThan",
            Operator::LessThanOrEqual => "lessThanOrEqual",
            Operator::Contains => "contains",
            Operator::NotContains => "notContains",
            Operator::Exists => "exists",
            Operator::NotExists => "notExists",
        }
    }

    fn parse(text: &str) -> Option<Operator> {
        Operator::ALL.into_iter().find(|o| o.as_str() == text)
    }

    /// Whether the operator compares with a `value` (all but the existence tests).
    fn takes_value(self) -> bool {
        !matches!(self, Operator::Exists | Operator::NotExists)
    }
}

/// What an assertion looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum Target {
    StatusCode,
    Header,
    JsonPath,
    Body,
    ResponseTime,
}

impl Target {
    const ALL: [Target; 5] = [
        Target::StatusCode,
        Target::Header,
        Target::JsonPath,
        Target::Body,
        Target::ResponseTime,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Target::StatusCode => "statusCode",
            Target::Header => "header",
            Target::JsonPath => "jsonPath",
            Target::Body => "body",
            Target::ResponseTime => "responseTime",
        }
    }

    fn operators(self) -> &'static [Operator] {
        use Operator::*;
        match self {
            Target::StatusCode => &[
                Equals,
                NotEquals,
                GreaterThan,
                GreaterThanOrEqual,
                LessThan,
                LessThanOrEqual,
            ],
            Target::Header => &[Exists, NotExists, Equals, NotEquals, Contains, NotContains],
            Target::JsonPath => &Operator::ALL,
            Target::Body => &[Equals, NotEquals, Contains, NotContains],
            Target::ResponseTime => &[LessThan, LessThanOrEqual],
        }
    }
}

/// One assertion as stored and as shown: `{"type": "jsonPath", "path":
/// "$.data.items[0].id", "operator": "equals", "value": "a1"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Assertion {
    #[serde(rename = "type")]
    pub target: Target,
    /// The header name, for `header`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The JSON path, for `jsonPath`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub operator: Operator,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

impl Assertion {
    /// Reads one assertion from a request body; errors are `(field, message)`
    /// with fields relative to the assertion (`operator`, `value`).
    pub fn from_json(value: &Value) -> Result<Assertion, Vec<(String, String)>> {
        let mut errors = Vec::new();
        let Value::Object(map) = value else {
            return Err(vec![(String::new(), "must be an object".to_owned())]);
        };
        for key in map.keys() {
            if !["type", "name", "path", "operator", "value"].contains(&key.as_str()) {
                errors.push((key.clone(), "is not a field of an assertion".to_owned()));
            }
        }
        let names = || {
            Target::ALL
                .iter()
                .map(|t| t.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let target = match map.get("type").and_then(Value::as_str) {
            Some(t) => Target::ALL.into_iter().find(|x| x.as_str() == t),
            None => None,
        };
        let Some(target) = target else {
            errors.push(("type".to_owned(), format!("must be one of {}", names())));
            return Err(errors);
        };
        let allowed = target.operators();
        let listed = || {
            allowed
                .iter()
                .map(|o| o.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let operator = map
            .get("operator")
            .and_then(Value::as_str)
            .and_then(Operator::parse)
            .filter(|o| allowed.contains(o));
        if operator.is_none() {
            errors.push((
                "operator".to_owned(),
                format!(
                    "must be one of {} for a {} assertion",
                    listed(),
                    target.as_str()
                ),
            ));
        }
        let string_field = |field: &str, errors: &mut Vec<(String, String)>| match map.get(field) {
            Some(Value::String(s)) if !s.trim().is_empty() => Some(s.trim().to_owned()),
            _ => {
                errors.push((
                    field.to_owned(),
                    "is required and must be a string".to_owned(),
                ));
                None
            }
        };
        let mut name = None;
        let mut path = None;
        match target {
            Target::Header => {
                name = string_field("name", &mut errors).map(|n| n.to_ascii_lowercase());
            }
            Target::JsonPath => {
                path = string_field("path", &mut errors);
                if let Some(p) = &path
                    && let Err(e) = JsonPath::parse(p)
                {
                    errors.push(("path".to_owned(), e));
                }
            }
            _ => {}
        }
        for (field, applies) in [
            ("name", target == Target::Header),
            ("path", target == Target::JsonPath),
        ] {
            if !applies && map.contains_key(field) {
                errors.push((
                    field.to_owned(),
                    format!("does not apply to a {} assertion", target.as_str()),
                ));
            }
        }
        let value = map.get("value").cloned();
        if let Some(op) = operator {
            match (&value, op.takes_value()) {
                (None, true) => errors.push((
                    "value".to_owned(),
                    format!("is required by {}", op.as_str()),
                )),
                (Some(_), false) => errors.push((
                    "value".to_owned(),
                    format!("must be left out with {}", op.as_str()),
                )),
                (Some(v), true) => {
                    if let Some(problem) = value_problem(target, op, v) {
                        errors.push(("value".to_owned(), problem));
                    }
                }
                (None, false) => {}
            }
        }
        match (errors.is_empty(), operator) {
            (true, Some(operator)) => Ok(Assertion {
                target,
                name,
                path,
                operator,
                value,
            }),
            _ => Err(errors),
        }
    }

    /// A short description: `jsonPath $.data.count greaterThan 1`.
    pub fn describe(&self) -> String {
        let subject = match self.target {
            Target::Header => format!("header {}", self.name.as_deref().unwrap_or("")),
            Target::JsonPath => format!("jsonPath {}", self.path.as_deref().unwrap_or("")),
            other => other.as_str().to_owned(),
        };
        match &self.value {
            Some(v) => format!("{subject} {} {v}", self.operator.as_str()),
            None => format!("{subject} {}", self.operator.as_str()),
        }
    }
}

/// Why `value` cannot be compared by `op` on `target`, if it cannot.
fn value_problem(target: Target, op: Operator, value: &Value) -> Option<String> {
    let ordering = matches!(
        op,
        Operator::GreaterThan
            | Operator::GreaterThanOrEqual
            | Operator::LessThan
            | Operator::LessThanOrEqual
    );
    match target {
        Target::StatusCode | Target::ResponseTime if !value.is_u64() => {
            Some("must be a non-negative integer".to_owned())
        }
        Target::Header | Target::Body if !value.is_string() => Some("must be a string".to_owned()),
        Target::JsonPath if ordering && !value.is_number() && !value.is_string() => {
            Some(format!("must be a number or a string for {}", op.as_str()))
        }
        _ => None,
    }
}

/// The response an assertion looks at.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    pub status: u16,
    /// Names lowercase.
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
    pub total_ms: u32,
}

/// A failed assertion, explained: which one (its index and definition),
/// what it expected, what it saw.
#[derive(Debug, Clone, PartialEq)]
pub struct Failed {
    pub index: usize,
    pub assertion: Assertion,
    pub expected: String,
    pub actual: Value,
    pub message: String,
}

impl Failed {
    /// The `assertion` member of a result's failure: the definition with its index.
    pub fn assertion_json(&self) -> Value {
        let mut map = match serde_json::to_value(&self.assertion) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        };
        map.insert("index".to_owned(), json!(self.index));
        Value::Object(map)
    }
}

/// Checks `assertions` in order; the first that fails, explained.
pub fn first_failure(assertions: &[Assertion], observed: &Observed<'_>) -> Option<Failed> {
    let mut parsed: Option<Result<Value, String>> = None;
    for (index, assertion) in assertions.iter().enumerate() {
        let actual = match assertion.target {
            Target::StatusCode => Some(json!(observed.status)),
            Target::ResponseTime => Some(json!(observed.total_ms)),
            Target::Body => Some(Value::String(
                String::from_utf8_lossy(observed.body).into_owned(),
            )),
            Target::Header => {
                let name = assertion.name.as_deref().unwrap_or("");
                observed
                    .headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(name))
                    .map(|(_, v)| Value::String(v.clone()))
            }
            Target::JsonPath => {
                let document = parsed.get_or_insert_with(|| {
                    serde_json::from_slice::<Value>(observed.body)
                        .map_err(|e| format!("the body is not JSON ({e})"))
                });
                let document = match document {
                    Ok(document) => document,
                    Err(why) => {
                        return Some(failed(index, assertion, Value::Null, why.clone()));
                    }
                };
                let path = assertion.path.as_deref().unwrap_or("$");
                match JsonPath::parse(path) {
                    Ok(path) => match path.select(document) {
                        Selection::Missing => None,
                        other => other.value(),
                    },
                    Err(why) => {
                        return Some(failed(index, assertion, Value::Null, why));
                    }
                }
            }
        };
        if let Err(why) = holds(assertion, actual.as_ref()) {
            return Some(failed(index, assertion, actual.unwrap_or(Value::Null), why));
        }
    }
    None
}

/// The longest actual value a failure keeps, in bytes of JSON; a longer one
/// (a whole body) is cut, so results stay small.
pub const MAX_ACTUAL: usize = 1024;

fn failed(index: usize, assertion: &Assertion, actual: Value, why: String) -> Failed {
    let actual = clip(actual);
    let expected = match &assertion.value {
        Some(v) => format!("{} {v}", assertion.operator.as_str()),
        None => assertion.operator.as_str().to_owned(),
    };
    Failed {
        index,
        message: format!("assertion {index} ({}) failed: {why}", assertion.describe()),
        assertion: assertion.clone(),
        expected,
        actual,
    }
}

/// Whether the assertion holds for `actual` (`None`: the header or path is
/// absent); the error says what was seen.
fn holds(assertion: &Assertion, actual: Option<&Value>) -> Result<(), String> {
    let op = assertion.operator;
    let Some(actual) = actual else {
        return match op {
            Operator::NotExists => Ok(()),
            _ => Err(match assertion.target {
                Target::Header => "the header is absent".to_owned(),
                _ => "the path selects nothing".to_owned(),
            }),
        };
    };
    let expected = assertion.value.as_ref().unwrap_or(&Value::Null);
    let ok = match op {
        Operator::Exists => true,
        Operator::NotExists => false,
        Operator::Equals => loose_eq(actual, expected),
        Operator::NotEquals => !loose_eq(actual, expected),
        Operator::Contains => contains(actual, expected),
        Operator::NotContains => !contains(actual, expected),
        Operator::GreaterThan
        | Operator::GreaterThanOrEqual
        | Operator::LessThan
        | Operator::LessThanOrEqual => {
            let Some(ordering) = compare(actual, expected) else {
                return Err(format!("{actual} cannot be compared with {expected}"));
            };
            match op {
                Operator::GreaterThan => ordering.is_gt(),
                Operator::GreaterThanOrEqual => ordering.is_ge(),
                Operator::LessThan => ordering.is_lt(),
                _ => ordering.is_le(),
            }
        }
    };
    if ok {
        Ok(())
    } else if op == Operator::NotExists {
        Err(format!("it exists with the value {actual}"))
    } else {
        Err(format!("the actual value is {}", shorten(actual)))
    }
}

/// Long values are cut to 200 bytes in messages.
fn shorten(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 200 {
        return text;
    }
    format!("{}... ({} bytes)", prefix(&text, 200), text.len())
}

/// `value`, or for one over [`MAX_ACTUAL`] bytes of JSON, its beginning as
/// a string that says how long it was.
fn clip(value: Value) -> Value {
    let text = match &value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.len() <= MAX_ACTUAL {
        return value;
    }
    Value::String(format!(
        "{}... ({} bytes)",
        prefix(&text, MAX_ACTUAL),
        text.len()
    ))
}

/// At most `max` bytes of `text`, cut at a character boundary.
fn prefix(text: &str, max: usize) -> &str {
    let mut end = max.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// JSON equality where numbers compare by value (`1 == 1.0`) and a string
/// equals a number or boolean with the same text (`"200" == 200`): headers
/// and bodies are text.
fn loose_eq(actual: &Value, expected: &Value) -> bool {
    match (actual, expected) {
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (Value::String(a), Value::Number(_) | Value::Bool(_)) => {
            a.as_str() == expected.to_string().as_str()
        }
        (Value::Number(_) | Value::Bool(_), Value::String(b)) => {
            actual.to_string().as_str() == b.as_str()
        }
        _ => actual == expected,
    }
}

/// Substring for text, membership for arrays, key presence for objects.
fn contains(actual: &Value, expected: &Value) -> bool {
    match actual {
        Value::String(s) => match expected {
            Value::String(e) => s.contains(e.as_str()),
            other => s.contains(&other.to_string()),
        },
        Value::Array(items) => items.iter().any(|item| loose_eq(item, expected)),
        Value::Object(map) => expected.as_str().is_some_and(|k| map.contains_key(k)),
        _ => false,
    }
}

/// Numbers by value (numeric strings count as numbers), strings by text.
fn compare(actual: &Value, expected: &Value) -> Option<std::cmp::Ordering> {
    let number = |v: &Value| match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match (number(actual), number(expected)) {
        (Some(a), Some(b)) => a.partial_cmp(&b),
        _ => match (actual, expected) {
            (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
            _ => None,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assertion(value: Value) -> Assertion {
        Assertion::from_json(&value).unwrap_or_else(|e| panic!("{value}: {e:?}"))
    }

    fn observed<'a>(headers: &'a [(String, String)], body: &'a str) -> Observed<'a> {
        Observed {
            status: 200,
            headers,
            body: body.as_bytes(),
            total_ms: 120,
        }
    }

    const BODY: &str = r#"{"data": {"items": [{"id": "a1", "n": 3}], "count": 3, "tags": ["x", "y"],
        "flag": true, "price": "9.50", "none": null}}"#;

    #[test]
    fn assertions_hold_or_fail_with_the_actual_value() {
        let headers = vec![
            (
                "content-type".to_owned(),
                "application/json; charset=utf-8".to_owned(),
            ),
            ("x-version".to_owned(), "42".to_owned()),
        ];
        let seen = observed(&headers, BODY);
        // (assertion, None when it holds or Some(the actual value the failure reports))
        let cases: Vec<(Value, Option<Value>)> = vec![
            (
                json!({"type": "statusCode", "operator": "equals", "value": 200}),
                None,
            ),
            (
                json!({"type": "statusCode", "operator": "lessThan", "value": 200}),
                Some(json!(200)),
            ),
            (
                json!({"type": "responseTime", "operator": "lessThan", "value": 500}),
                None,
            ),
            (
                json!({"type": "responseTime", "operator": "lessThan", "value": 100}),
                Some(json!(120)),
            ),
            (
                json!({"type": "header", "name": "Content-Type", "operator": "contains", "value": "json"}),
                None,
            ),
            (
                json!({"type": "header", "name": "x-version", "operator": "equals", "value": "42"}),
                None,
            ),
            (
                json!({"type": "header", "name": "x-missing", "operator": "notExists"}),
                None,
            ),
            (
                json!({"type": "header", "name": "x-missing", "operator": "exists"}),
                Some(Value::Null),
            ),
            (
                json!({"type": "header", "name": "x-version", "operator": "notEquals", "value": "42"}),
                Some(json!("42")),
            ),
            (
                json!({"type": "body", "operator": "contains", "value": "\"a1\""}),
                None,
            ),
            (
                json!({"type": "body", "operator": "notContains", "value": "error"}),
                None,
            ),
            (
                json!({"type": "jsonPath", "path": "$.data.items[0].id", "operator": "equals", "value": "a1"}),
                None,
            ),
            (
                json!({"type": "jsonPath", "path": "$.data.items[0].id", "operator": "equals", "value": "zz"}),
                Some(json!("a1")),
            ),
            (
                json!({"type": "jsonPath", "path": "$.data.count", "operator": "greaterThan", "value": 2}),
                None,
            ),
            (
                json!({"type": "jsonPath", "path": "$.data.count", "operator": "lessThanOrEqual", "value": 2}),
                Some(json!(3)),
            ),
            (
                json!({"type": "jsonPath", "path": "$.data.count", "operator": "equals", "value": 3.0}),
                None,
            ),
            (
                json!({"type": "jsonPath", "path": "$.data.price", "operator": "lessThan", "value": 10}),
                None,
            ),
            (
                json!({"type": "jsonPath", "path": "$.data.tags", "operator": "contains", "value": "y"}),
                None,
            ),
            (
                json!({"type": "jsonPath", "path": "$.data.tags", "operator": "notContains", "value": "y"}),
                Some(json!(["x", "y"])),
            ),
            (
                json!({"type": "jsonPath", "path": "$.data", "operator": "contains", "value": "count"}),
                None,
            ),
            (
                json!({"type": "jsonPath", "path": "$.data.items[*].n", "operator": "contains", "value": 3}),
                None,
            ),
            (
                json!({"type": "jsonPath", "path": "$.data.flag", "operator": "equals", "value": true}),
                None,
            ),
            (
                json!({"type": "jsonPath", "path": "$.data.none", "operator": "exists"}),
                None,
            ),
            (
                json!({"type": "jsonPath", "path": "$.data.gone", "operator": "notExists"}),
                None,
            ),
            (
                json!({"type": "jsonPath", "path": "$.data.gone", "operator": "equals", "value": 1}),
                Some(Value::Null),
            ),
            (
                json!({"type": "jsonPath", "path": "$.data.tags", "operator": "greaterThan", "value": 1}),
                Some(json!(["x", "y"])),
            ),
        ];
        for (definition, want) in cases {
            let a = assertion(definition.clone());
            let got = first_failure(std::slice::from_ref(&a), &seen);
            match (got, want) {
                (None, None) => {}
                (Some(f), Some(actual)) => {
                    assert_eq!(f.actual, actual, "{definition}");
                    assert_eq!(f.index, 0);
                    assert!(f.message.starts_with("assertion 0 ("), "{}", f.message);
                }
                (got, want) => panic!("{definition}: got {got:?}, want failure {want:?}"),
            }
        }
    }

    #[test]
    fn the_first_failure_is_explained() {
        let assertions = vec![
            assertion(json!({"type": "statusCode", "operator": "equals", "value": 200})),
            assertion(
                json!({"type": "jsonPath", "path": "$.data.items[0].id", "operator": "equals", "value": "b2"}),
            ),
            assertion(json!({"type": "body", "operator": "contains", "value": "never"})),
        ];
        let f = first_failure(&assertions, &observed(&[], BODY)).unwrap();
        assert_eq!(f.index, 1);
        assert_eq!(f.expected, "equals \"b2\"");
        assert_eq!(f.actual, json!("a1"));
        assert_eq!(
            f.message,
            "assertion 1 (jsonPath $.data.items[0].id equals \"b2\") failed: the actual value is \"a1\""
        );
        assert_eq!(
            f.assertion_json(),
            json!({"type": "jsonPath", "path": "$.data.items[0].id", "operator": "equals", "value": "b2", "index": 1})
        );
        let long = format!(
            "{{\"data\": {{\"items\": [{{\"id\": \"{}\"}}]}}}}",
            "é".repeat(2000)
        );
        let clipped = first_failure(&assertions[1..], &observed(&[], &long)).unwrap();
        let actual = clipped.actual.as_str().unwrap();
        assert!(actual.len() < MAX_ACTUAL + 40, "{}", actual.len());
        assert!(actual.ends_with("... (4000 bytes)"), "{actual}");
        let not_json = first_failure(&assertions[1..], &observed(&[], "<html>")).unwrap();
        assert!(
            not_json.message.contains("the body is not JSON"),
            "{}",
            not_json.message
        );
    }

    #[test]
    fn definitions_are_validated_field_by_field() {
        let cases: Vec<(Value, Vec<&str>)> = vec![
            (json!({"type": "nope", "operator": "equals"}), vec!["type"]),
            (
                json!({"type": "header", "operator": "greaterThan", "value": "1"}),
                vec!["operator", "name"],
            ),
            (
                json!({"type": "jsonPath", "path": "$..x", "operator": "exists"}),
                vec!["path"],
            ),
            (
                json!({"type": "jsonPath", "operator": "exists", "value": 1}),
                vec!["path", "value"],
            ),
            (
                json!({"type": "statusCode", "operator": "equals", "value": "200"}),
                vec!["value"],
            ),
            (
                json!({"type": "statusCode", "operator": "equals"}),
                vec!["value"],
            ),
            (
                json!({"type": "body", "operator": "contains", "value": 5, "path": "$"}),
                vec!["path", "value"],
            ),
            (
                json!({"type": "responseTime", "operator": "greaterThan", "value": 5}),
                vec!["operator"],
            ),
            (
                json!({"type": "body", "operator": "contains", "value": "x", "extra": 1}),
                vec!["extra"],
            ),
        ];
        for (definition, fields) in cases {
            let errors = Assertion::from_json(&definition).unwrap_err();
            let got: Vec<&str> = errors.iter().map(|(f, _)| f.as_str()).collect();
            assert_eq!(got, fields, "{definition}: {errors:?}");
        }
    }
}
