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
//! A name the apps crate marked [`Target::Loading`] (its replicas are
//! starting) holds each request until they serve, up to [`HOLD`], then
//! answers 503 with `Retry-After`; only a name that is no app answers 404.
//!
//! Each app may have a [`Chain`] of edge filters (`filters`), which the
//! edge runs before it forwards a request; the apps crate sets it per name
//! ([`Edge::set_filters`]), replacing it whole.
//!
//! Custom domains are a second table ([`Edge::set_domains`]): a verified
//! domain routes to its app, over HTTPS with the certificate the agent
//! obtained for it ([`tls`]), and its plain HTTP requests are redirected
//! to HTTPS once it has one. ACME HTTP-01 challenges the agent published
//! ([`Edge::set_challenges`]) are answered on any name, before routing.
//!
//! Apps that turned their CDN on ([`Edge::set_cdn`]) are answered
//! through the edge's shared cache ([`cdn`]); a change of the replicas an
//! app routes to (another deployment live) purges the app's responses.
//!
//! **Architecture Invariant:** the edge knows nothing of the database or
//! the API; the apps crate tells it what serves each name.

pub mod cdn;
pub mod demand;
mod filter_counters;
#[cfg(test)]
mod filter_tests;
pub mod filters;
mod forwarded;
mod hop;
#[cfg(test)]
mod keepalive_tests;
pub mod page_views;
mod rules;
mod serve;
pub mod tls;
#[cfg(test)]
mod tls_tests;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use arc_swap::ArcSwap;
use plateau_edge_rules::RuleSet;
use plateau_runner::Replicas;
use rustls::sign::CertifiedKey;
use tokio::sync::watch;

pub use cdn::Cdn;
pub use filters::{Chain, Enabled, Filter};
pub use serve::serve;
pub use tls::serve_tls;

/// What the edge serves for one verified custom domain.
#[derive(Clone)]
pub struct DomainRoute {
    /// The app it routes to.
    pub slug: String,
    /// Its certificate, once issued: HTTPS serves it and plain HTTP
    /// redirects there.
    pub cert: Option<Arc<CertifiedKey>>,
}

/// What answers for one app's name.
#[derive(Clone)]
pub enum Target {
    /// The live deployment's replicas.
    Serving(Arc<dyn Replicas>),
    /// Paused: answers 503 without running anything.
    Paused,
    /// Its replicas are starting (the host just started, a first
    /// deployment, a resume): requests wait for them, up to [`HOLD`].
    Loading,
    /// An app with no live deployment: answers 503 until one is.
    Undeployed,
}

/// How long a request to a loading app waits for its replicas before the
/// edge answers 503 with `Retry-After`.
pub const HOLD: Duration = Duration::from_secs(10);

/// The routing table of this host.
pub struct Edge {
    domain: String,
    routes: ArcSwap<HashMap<String, Target>>,
    /// Each app's rules, for the apps that have some.
    rules: ArcSwap<HashMap<String, Arc<RuleSet>>>,
    /// The edge filters of each name that has some.
    filters: ArcSwap<HashMap<String, Arc<Chain>>>,
    /// Bumped on every change of the table, for the requests that wait.
    changed: watch::Sender<u64>,
    /// How long a request to a loading app waits.
    hold: Duration,
    /// Verified custom domains, lowercase, without a trailing dot.
    domains: ArcSwap<HashMap<String, DomainRoute>>,
    /// HTTP-01 answers by challenge token.
    challenges: ArcSwap<HashMap<String, String>>,
    /// The operator's certificate for `*.<domain>`.
    wildcard: ArcSwap<Option<Arc<CertifiedKey>>>,
    /// The public port of the HTTPS listener; 0 while there is none.
    https_port: std::sync::atomic::AtomicU16,
    /// The shared cache of the apps that turned it on.
    cdn: Cdn,
    /// Requests and bytes per app, and apps asleep.
    demand: demand::Demand,
    /// What the hosts' edges prove their forwarding with
    /// ([`forwarded`]); none on one host.
    forwarding_token: Option<Arc<str>>,
    /// The apps whose page views are reported, by slug.
    analytics: ArcSwap<HashMap<String, page_views::Counted>>,
    /// Where page views go; none: nothing is reported.
    page_views: Option<Arc<dyn page_views::PageViewSink>>,
}

/// The memory of an edge's CDN unless it is given one ([`Edge::with_cdn`]).
const CDN_MEMORY: u64 = 64 << 20;

