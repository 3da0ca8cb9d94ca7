//! The rules of a drain's fields as sent (create, and a change merged over
//! the stored drain): its destination URL, sources, apps and level.

use plateau_sdk::{ApiError, Validator};
use serde::Deserialize;
use utoipa::ToSchema;

use crate::level::Level;

pub const MAX_URL_BYTES: usize = 2048;
pub const MAX_APPS: usize = 50;

/// Where a drain sends: an HTTPS (or HTTP) endpoint, or a syslog server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    Http { url: String },
    Syslog { host: String, port: u16, tls: bool },
}

impl Destination {
    pub fn kind(&self) -> &'static str {
        match self {
            Destination::Http { .. } => "https",
            Destination::Syslog { .. } => "syslog",
        }
    }
}

/// Reads `https://...` / `http://...`, or `syslog+tls://host:port` (RFC
/// 5425, port 6514 if omitted) and `syslog://host:port` (plain TCP, RFC
/// 6587, port 514 if omitted).
pub fn parse_url(url: &str) -> Option<Destination> {
    if url.len() > MAX_URL_BYTES
        || url
            .bytes()
            .any(|b| b.is_ascii_whitespace() || b.is_ascii_control())
    {
        return None;
    }
    if (url.starts_with("https://") && url.len() > "https://".len())
        || (url.starts_with("http://") && url.len() > "http://".len())
    {
        return Some(Destination::Http {
            url: url.to_owned(),
        });
    }
    let (rest, tls, default_port) = if let Some(rest) = url.strip_prefix("syslog+tls://") {
        (rest, true, 6514)
    } else if let Some(rest) = url.strip_prefix("syslog://") {
        (rest, false, 514)
    } else {
        return None;
    };
    let authority = rest.trim_end_matches('/');
    if authority.contains('/') || authority.contains('@') {
        return None;
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') => (h, p.parse::<u16>().ok().filter(|p| *p != 0)?),
        _ => (authority, default_port),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let valid_host = !host.is_empty()
        && host.len() <= 253
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:".contains(&b));
    valid_host.then(|| Destination::Syslog {
        host: host.to_owned(),
        port,
        tls,
    })
}

/// A drain's fields as sent.
#[derive(Debug, Default, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DrainInput {
    pub name: Option<String>,
    pub url: Option<String>,
    /// `app` and `event`; `build`, `database` and `cache` are refused (no
    /// line store to read them from yet).
    pub sources: Option<Vec<String>>,
    /// App ids; empty or absent: every app of the organisation.
    pub apps: Option<Vec<String>>,
    pub min_level: Option<String>,
    /// `PATCH` only.
    pub enabled: Option<bool>,
}

/// A drain's fields after the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    pub name: String,
    pub url: String,
    pub destination: Destination,
    pub sources: Vec<String>,
    pub apps: Vec<String>,
    pub min_level: Level,
    pub enabled: bool,
}

/// The sources a drain may forward.
pub const SOURCES: [&str; 2] = ["app", "event"];

impl DrainInput {
    /// The rules, every problem at once.
    pub fn check(self) -> Result<Checked, ApiError> {
        let mut v = Validator::new();
        let name = self.name.unwrap_or_default();
        v.name("name", &name);
        let url = self.url.unwrap_or_default();
        let destination = parse_url(&url);
        v.check(
            destination.is_some(),
            "url",
            "must be an https:// URL, or syslog+tls://host:port or syslog://host:port, of at most 2048 bytes",
        );
        let mut sources = self.sources.unwrap_or_else(|| vec!["app".to_owned()]);
        v.check(
            !sources.is_empty(),
            "sources",
            "must list app, event or both",
        );
        for (i, source) in sources.iter().enumerate() {
            let message = match source.as_str() {
                "build" | "database" | "cache" => {
                    "is not forwarded yet: only app and event are (build, database and cache logs have no line store to follow)"
                }
                _ => "must be app or event",
            };
            v.check(
                SOURCES.contains(&source.as_str()),
                format!("sources[{i}]"),
                message,
            );
        }
        sources.sort();
        sources.dedup();
        let apps = self.apps.unwrap_or_default();
        v.check(
            apps.len() <= MAX_APPS,
            "apps",
            "must list at most 50 app ids",
        );
        for (i, app) in apps.iter().enumerate() {
            v.check(
                plateau_sdk::ids::is_id(app, "app"),
                format!("apps[{i}]"),
                "must be an app id (app_...)",
            );
        }
        let min_level = match self.min_level.as_deref() {
            None => Some(Level::Debug),
            Some(l) => Level::parse(l),
        };
        v.check(
            min_level.is_some(),
            "minLevel",
            "must be debug, info, warning or error",
        );
        v.finish()?;
        Ok(Checked {
            name,
            url,
            destination: destination.expect("checked above"),
            sources,
            apps,
            min_level: min_level.expect("checked above"),
            enabled: self.enabled.unwrap_or(true),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_an_http_endpoint_or_a_syslog_server() {
        assert_eq!(
            parse_url("syslog+tls://logs.example.com"),
            Some(Destination::Syslog {
                host: "logs.example.com".into(),
                port: 6514,
                tls: true
            })
        );
        assert_eq!(
            parse_url("syslog://127.0.0.1:5140/"),
            Some(Destination::Syslog {
                host: "127.0.0.1".into(),
                port: 5140,
                tls: false
            })
        );
        assert!(matches!(
            parse_url("https://in.example.com/x?y=1"),
            Some(Destination::Http { .. })
        ));
        for bad in [
            "ftp://x",
            "syslog://",
            "syslog://h:0",
            "syslog://h:70000",
            "syslog://u@h",
            "syslog://h/path",
            "https://",
            "https://a b",
        ] {
            assert_eq!(parse_url(bad), None, "{bad}");
        }
    }

    #[test]
    fn every_bad_field_is_named() {
        let input = DrainInput {
            name: Some(String::new()),
            url: Some("ftp://x".into()),
            sources: Some(vec!["app".into(), "database".into()]),
            apps: Some(vec!["nope".into()]),
            min_level: Some("loud".into()),
            enabled: None,
        };
        let err = input.check().unwrap_err();
        let fields: Vec<&str> = err.errors().iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["name", "url", "sources[1]", "apps[0]", "minLevel"]);
    }
}
