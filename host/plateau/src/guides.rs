//! The guides of `docs/` served under `/docs`: `/docs` is the index
//! (`docs/README.md`), `/docs/apps` (or `/docs/apps.md`) a guide, as
//! Markdown. They are compiled into the binary, so a server always serves
//! the guides of its own version.

use axum::Router;
use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

/// Every guide, by the name in its URL.
pub const GUIDES: &[(&str, &str)] = &[
    ("apps", include_str!("../../../docs/apps.md")),
    ("databases", include_str!("../../../docs/databases.md")),
    ("caches", include_str!("../../../docs/caches.md")),
    ("manifest", include_str!("../../../docs/manifest.md")),
    ("storage", include_str!("../../../docs/storage.md")),
    ("registry", include_str!("../../../docs/registry.md")),
    ("queues", include_str!("../../../docs/queues.md")),
    ("cron", include_str!("../../../docs/cron.md")),
    ("workflows", include_str!("../../../docs/workflows.md")),
    ("email", include_str!("../../../docs/email.md")),
    ("checks", include_str!("../../../docs/checks.md")),
    ("heartbeats", include_str!("../../../docs/heartbeats.md")),
    ("flags", include_str!("../../../docs/flags.md")),
    (
        "observability",
        include_str!("../../../docs/observability.md"),
    ),
    ("webhooks", include_str!("../../../docs/webhooks.md")),
    ("log-drains", include_str!("../../../docs/log-drains.md")),
    ("errors", include_str!("../../../docs/errors.md")),
    ("otel", include_str!("../../../docs/otel.md")),
    ("config", include_str!("../../../docs/config.md")),
    (
        "status-pages",
        include_str!("../../../docs/status-pages.md"),
    ),
    ("analytics", include_str!("../../../docs/analytics.md")),
    ("plugins", include_str!("../../../docs/plugins.md")),
    ("members", include_str!("../../../docs/members.md")),
    ("rewards", include_str!("../../../docs/rewards.md")),
    ("waf", include_str!("../../../docs/waf.md")),
    ("bots", include_str!("../../../docs/bots.md")),
];

const INDEX: &str = include_str!("../../../docs/README.md");

/// Adds the `/docs` routes to `app`.
pub fn mount(app: Router) -> Router {
    app.route("/docs", get(|| async { markdown(INDEX) }))
        .route("/docs/", get(|| async { markdown(INDEX) }))
        .route("/docs/{name}", get(guide))
}

async fn guide(Path(name): Path<String>) -> Response {
    let name = name.strip_suffix(".md").unwrap_or(&name);
    match GUIDES.iter().find(|(n, _)| *n == name) {
        Some((_, text)) => markdown(text),
        None => (
            StatusCode::NOT_FOUND,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "no such guide: see /docs for the list\n",
        )
            .into_response(),
    }
}

fn markdown(text: &'static str) -> Response {
    (
        [(header::CONTENT_TYPE, "text/markdown; charset=utf-8")],
        text,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The index links every guide, and every link of the index is served.
    #[test]
    fn the_index_and_the_guides_agree() {
        for (name, _) in GUIDES {
            assert!(
                INDEX.contains(&format!("({name}.md)")),
                "the index does not link {name}"
            );
        }
        let linked = INDEX.matches(".md)").count();
        assert_eq!(
            linked,
            GUIDES.len(),
            "the index links a guide that is not served"
        );
    }
}
