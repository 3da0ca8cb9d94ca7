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
    /// Where uploaded archives are kept until built; none: this host
    /// takes no uploads.
    pub uploads_dir: Option<std::path::PathBuf>,
    /// The largest archive an upload takes (`PLATEAU_APPS_UPLOAD_MAX_MB`).
    pub upload_max_bytes: u64,
    /// How long an upload URL is valid.
    pub upload_ttl: std::time::Duration,
    /// How long a stored archive that no deployment builds is kept
    /// (`PLATEAU_APPS_UPLOAD_KEEP_SECONDS`).
    pub upload_keep: std::time::Duration,
    /// The API's public address (`http://host:port`), for upload URLs.
    pub public_url: String,
    /// How long a build may run (`PLATEAU_APPS_BUILD_TIMEOUT_SECONDS`).
    pub build_timeout: std::time::Duration,
    /// Memory a build may use (`PLATEAU_APPS_BUILD_MEMORY_MB`).
    pub build_memory_bytes: u64,
    /// CPUs a build may keep busy (`PLATEAU_APPS_BUILD_CPUS`).
    pub build_cpus: u32,
    /// How custom domains are checked and pointed at.
    pub domains: crate::domains::DomainsConfig,
    /// How long a runner's heartbeat holds (`PLATEAU_RUNNER_LEASE_MS`).
    pub runner_lease: std::time::Duration,
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
            uploads_dir: None,
            upload_max_bytes: 100 << 20,
            upload_ttl: std::time::Duration::from_secs(15 * 60),
            upload_keep: std::time::Duration::from_secs(24 * 60 * 60),
            public_url: "http://127.0.0.1:8080".to_owned(),
            build_timeout: crate::build::BUILD_TIMEOUT,
            build_memory_bytes: crate::build::BUILD_MEMORY_BYTES,
            build_cpus: crate::build::BUILD_CPUS,
            domains: crate::domains::DomainsConfig::default(),
            runner_lease: std::time::Duration::from_secs(10),
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
