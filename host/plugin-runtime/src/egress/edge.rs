//! This host's app edge as a destination: a plugin's plain-HTTP request to
//! an app of this host (`<slug>.<apps domain>`) goes to the edge's current
//! address, whatever the name resolves to and although the edge listens on
//! an address the policy refuses (loopback). The edge is what the internet
//! reaches too, so this grants nothing an outside client lacks.

use std::net::SocketAddr;
use std::sync::Arc;

/// Where this host's app edge listens, for the names it serves.
#[derive(Clone)]
pub struct LocalEdge {
    /// `apps.localhost`: the edge serves this name and every name below it.
    pub domain: String,
    /// The edge's address now (it can move when the data plane restarts);
    /// none while it is unknown.
    pub address: Arc<dyn Fn() -> Option<SocketAddr> + Send + Sync>,
}

impl std::fmt::Debug for LocalEdge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalEdge")
            .field("domain", &self.domain)
            .finish_non_exhaustive()
    }
}

impl LocalEdge {
    /// The edge's address if `host` (lowercase, no trailing dot) is one of
    /// its names.
    pub(super) fn route(&self, host: &str) -> Option<SocketAddr> {
        let domain = self.domain.trim_end_matches('.').to_ascii_lowercase();
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let served = !domain.is_empty()
            && (host == domain
                || host
                    .strip_suffix(domain.as_str())
                    .is_some_and(|label| label.ends_with('.') && label.len() > 1));
        if served { (self.address)() } else { None }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edge() -> LocalEdge {
        LocalEdge {
            domain: "apps.localhost".into(),
            address: Arc::new(|| Some("127.0.0.1:8081".parse().unwrap())),
        }
    }

    #[test]
    fn names_under_the_apps_domain_go_to_the_edge_and_no_others() {
        let edge = edge();
        assert!(edge.route("shop.apps.localhost").is_some());
        assert!(edge.route("Shop.Apps.Localhost.").is_some());
        assert!(edge.route("apps.localhost").is_some());
        assert!(edge.route("evilapps.localhost").is_none());
        assert!(edge.route("apps.localhost.example.com").is_none());
        assert!(edge.route(".apps.localhost").is_none());
        assert!(edge.route("localhost").is_none());
    }
}
