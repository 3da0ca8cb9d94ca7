//! An ingest body (Plausible's event shape) to a page view: the site's
//! domain, the path, the referrer's source and the UTM parameters. Bad
//! input is refused naming the field.

use plateau_sdk::{ApiError, Query, Validator, percent_decode};
use serde::Deserialize;
use utoipa::ToSchema;

/// What the script posts (Plausible's short names `n`, `u`, `d`, `r` are
/// accepted too). Sent as `text/plain` so a browser makes no preflight.
#[derive(Debug, Deserialize, ToSchema)]
pub struct EventInput {
    /// `pageview` (the only event counted today).
    #[serde(alias = "n")]
    pub name: String,
    /// The page's full URL, `https://example.com/blog?utm_source=news`.
    #[serde(alias = "u")]
    pub url: String,
    /// The site's domain as registered (`POST /analytics/sites`).
    #[serde(alias = "d")]
    pub domain: String,
    /// `document.referrer`; empty or absent for a direct visit.
    #[serde(default, alias = "r")]
    pub referrer: Option<String>,
}

/// The longest path, source or UTM value kept; longer ones are cut.
pub const MAX_VALUE: usize = 300;
/// The source of a visit with no referrer and no `utm_source`.
pub const DIRECT: &str = "Direct / None";

/// A page view's facts, before the visitor is known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageFacts {
    pub path: String,
    /// The referrer's host without `www.` (or `utm_source`, `ref`, `source`).
    pub source: String,
    pub utm_source: String,
    pub utm_medium: String,
    pub utm_campaign: String,
    pub utm_content: String,
    pub utm_term: String,
}

fn cut(value: &str) -> String {
    value
        .chars()
        .filter(|c| !c.is_control())
        .take(MAX_VALUE)
        .collect()
}

/// The host of an `http(s)` URL, lowercase, without port or `www.`.
pub fn host_of(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?.split(':').next()?;
    if host.is_empty() {
        return None;
    }
    let host = host.to_ascii_lowercase();
    Some(host.strip_prefix("www.").unwrap_or(&host).to_owned())
}

/// The facts of an event for the site `domain`; 400 naming the field.
pub fn facts(input: &EventInput, domain: &str) -> Result<PageFacts, ApiError> {
    let mut v = Validator::new();
    v.check(
        input.name == "pageview",
        "name",
        "must be pageview (the only event counted)",
    );
    let host = host_of(&input.url);
    v.check(
        host.is_some(),
        "url",
        "must be an http or https URL with a host",
    );
    v.finish()?;
    let rest = &input.url[input.url.find("://").map_or(0, |i| i + 3)..];
    let target = rest.find('/').map_or("/", |i| &rest[i..]);
    let target = target.split('#').next().unwrap_or("/");
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let query = Query::parse(query);
    let param = |name: &str| cut(query.get(name).unwrap_or_default().trim());
    let mut facts = PageFacts {
        path: cut(&percent_decode(if path.is_empty() { "/" } else { path })),
        utm_source: param("utm_source"),
        utm_medium: param("utm_medium"),
        utm_campaign: param("utm_campaign"),
        utm_content: param("utm_content"),
        utm_term: param("utm_term"),
        ..PageFacts::default()
    };
    let tagged = [facts.utm_source.clone(), param("ref"), param("source")]
        .into_iter()
        .find(|s| !s.is_empty());
    let referred = input
        .referrer
        .as_deref()
        .and_then(host_of)
        .filter(|h| h != domain && !h.ends_with(&format!(".{domain}")));
    facts.source = tagged
        .or(referred)
        .map_or_else(|| DIRECT.to_owned(), |s| cut(&s));
    Ok(facts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(url: &str, referrer: Option<&str>) -> EventInput {
        EventInput {
            name: "pageview".into(),
            url: url.into(),
            domain: "example.com".into(),
            referrer: referrer.map(str::to_owned),
        }
    }

    #[test]
    fn the_path_source_and_utm_come_from_the_url_and_referrer() {
        let f = facts(
            &input(
                "https://example.com/blog/a%20b?utm_source=news&utm_medium=email&utm_campaign=nov#top",
                Some("https://www.google.com/search?q=x"),
            ),
            "example.com",
        )
        .unwrap();
        assert_eq!(f.path, "/blog/a b");
        assert_eq!(f.source, "news");
        assert_eq!(f.utm_medium, "email");
        assert_eq!(f.utm_campaign, "nov");
        let g = facts(
            &input("https://example.com", Some("https://www.google.com/")),
            "example.com",
        )
        .unwrap();
        assert_eq!((g.path.as_str(), g.source.as_str()), ("/", "google.com"));
        let internal = facts(
            &input("https://example.com/b", Some("https://example.com/a")),
            "example.com",
        )
        .unwrap();
        assert_eq!(internal.source, DIRECT);
    }

    #[test]
    fn bad_events_name_the_field() {
        let mut bad = input("ftp://example.com/", None);
        bad.name = "click".into();
        let err = facts(&bad, "example.com").unwrap_err();
        let fields: Vec<_> = err.errors().iter().map(|e| e.field.as_str()).collect();
        assert_eq!(fields, ["name", "url"]);
    }
}
