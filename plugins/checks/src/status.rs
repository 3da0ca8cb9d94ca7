//! Expected HTTP status codes: ranges such as `200-299`, single codes such as
//! `204`, and the `2xx` shorthand.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// An inclusive range of status codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusRange {
    pub low: u16,
    pub high: u16,
}

impl StatusRange {
    /// `200-299`, what a check expects when it says nothing.
    pub const SUCCESS: StatusRange = StatusRange {
        low: 200,
        high: 299,
    };

    pub fn contains(&self, status: u16) -> bool {
        (self.low..=self.high).contains(&status)
    }

    /// A range from a JSON string (`"200-299"`, `"2xx"`, `"204"`) or
    /// integer (`204`).
    pub fn from_json(value: &Value) -> Result<StatusRange, String> {
        match value {
            Value::String(text) => text.parse(),
            Value::Number(n) => match n.as_u64().and_then(|n| u16::try_from(n).ok()) {
                Some(code) => StatusRange::single(code),
                None => Err(format!("{n} is not a status code from 100 to 599")),
            },
            other => Err(format!(
                "{other} must be a string such as \"200-299\" or a status code"
            )),
        }
    }

    fn single(code: u16) -> Result<StatusRange, String> {
        StatusRange::new(code, code)
    }

    fn new(low: u16, high: u16) -> Result<StatusRange, String> {
        let valid = |c: u16| (100..=599).contains(&c);
        if !valid(low) || !valid(high) {
            return Err(format!(
                "{} is not made of status codes from 100 to 599",
                StatusRange { low, high }
            ));
        }
        if low > high {
            return Err(format!("{low}-{high} starts after it ends"));
        }
        Ok(StatusRange { low, high })
    }
}

/// Whether `status` is in any of `ranges`.
pub fn matches(ranges: &[StatusRange], status: u16) -> bool {
    ranges.iter().any(|r| r.contains(status))
}

/// `ranges` as a list for messages: `200-299, 304`.
pub fn describe(ranges: &[StatusRange]) -> String {
    ranges
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

impl FromStr for StatusRange {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let number = |part: &str| {
            part.trim()
                .parse::<u16>()
                .map_err(|_| format!("{text} is not a status code or a range such as 200-299"))
        };
        if let Some(class) = text.strip_suffix("xx").or_else(|| text.strip_suffix("XX")) {
            let digit = number(class)?;
            return StatusRange::new(digit * 100, digit * 100 + 99);
        }
        match text.split_once('-') {
            Some((low, high)) => StatusRange::new(number(low)?, number(high)?),
            None => StatusRange::single(number(text)?),
        }
    }
}

impl fmt::Display for StatusRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.low == self.high {
            write!(f, "{}", self.low)
        } else {
            write!(f, "{}-{}", self.low, self.high)
        }
    }
}

impl Serialize for StatusRange {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for StatusRange {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Input, and the range or a piece of the error.
    type Case = (Value, Result<(u16, u16), &'static str>);

    #[test]
    fn parses_ranges_codes_and_classes() {
        let cases: &[Case] = &[
            (json!("200-299"), Ok((200, 299))),
            (json!(" 301 - 302 "), Ok((301, 302))),
            (json!("204"), Ok((204, 204))),
            (json!(404), Ok((404, 404))),
            (json!("5xx"), Ok((500, 599))),
            (json!("299-200"), Err("starts after it ends")),
            (json!("600"), Err("100 to 599")),
            (json!("6xx"), Err("100 to 599")),
            (json!("ok"), Err("not a status code")),
            (json!(70000), Err("100 to 599")),
            (json!(true), Err("must be a string")),
        ];
        for (input, want) in cases {
            let got = StatusRange::from_json(input).map(|r| (r.low, r.high));
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, *want, "{input}"),
                (Err(e), Err(want)) => assert!(e.contains(want), "{input}: {e}"),
                (got, want) => panic!("{input}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn matches_any_range_and_round_trips() {
        let ranges: Vec<StatusRange> = serde_json::from_value(json!(["200-299", "304"])).unwrap();
        assert!(matches(&ranges, 200) && matches(&ranges, 299) && matches(&ranges, 304));
        assert!(!matches(&ranges, 301) && !matches(&ranges, 500));
        assert_eq!(describe(&ranges), "200-299, 304");
        assert_eq!(
            serde_json::to_value(&ranges).unwrap(),
            json!(["200-299", "304"])
        );
    }
}