impl Edge {
    /// An edge serving `<slug>.<domain>`.
    pub fn new(domain: &str) -> Edge {
        Edge {
            domain: domain.trim_matches('.').to_ascii_lowercase(),
            routes: ArcSwap::from_pointee(HashMap::new()),
            rules: ArcSwap::from_pointee(HashMap::new()),
            filters: ArcSwap::from_pointee(HashMap::new()),
            changed: watch::Sender::new(0),
            hold: HOLD,
            domains: ArcSwap::from_pointee(HashMap::new()),
            challenges: ArcSwap::from_pointee(HashMap::new()),
            wildcard: ArcSwap::from_pointee(None),
            https_port: std::sync::atomic::AtomicU16::new(0),
            cdn: Cdn::new(cdn::Limits::memory(CDN_MEMORY))
                .expect("a CDN without a directory opens nothing"),
            demand: demand::Demand::default(),
            forwarding_token: None,
            analytics: ArcSwap::from_pointee(HashMap::new()),
            page_views: None,
        }
    }

    /// This edge reporting the page views of the apps whose analytics are
    /// on to `sink` ([`page_views`]).
    pub fn with_page_views(mut self, sink: Arc<dyn page_views::PageViewSink>) -> Edge {
        self.page_views = Some(sink);
        self
    }

    /// Reports `slug`'s page views as those of `counted` from now on, or
    /// stops.
    pub fn set_analytics(&self, slug: &str, counted: Option<page_views::Counted>) {
        let slug = slug.to_ascii_lowercase();
        if self.analytics.load().get(&slug) == counted.as_ref() {
            return;
        }
        self.analytics.rcu(|apps| {
            let mut next = HashMap::clone(apps);
            match &counted {
                Some(c) => next.insert(slug.clone(), c.clone()),
                None => next.remove(&slug),
            };
            next
        });
    }

    /// The app `slug`'s page views are reported as, and where, when on.
    pub(crate) fn analytics(
        &self,
        slug: &str,
    ) -> Option<(page_views::Counted, Arc<dyn page_views::PageViewSink>)> {
        let sink = self.page_views.clone()?;
        Some((self.analytics.load().get(slug)?.clone(), sink))
    }

    /// This edge trusting the client a request names when it carries
    /// `token`, which it sends with the requests it forwards to other
    /// hosts' edges.
    pub fn with_forwarding_token(mut self, token: String) -> Edge {
        self.forwarding_token = Some(token.into());
        self
    }

    /// The token the hosts' edges prove their forwarding with.
    pub fn forwarding_token(&self) -> Option<Arc<str>> {
        self.forwarding_token.clone()
    }

    /// What this edge sees of each app's demand; wakes apps asleep.
    pub fn demand(&self) -> &demand::Demand {
        &self.demand
    }

    /// This edge with `cdn` as its cache.
    pub fn with_cdn(mut self, cdn: Cdn) -> Edge {
        self.cdn = cdn;
        self
    }

    pub fn cdn(&self) -> &Cdn {
        &self.cdn
    }

    /// Answers `slug`'s GET and HEAD requests through the CDN from now on,
    /// or stops (dropping what it stored).
    pub fn set_cdn(&self, slug: &str, on: bool) {
        self.cdn.set_enabled(slug, on);
    }

    /// Replaces the table of custom domains, atomically: a domain left
    /// out stops serving from the next request and handshake.
    pub fn set_domains(&self, domains: HashMap<String, DomainRoute>) {
        self.domains.store(Arc::new(domains));
    }

    /// The route of custom domain `name`.
    pub fn custom_domain(&self, name: &str) -> Option<DomainRoute> {
        self.domains.load().get(&normalize(name)).cloned()
    }

    /// Replaces the HTTP-01 answers (token to key authorization).
    pub fn set_challenges(&self, challenges: HashMap<String, String>) {
        self.challenges.store(Arc::new(challenges));
    }

    /// Adds one HTTP-01 answer.
    pub fn add_challenge(&self, token: &str, answer: &str) {
        self.challenges.rcu(|all| {
            let mut next = HashMap::clone(all);
            next.insert(token.to_owned(), answer.to_owned());
            next
        });
    }

    /// The HTTP-01 answer for `token`.
    pub fn challenge(&self, token: &str) -> Option<String> {
        self.challenges.load().get(token).cloned()
    }

    /// Serves `cert` for every `<slug>.<domain>` over HTTPS.
    pub fn set_wildcard(&self, cert: Option<Arc<CertifiedKey>>) {
        self.wildcard.store(Arc::new(cert));
    }

