//! The level of a line: read from what the app printed (a JSON object's
//! `level`, `severity` or `lvl`; logfmt's `level=`; or a level word among
//! the first words, such as `ERROR`, `[warn]` or `INFO:root:`), else from
//! its stream (stderr is `error`, stdout `info`). Events are `info`.

use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Debug,
    Info,
    Warning,
    Error,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warning => "warning",
            Level::Error => "error",
        }
    }

    /// The drain's `minLevel` values.
    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "debug" => Some(Level::Debug),
            "info" => Some(Level::Info),
            "warning" => Some(Level::Warning),
            "error" => Some(Level::Error),
            _ => None,
        }
    }

    /// The RFC 5424 severity: error 3, warning 4, info 6, debug 7.
    pub fn syslog_severity(self) -> u8 {
        match self {
            Level::Error => 3,
            Level::Warning => 4,
            Level::Info => 6,
            Level::Debug => 7,
        }
    }
}

/// A level word as apps print it, in any case.
fn word(w: &str) -> Option<Level> {
    match w.to_ascii_lowercase().as_str() {
        "trace" | "debug" | "dbug" | "verbose" => Some(Level::Debug),
        "info" | "information" | "notice" => Some(Level::Info),
        "warn" | "warning" => Some(Level::Warning),
        "error" | "err" | "fatal" | "critical" | "crit" | "panic" | "alert" | "emerg"
        | "emergency" | "severe" => Some(Level::Error),
        _ => None,
    }
}

/// The level of an app line printed on `channel`.
pub fn of_line(message: &str, channel: &str) -> Level {
    declared(message).unwrap_or(if channel == "stderr" {
        Level::Error
    } else {
        Level::Info
    })
}

/// The level the line itself declares, if any.
pub fn declared(message: &str) -> Option<Level> {
    let trimmed = message.trim_start();
    if trimmed.starts_with('{')
        && let Ok(Value::Object(map)) = serde_json::from_str::<Value>(trimmed)
    {
        return ["level", "severity", "lvl", "log.level"]
            .iter()
            .find_map(|k| map.get(*k).and_then(Value::as_str).and_then(word));
    }
    for token in trimmed.split_whitespace() {
        if let Some(value) = token.strip_prefix("level=") {
            return word(value.trim_matches('"'));
        }
    }
    trimmed.split_whitespace().take(4).find_map(|token| {
        let token = token.trim_matches(|c: char| "[]()<>|".contains(c));
        let head = token.split(':').next().unwrap_or(token);
        word(head)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_come_from_the_line_else_its_stream() {
        let cases = [
            (r#"{"level":"warn","msg":"x"}"#, "stdout", Level::Warning),
            (r#"{"severity":"ERROR"}"#, "stdout", Level::Error),
            ("ts=1 level=debug msg=x", "stderr", Level::Debug),
            ("2024-01-01T00:00:00Z [ERROR] boom", "stdout", Level::Error),
            ("INFO:root:started", "stderr", Level::Info),
            ("W: nothing known", "stdout", Level::Info),
            ("Traceback (most recent call last):", "stderr", Level::Error),
            ("listening on :8080", "stdout", Level::Info),
        ];
        for (line, channel, level) in cases {
            assert_eq!(of_line(line, channel), level, "{line}");
        }
        assert!(Level::Error > Level::Warning && Level::Info > Level::Debug);
    }
}
