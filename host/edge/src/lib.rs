//! The HTTP edge: its own listener (`PLATEAU_EDGE_LISTEN`), routing each
//! request by its Host name, `<slug>.<apps domain>`, to the live
//! deployment of that app.
//!
//! The routing table is one immutable map behind an `ArcSwap`: a deploy,
//! rollback or pause replaces an app's [`Target`] in one atomic store.
//! A request holds the `Arc` of the replicas it started on, so the old
//! deployment drains by itself: it serves the requests it already has and
//! is dropped when the last one ends.
//!
//! **Architecture Invariant:** the edge knows nothing of the database or
//! the API; the apps crate tells it what serves each name.

mod serve;

use std::collections::HashMap;
use std::sync::Arc;

use arc_swap::ArcSwap;
use plateau_runner::Replicas;

pub use serve::serve;

/// What answers for one app's name.
#[derive(Clone)]
pub enum Target {
    /// The live deployment's replicas.
    Serving(Arc<dyn Replicas>),
    /// Paused: answers 503 without running anything.
    Paused,
}

/// The routing table of this host.
pub struct Edge {
    domain: String,
    routes: ArcSwap<HashMap<String, Target>>,
}

impl Edge {
    /// An edge serving `<slug>.<domain>`.
    pub fn new(domain: &str) -> Edge {
        Edge {
            domain: domain.trim_matches('.').to_ascii_lowercase(),
            routes: ArcSwap::from_pointee(HashMap::new()),
        }
    }

    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The app's address behind this edge.
    pub fn host_name(&self, slug: &str) -> String {
        format!("{slug}.{}", self.domain)
    }

    /// Points `slug` at `target`, atomically.
    pub fn set(&self, slug: &str, target: Target) {
        self.routes.rcu(|routes| {
            let mut next = HashMap::clone(routes);
            next.insert(slug.to_owned(), target.clone());
            next
        });
    }

    /// Stops routing `slug`.
    pub fn remove(&self, slug: &str) {
        self.routes.rcu(|routes| {
            let mut next = HashMap::clone(routes);
            next.remove(slug);
            next
        });
    }

    /// What serves `slug` now.
    pub fn get(&self, slug: &str) -> Option<Target> {
        self.routes.load().get(slug).cloned()
    }

    /// The slug a Host header names, if it is one of this edge's names.
    pub fn slug_of<'a>(&self, host: &'a str) -> Option<&'a str> {
        let host = match host.rsplit_once(':') {
            Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
            _ => host,
        };
        let host = host.strip_suffix('.').unwrap_or(host);
        let cut = host.len().checked_sub(self.domain.len() + 1)?;
        let (slug, rest) = host.split_at(cut);
        (rest.len() == self.domain.len() + 1
            && rest.as_bytes()[0] == b'.'
            && rest[1..].eq_ignore_ascii_case(&self.domain)
            && !slug.is_empty()
            && !slug.contains('.'))
        .then_some(slug)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_from_host_names() {
        let edge = Edge::new("apps.localhost");
        for (host, slug) in [
            ("hello.apps.localhost", Some("hello")),
            ("hello.apps.localhost:8081", Some("hello")),
            ("hello.APPS.localhost.", Some("hello")),
            ("a.b.apps.localhost", None),
            ("apps.localhost", None),
            (".apps.localhost", None),
            ("hello.example.com", None),
            ("helloapps.localhost", None),
        ] {
            assert_eq!(edge.slug_of(host), slug, "{host}");
        }
    }
}