    /// Records the public port of the HTTPS listener (for redirects).
    pub fn set_https_port(&self, port: u16) {
        self.https_port
            .store(port, std::sync::atomic::Ordering::Relaxed);
    }

    /// The public port of the HTTPS listener, when there is one.
    pub fn https_port(&self) -> Option<u16> {
        match self.https_port.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            port => Some(port),
        }
    }

    /// The certificate a TLS handshake for `name` gets.
    pub fn certificate_for(&self, name: &str) -> Option<Arc<CertifiedKey>> {
        if let Some(route) = self.custom_domain(name) {
            return route.cert;
        }
        self.slug_of(name)?;
        Option::clone(&self.wildcard.load())
    }

    /// This edge holding requests to a loading app for `hold` instead of
    /// [`HOLD`].
    pub fn with_hold(mut self, hold: Duration) -> Edge {
        self.hold = hold;
        self
    }

    pub fn hold(&self) -> Duration {
        self.hold
    }

    pub fn domain(&self) -> &str {
        &self.domain
    }

    /// The app's address behind this edge.
    pub fn host_name(&self, slug: &str) -> String {
        format!("{slug}.{}", self.domain)
    }

    /// Points `slug` at `target`, atomically; other replicas than before
    /// (another deployment) purge its CDN.
    pub fn set(&self, slug: &str, target: Target) {
        let before = self.routes.rcu(|routes| {
            let mut next = HashMap::clone(routes);
            next.insert(slug.to_owned(), target.clone());
            next
        });
        let replaced = match (before.get(slug), &target) {
            (Some(Target::Serving(old)), Target::Serving(new)) => {
                !std::ptr::addr_eq(Arc::as_ptr(old), Arc::as_ptr(new))
            }
            (_, Target::Serving(_)) => true,
            _ => false,
        };
        if replaced {
            self.cdn.purge(slug, "");
        }
        self.changed.send_modify(|n| *n += 1);
    }

    /// Stops routing `slug`.
    pub fn remove(&self, slug: &str) {
        self.routes.rcu(|routes| {
            let mut next = HashMap::clone(routes);
            next.remove(slug);
            next
        });
        self.set_rules(slug, RuleSet::default());
        self.set_filters(slug, None);
        self.cdn.forget(slug);
        self.changed.send_modify(|n| *n += 1);
    }

    /// Applies `rules` to `slug`'s requests from now on (none when empty).
    pub fn set_rules(&self, slug: &str, rules: RuleSet) {
        if rules.is_empty() && !self.rules.load().contains_key(slug) {
            return;
        }
        let rules = Arc::new(rules);
        self.rules.rcu(|all| {
            let mut next = HashMap::clone(all);
            if rules.is_empty() {
                next.remove(slug);
            } else {
                next.insert(slug.to_owned(), rules.clone());
            }
            next
        });
    }

    /// Runs `chain` on the requests to `slug` from now on (none: no
    /// filters); requests under way finish on the chain they started with.
    pub fn set_filters(&self, slug: &str, chain: Option<Arc<Chain>>) {
        self.filters.rcu(|filters| {
            let mut next = HashMap::clone(filters);
            match &chain {
                Some(chain) if !chain.filters.is_empty() => {
                    next.insert(slug.to_owned(), chain.clone());
                }
                _ => {
                    next.remove(slug);
                }
            }
            next
        });
    }

    /// The rules `slug`'s requests go through, if it has any.
    pub fn rules_of(&self, slug: &str) -> Option<Arc<RuleSet>> {
        self.rules.load().get(slug).cloned()
    }

    /// The edge filters of `slug`, if it has some.
    pub fn filters(&self, slug: &str) -> Option<Arc<Chain>> {
        self.filters.load().get(slug).cloned()
    }

    /// What serves `slug` now.
    pub fn get(&self, slug: &str) -> Option<Target> {
        self.routes.load().get(slug).cloned()
    }

    /// What serves `slug`, waiting up to `hold` while it is loading.
    pub async fn get_ready(&self, slug: &str, hold: Duration) -> Option<Target> {
        let mut changes = self.changed.subscribe();
        let deadline = tokio::time::Instant::now() + hold;
        loop {
            let target = self.get(slug);
            if !matches!(target, Some(Target::Loading)) {
                return target;
            }
            if tokio::time::timeout_at(deadline, changes.changed())
                .await
                .is_err()
            {
                return target;
            }
        }
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

/// A host name as the tables key it: lowercase, no port, no final dot.
fn normalize(host: &str) -> String {
    let host = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    host.strip_suffix('.').unwrap_or(host).to_ascii_lowercase()
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
