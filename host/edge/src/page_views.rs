//! Page views at the edge, for web analytics without a script: for an
//! app whose analytics are on ([`crate::Edge::set_analytics`]), each GET
//! the app answers with an HTML document becomes a [`PageView`] handed to
//! the edge's [`PageViewSink`] (the agent's, which passes them on to the
//! analytics plugin). Recorded by the edge the client reached, never by
//! the runner's edge a request was forwarded to, so a page view counts
//! once. Pushing never waits: the sink drops what it cannot keep.

use std::net::IpAddr;

use http::{Method, header};

/// The longest path, query, referrer or user agent kept.
pub const MAX_FIELD: usize = 512;

/// What the edge saw of one page view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageView {
    /// The app's organisation and id, as `set_analytics` named them.
    pub org_id: String,
    pub app_id: String,
    /// The Host the client named, without a port.
    pub host: String,
    /// As the client sent it, before the app's rules rewrote anything.
    pub path: String,
    pub query: String,
    pub referrer: String,
    pub user_agent: String,
    /// The client's address: the sink must not keep it.
    pub client_ip: IpAddr,
    /// The app's answer.
    pub status: u16,
    /// Milliseconds since the Unix epoch.
    pub at: i64,
}

/// Where the edge hands page views.
pub trait PageViewSink: Send + Sync {
    /// Takes a page view without waiting.
    fn push(&self, view: PageView);
}

/// The app an analytics switch names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Counted {
    pub org_id: String,
    pub app_id: String,
}

fn cut(value: &str) -> String {
    value.chars().take(MAX_FIELD).collect()
}

/// The facts of a request that may become a page view, taken before the
/// request is rewritten and forwarded; `None` for anything but a GET.
pub(crate) fn candidate(
    counted: &Counted,
    parts: &http::request::Parts,
    host: &str,
    client_ip: IpAddr,
) -> Option<PageView> {
    if parts.method != Method::GET {
        return None;
    }
    let text = |name: header::HeaderName| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(cut)
            .unwrap_or_default()
    };
    let host = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    Some(PageView {
        org_id: counted.org_id.clone(),
        app_id: counted.app_id.clone(),
        host: host.to_ascii_lowercase(),
        path: cut(parts.uri.path()),
        query: cut(parts.uri.query().unwrap_or("")),
        referrer: text(header::REFERER),
        user_agent: text(header::USER_AGENT),
        client_ip,
        status: 0,
        at: 0,
    })
}

/// Whether an answer's head makes its request a page view: an HTML
/// document (`text/html`), whatever the status (the plugin decides
/// what it counts).
pub(crate) fn is_page(headers: &http::HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| {
            ct.split(';')
                .next()
                .is_some_and(|t| t.trim().eq_ignore_ascii_case("text/html"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_gets_answered_with_html_are_page_views() {
        let counted = Counted {
            org_id: "org_1".into(),
            app_id: "app_1".into(),
        };
        let ip: IpAddr = "203.0.113.5".parse().unwrap();
        let get = http::Request::get("/blog?utm_source=x")
            .header("referer", "https://news.example/")
            .body(())
            .unwrap()
            .into_parts()
            .0;
        let view = candidate(&counted, &get, "Shop.Example.com:8080", ip).unwrap();
        assert_eq!(
            (view.host.as_str(), view.path.as_str(), view.query.as_str()),
            ("shop.example.com", "/blog", "utm_source=x")
        );
        assert_eq!(view.referrer, "https://news.example/");
        let post = http::Request::post("/").body(()).unwrap().into_parts().0;
        assert_eq!(candidate(&counted, &post, "a", ip), None);
        let mut headers = http::HeaderMap::new();
        assert!(!is_page(&headers));
        headers.insert(
            header::CONTENT_TYPE,
            "text/html; charset=utf-8".parse().unwrap(),
        );
        assert!(is_page(&headers));
        headers.insert(header::CONTENT_TYPE, "application/json".parse().unwrap());
        assert!(!is_page(&headers));
    }
}
