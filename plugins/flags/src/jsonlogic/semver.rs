//! flagd's `sem_ver` operator: `{"sem_ver": [version, op, target]}` with `=`, `!=`, `<`, `<=`,
//! `>`, `>=`, `^` (same major version) and `~` (same major and minor version).
//!
//! Versions follow flagd (which uses Go's `golang.org/x/mod/semver`): a leading `v` or `V` is
//! ignored, `1` and `1.2` are completed to `1.0.0` and `1.2.0` (but not when they carry a
//! pre-release), numbers in the context are read as their decimal text (`1.2` is `1.2.0`), build
//! metadata is ignored, and pre-releases order as SemVer 2.0 says. Anything else gives `null`.

use super::coerce::number_to_string;
use serde_json::Value;
use std::cmp::Ordering;

/// A parsed semantic version. Numeric parts are kept as digit strings so any size compares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemVer {
    major: String,
    minor: String,
    patch: String,
    prerelease: Vec<String>,
}

impl SemVer {
    /// Parses `1.2.3-rc.1+build`, with an optional leading `v` or `V` and partial versions.
    pub fn parse(text: &str) -> Option<SemVer> {
        let text = text.strip_prefix(['v', 'V']).unwrap_or(text);
        let (text, build) = match text.split_once('+') {
            Some((version, build)) => (version, Some(build)),
            None => (text, None),
        };
        if let Some(build) = build
            && !build
                .split('.')
                .all(|id| !id.is_empty() && id.bytes().all(ident_byte))
        {
            return None;
        }
        let (core, prerelease) = match text.split_once('-') {
            Some((core, pre)) => (core, Some(pre)),
            None => (text, None),
        };
        let parts: Vec<&str> = core.split('.').collect();
        if parts.iter().any(|p| !is_number(p)) {
            return None;
        }
        // Shorthands (`1`, `1.2`) may not carry a pre-release or build metadata.
        let complete = parts.len() == 3;
        if !complete && (prerelease.is_some() || build.is_some()) {
            return None;
        }
        let prerelease = match prerelease {
            None => Vec::new(),
            Some(pre) => {
                let ids: Vec<String> = pre.split('.').map(str::to_owned).collect();
                // Numeric identifiers may not have leading zeros.
                let numeric = |id: &str| id.bytes().all(|b| b.is_ascii_digit());
                let valid = |id: &String| {
                    !id.is_empty() && id.bytes().all(ident_byte) && (!numeric(id) || is_number(id))
                };
                if !ids.iter().all(valid) {
                    return None;
                }
                ids
            }
        };
        match parts.as_slice() {
            [major] => Some(SemVer::new(major, "0", "0", prerelease)),
            [major, minor] => Some(SemVer::new(major, minor, "0", prerelease)),
            [major, minor, patch] => Some(SemVer::new(major, minor, patch, prerelease)),
            _ => None,
        }
    }

    fn new(major: &str, minor: &str, patch: &str, prerelease: Vec<String>) -> SemVer {
        SemVer {
            major: major.to_owned(),
            minor: minor.to_owned(),
            patch: patch.to_owned(),
            prerelease,
        }
    }
}

impl Ord for SemVer {
    fn cmp(&self, other: &SemVer) -> Ordering {
        compare_numbers(&self.major, &other.major)
            .then_with(|| compare_numbers(&self.minor, &other.minor))
            .then_with(|| compare_numbers(&self.patch, &other.patch))
            .then_with(|| compare_prerelease(&self.prerelease, &other.prerelease))
    }
}

impl PartialOrd for SemVer {
    fn partial_cmp(&self, other: &SemVer) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Applies a `sem_ver` operator; `None` for an unknown operator.
pub fn sem_ver(version: &SemVer, operator: &str, target: &SemVer) -> Option<bool> {
    let ordering = version.cmp(target);
    Some(match operator {
        "=" => ordering.is_eq(),
        "!=" => ordering.is_ne(),
        "<" => ordering.is_lt(),
        "<=" => ordering.is_le(),
        ">" => ordering.is_gt(),
        ">=" => ordering.is_ge(),
        "^" => compare_numbers(&version.major, &target.major).is_eq(),
        "~" => {
            compare_numbers(&version.major, &target.major).is_eq()
                && compare_numbers(&version.minor, &target.minor).is_eq()
        }
        _ => return None,
    })
}

/// The operator on already evaluated arguments: `true`, `false`, or `null` for bad input.
pub(super) fn evaluate(args: &[Value]) -> Value {
    let [version, Value::String(operator), target] = args else {
        return Value::Null;
    };
    match (as_version(version), as_version(target)) {
        (Some(version), Some(target)) => {
            sem_ver(&version, operator, &target).map_or(Value::Null, Value::Bool)
        }
        _ => Value::Null,
    }
}

fn as_version(value: &Value) -> Option<SemVer> {
    match value {
        Value::String(text) => SemVer::parse(text),
        Value::Number(n) => SemVer::parse(&number_to_string(n)),
        _ => None,
    }
}

fn ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

/// Digits without a leading zero (a lone `0` is fine).
fn is_number(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) && (s == "0" || !s.starts_with('0'))
}

fn compare_numbers(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

fn compare_prerelease(a: &[String], b: &[String]) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => return Ordering::Equal,
        // A release sorts after any of its pre-releases.
        (true, false) => return Ordering::Greater,
        (false, true) => return Ordering::Less,
        (false, false) => {}
    }
    for (x, y) in a.iter().zip(b) {
        let numeric = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        let ordering = match (numeric(x), numeric(y)) {
            (true, true) => compare_numbers(x, y),
            (true, false) => Ordering::Less,
            (false, true) => Ordering::Greater,
            (false, false) => x.cmp(y),
        };
        if ordering.is_ne() {
            return ordering;
        }
    }
    a.len().cmp(&b.len())
}

#[cfg(test)]
mod tests {
    use super::SemVer;

    #[test]
    fn parses_like_go_semver() {
        for valid in [
            "1.2.3",
            "v1.2.3",
            "V1",
            "1.2",
            "1.0.0-rc.1+b.5",
            "10.20.30-0a.1",
        ] {
            assert!(SemVer::parse(valid).is_some(), "{valid}");
        }
        for invalid in [
            "", "v", "1.2.3.4", "01.2.3", "1.2-rc", "1+b", "1.2.3-01", "1.2.3-", "x",
        ] {
            assert!(SemVer::parse(invalid).is_none(), "{invalid}");
        }
    }

    #[test]
    fn pre_releases_order_as_semver_says() {
        let order = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
        ];
        for pair in order.windows(2) {
            let (a, b) = (SemVer::parse(pair[0]), SemVer::parse(pair[1]));
            assert!(a < b, "{} < {}", pair[0], pair[1]);
        }
    }
}
