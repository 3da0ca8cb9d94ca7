//! Settings of apps on this host.

/// How apps are served and kept.
#[derive(Clone, Debug)]
pub struct AppsConfig {
    /// Apps are served at `<slug>.<domain>` (`PLATEAU_APPS_DOMAIN`).
    pub domain: String,
    /// The port of the edge in apps' URLs; omitted when 80.
    pub edge_port: u16,
    /// Log lines kept per app.
    pub log_retention: i64,
    /// Registries besides this host's own that apps may pull from,
    /// anonymously (`host[:port]`).
    pub allowed_registries: Vec<String>,
    /// Prefixes of the git URLs apps may build from
    /// (`PLATEAU_APPS_GIT_ALLOW`); none: no git source is allowed.
    pub git_allow: Vec<String>,
    /// Scratch space of builds (sources checked out, archives unpacked);
    /// none: this host builds no sources.
    pub builds_dir: Option<std::path::PathBuf>,
}

impl AppsConfig {
    pub fn new(domain: &str, edge_port: u16) -> AppsConfig {
        AppsConfig {
            domain: domain.trim_matches('.').to_ascii_lowercase(),
            edge_port,
            log_retention: 1000,
            allowed_registries: Vec::new(),
            git_allow: Vec::new(),
            builds_dir: None,
        }
    }

    /// The address of the app with `slug`.
    pub fn url(&self, slug: &str) -> String {
        match self.edge_port {
            80 => format!("http://{slug}.{}", self.domain),
            port => format!("http://{slug}.{}:{port}", self.domain),
        }
    }
}
