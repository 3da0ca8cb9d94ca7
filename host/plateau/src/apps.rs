//! Starting apps. `plateau serve` runs the apps service with this host's
//! registry (the API, builds, pulls) and reaches the data plane over its
//! control socket; `plateau agent` runs the data plane ([`plane`]): the
//! Wasm runner, the container runner (when runc is installed) and the
//! edge on its own listener, whose address it leaves in
//! `<data dir>/agent/edge` for `plateau serve` to print.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use plateau_apps::autoscale::{AutoscaleConfig, Autoscaler};
use plateau_apps::build::local::LocalBuilder;
use plateau_apps::control::{self, AgentLink};
use plateau_apps::domains::DomainsConfig;
use plateau_apps::domains::acme::{AcmeConfig, Issuer};
use plateau_apps::{Apps, AppsConfig, Containers, Plane, RegistryAccess, Volumes};
use plateau_edge::Edge;
use plateau_registry::Registry;
use plateau_registry::auth::{Access, issue_bearer};
use plateau_runner::container::{ContainerRunner, Egress};
use plateau_runner::wasm::WasmRunner;
use plateau_seal::Sealer;
use plateau_store::Db;
use tokio::task::JoinHandle;

/// Where apps are served.
#[derive(Args, Clone, Debug)]
pub struct AppsArgs {
    /// The apps edge's address, bound by `plateau agent`; port 0 picks a
    /// free port, which a restarted agent takes again when it can.
    #[arg(long, env = "PLATEAU_EDGE_LISTEN", default_value = "127.0.0.1:8081")]
    pub edge_listen: SocketAddr,
    /// Apps are served at `<slug>.<this domain>`; `apps.localhost`
    /// resolves to loopback in curl and browsers.
    #[arg(long, env = "PLATEAU_APPS_DOMAIN", default_value = "apps.localhost")]
    pub apps_domain: String,
    /// Registries besides this host's own that apps may pull images from,
    /// anonymously: `host[:port]`, comma-separated.
    #[arg(long, env = "PLATEAU_APPS_REGISTRIES", default_value = "")]
    pub apps_registries: String,
    /// Prefixes of the git URLs apps may be built from, comma-separated
    /// (`https://github.com/acme/`); `file://` and `git://` URLs only when
    /// a prefix names them. Empty: no git source.
    #[arg(long, env = "PLATEAU_APPS_GIT_ALLOW", default_value = "")]
    pub apps_git_allow: String,
    /// The largest source archive an upload takes, in MiB.
    #[arg(long, env = "PLATEAU_APPS_UPLOAD_MAX_MB", default_value_t = 100)]
    pub apps_upload_max_mb: u64,
    /// How long a stored source archive that no deployment builds is
    /// kept, in seconds; then it and its upload are removed.
    #[arg(
        long,
        env = "PLATEAU_APPS_UPLOAD_KEEP_SECONDS",
        default_value_t = 86_400
    )]
    pub apps_upload_keep_seconds: u64,
    /// How long a build (of a git or uploaded source) may run, in seconds;
    /// past it the deployment fails with `build_timeout`.
    #[arg(
        long,
        env = "PLATEAU_APPS_BUILD_TIMEOUT_SECONDS",
        default_value_t = 280
    )]
    pub apps_build_timeout_seconds: u64,
    /// Memory a build may use, in MiB; past it the deployment fails with
    /// `build_oom`.
    #[arg(long, env = "PLATEAU_APPS_BUILD_MEMORY_MB", default_value_t = 2048)]
    pub apps_build_memory_mb: u64,
    /// CPUs a build (buildah or cargo and all they start) may keep busy.
    #[arg(long, env = "PLATEAU_APPS_BUILD_CPUS", default_value_t = 1)]
    pub apps_build_cpus: u32,
    /// Build Rust crates for `wasm32-wasip2` (a `Cargo.toml` and no
    /// `Dockerfile`) with this host's toolchain and crate cache, offline.
    /// Cargo, build scripts and procedural macros run in the builds'
    /// sandbox (their own user, PID, network and mount namespaces, no
    /// capabilities, seccomp), like a Dockerfile's `RUN` steps. On by
    /// default; `false` refuses crates (a Dockerfile is then needed).
    #[arg(long, env = "PLATEAU_APPS_CARGO_BUILDS", default_value_t = true, action = clap::ArgAction::Set)]
    pub apps_cargo_builds: bool,
    /// Where apps' volume backups are stored: a directory, `file:///dir`
    /// or `s3://bucket[/prefix]` (AWS_* variables); default:
    /// `volume-backups` in the data directory.
    #[arg(long, env = "PLATEAU_APPS_VOLUME_BACKUP_STORE")]
    pub apps_volume_backup_store: Option<String>,
    /// The edge's HTTPS address, bound by `plateau agent` (custom domains
    /// with their certificates, and `<slug>.<apps domain>` with the
    /// wildcard certificate); unset: no HTTPS.
    #[arg(long, env = "PLATEAU_EDGE_TLS_LISTEN")]
    pub edge_tls_listen: Option<SocketAddr>,
    /// A PEM file with the certificate chain for `*.<apps domain>`, served
    /// over HTTPS for every app's own name; read again when it changes.
    #[arg(long, env = "PLATEAU_EDGE_TLS_CERT")]
    pub edge_tls_cert: Option<PathBuf>,
    /// The PEM file of that certificate's private key.
    #[arg(long, env = "PLATEAU_EDGE_TLS_KEY")]
    pub edge_tls_key: Option<PathBuf>,
    /// The edge's public addresses, comma-separated: the A and AAAA
    /// records custom domains may point at. Default: the address of
    /// `PLATEAU_EDGE_TLS_LISTEN` (or `PLATEAU_EDGE_LISTEN`) unless it is a
    /// wildcard address.
    #[arg(long, env = "PLATEAU_EDGE_ADDRESSES", default_value = "")]
    pub edge_addresses: String,
    /// The DNS servers that check custom domains' records: `system`, or
    /// comma-separated `ip[:port]`.
    #[arg(long, env = "PLATEAU_DNS_RESOLVER", default_value = "system")]
    pub dns_resolver: String,
    /// The ACME directory verified domains get certificates from
    /// (`https://acme-v02.api.letsencrypt.org/directory`); unset: none.
    #[arg(long, env = "PLATEAU_ACME_DIRECTORY")]
    pub acme_directory: Option<String>,
    /// A PEM file with the root certificate of the ACME server's own
    /// HTTPS, when it is not one the system trusts (a test CA).
    #[arg(long, env = "PLATEAU_ACME_CA_ROOT")]
    pub acme_ca_root: Option<PathBuf>,
    /// The contact address of the ACME account.
    #[arg(long, env = "PLATEAU_ACME_EMAIL")]
    pub acme_email: Option<String>,
    /// Renew a certificate this many days before it expires.
    #[arg(long, env = "PLATEAU_ACME_RENEW_DAYS", default_value_t = 30)]
    pub acme_renew_days: u64,
    /// The memory of the edge's CDN (all apps together), in MiB; bodies
    /// up to a sixteenth of it (at most 1 MiB) are kept there.
    #[arg(long, env = "PLATEAU_CDN_MEMORY_MB", default_value_t = 64)]
    pub cdn_memory_mb: u64,
    /// The disk of the edge's CDN, in MiB, under `<data dir>/agent/cdn`
    /// (emptied when the agent starts); larger bodies, up to a sixteenth
    /// of it, are kept there. 0: memory only.
    #[arg(long, env = "PLATEAU_CDN_DISK_MB", default_value_t = 1024)]
    pub cdn_disk_mb: u64,
    /// Autoscale: the window apps' CPU is averaged over, in milliseconds;
    /// replicas are added at most once per window.
    #[arg(
        long,
        env = "PLATEAU_APPS_AUTOSCALE_WINDOW_MS",
        default_value_t = 60_000
    )]
    pub apps_autoscale_window_ms: u64,
    /// Autoscale: how long after the last change replicas may be removed,
    /// in milliseconds.
    #[arg(
        long,
        env = "PLATEAU_APPS_AUTOSCALE_COOLDOWN_MS",
        default_value_t = 300_000
    )]
    pub apps_autoscale_cooldown_ms: u64,
    /// Autoscale: how long an app with `min` 0 runs without requests
    /// before it goes to zero replicas, in milliseconds.
    #[arg(
        long,
        env = "PLATEAU_APPS_AUTOSCALE_IDLE_MS",
        default_value_t = 300_000
    )]
    pub apps_autoscale_idle_ms: u64,
    /// The address other hosts' edges reach this host's edge at, when
    /// several hosts share one PostgreSQL (they forward the requests of
    /// the apps this host runs to it); default the edge's own address
    /// (loopback when it listens on every address).
    #[arg(long, env = "PLATEAU_RUNNER_ADDRESS")]
    pub runner_address: Option<SocketAddr>,
    /// How long a host's heartbeat holds, in milliseconds; the apps of a
    /// host silent for longer (without volumes) move to another host.
    #[arg(long, env = "PLATEAU_RUNNER_LEASE_MS", default_value_t = 10_000)]
    pub runner_lease_ms: u64,
}

impl AppsArgs {
    /// How custom domains are checked, from these settings.
    pub fn domains(&self) -> anyhow::Result<DomainsConfig> {
        let resolver = plateau_apps::domains::dns::parse_servers(&self.dns_resolver)
            .map_err(|e| anyhow::anyhow!("PLATEAU_DNS_RESOLVER: {e}"))?;
        let mut edge_addresses = Vec::new();
        for s in self
            .edge_addresses
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            edge_addresses.push(
                s.parse::<IpAddr>().with_context(|| {
                    format!("PLATEAU_EDGE_ADDRESSES: {s:?} is not an IP address")
                })?,
            );
        }
        if edge_addresses.is_empty() {
            let listen = self.edge_tls_listen.unwrap_or(self.edge_listen);
            if !listen.ip().is_unspecified() {
                edge_addresses.push(listen.ip());
            }
        }
        Ok(DomainsConfig {
            resolver,
            edge_addresses,
        })
    }

    /// How long a runner's heartbeat holds (at least a second).
    pub fn runner_lease(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.runner_lease_ms.max(1_000))
    }

    /// The autoscaler's timing, from these settings.
    pub fn autoscale(&self) -> AutoscaleConfig {
        let ms = |v: u64| std::time::Duration::from_millis(v.max(100));
        AutoscaleConfig {
            window: ms(self.apps_autoscale_window_ms),
            cooldown: ms(self.apps_autoscale_cooldown_ms),
            idle: ms(self.apps_autoscale_idle_ms),
        }
    }

    /// Where certificates come from, when a directory is set.
    pub fn acme(&self) -> Option<AcmeConfig> {
        Some(AcmeConfig {
            directory: self.acme_directory.clone()?,
            ca_root: self.acme_ca_root.clone(),
            email: self.acme_email.clone(),
            renew_before: std::time::Duration::from_secs(self.acme_renew_days * 86_400),
        })
    }
}

/// The volumes of this host's apps (`<data dir>/apps/volumes`), their
/// backups in `PLATEAU_APPS_VOLUME_BACKUP_STORE`; both processes build it.
pub fn volumes(
    args: &AppsArgs,
    db: &Db,
    data_dir: &Path,
    host_id: &str,
) -> anyhow::Result<Volumes> {
    let store = match &args.apps_volume_backup_store {
        Some(spec) => plateau_object_store::open(spec),
        None => plateau_object_store::local(&data_dir.join("volume-backups")),
    }
    .context("opening the volume backup store (PLATEAU_APPS_VOLUME_BACKUP_STORE)")?;
    Ok(Volumes::new(
        db.clone(),
        plateau_apps::volumes::root(data_dir),
        store,
        crate::host::locks(data_dir, "volumes")?,
        host_id,
    ))
}

pub struct Running {
    pub apps: Apps,
    /// This host's registry as apps (and cron jobs' commands) pull from it.
    pub registry: Arc<dyn RegistryAccess>,
    pub edge_addr: SocketAddr,
    tasks: Vec<JoinHandle<()>>,
}

/// This host's own registry, as apps pull from it: over loopback, with a
/// registry bearer of the organisation.
struct OwnRegistry {
    registry: Registry,
    local: String,
    names: Vec<String>,
}

impl RegistryAccess for OwnRegistry {
    fn is_own(&self, registry: &str) -> bool {
        self.names.iter().any(|n| n.eq_ignore_ascii_case(registry))
    }

    fn local_address(&self) -> String {
        self.local.clone()
    }

    fn pull_bearer(&self, org_id: &str, token_id: &str, user_id: Option<&str>) -> String {
        let access = Access {
            org_id: org_id.to_owned(),
            token_id: token_id.to_owned(),
            user_id: user_id.map(str::to_owned),
            ip: None,
            pull: true,
            push: false,
            token_expires_at: None,
        };
        issue_bearer(&self.registry, &access).0
    }

    fn push_bearer(&self, org_id: &str, token_id: &str, user_id: Option<&str>) -> String {
        let access = Access {
            org_id: org_id.to_owned(),
            token_id: token_id.to_owned(),
            user_id: user_id.map(str::to_owned),
            ip: None,
            pull: true,
            push: true,
            token_expires_at: None,
        };
        issue_bearer(&self.registry, &access).0
    }
}

/// How this host's agent fetches a Linux image it lacks: with the host's
/// own pull-only bearer (signed with the registry's key from the shared
/// database), sent only to this platform's registry: the host of
/// `PLATEAU_REGISTRY_URL` (over HTTPS when it is an `https://` address)
/// or a host's API address on this machine's loopback (plain HTTP).
pub struct HostFetch {
    signer: plateau_registry::auth::HostPullSigner,
    /// `PLATEAU_REGISTRY_URL`'s `host[:port]`, lowercase, and whether it
    /// is served over HTTPS.
    public: Option<(String, bool)>,
}

impl HostFetch {
    pub async fn new(db: &Db, registry_url: Option<&str>) -> anyhow::Result<HostFetch> {
        let signer = plateau_registry::auth::HostPullSigner::load(db)
            .await
            .context("reading the registry's signing key")?;
        let public = registry_url.and_then(|u| {
            let (rest, https) = match u.strip_prefix("https://") {
                Some(rest) => (rest, true),
                None => (u.strip_prefix("http://")?, false),
            };
            let host = rest.split('/').next().unwrap_or_default();
            Some((host.to_ascii_lowercase(), https))
        });
        Ok(HostFetch { signer, public })
    }

    fn is_public(&self, registry: &str) -> bool {
        self.public
            .as_ref()
            .is_some_and(|(h, _)| h.eq_ignore_ascii_case(registry))
    }
}

impl plateau_apps::fetch::HostPull for HostFetch {
    fn bearer(&self, org_id: &str) -> String {
        self.signer.bearer(org_id)
    }

    fn https(&self, registry: &str) -> bool {
        self.is_public(registry) && self.public.as_ref().is_some_and(|(_, https)| *https)
    }

    fn is_own(&self, registry: &str) -> bool {
        self.is_public(registry) || is_loopback_host(registry)
    }
}

/// Whether `host[:port]` names this machine's loopback.
fn is_loopback_host(registry: &str) -> bool {
    let host = match registry.rsplit_once(':') {
        Some((h, port)) if port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => registry,
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Builds the apps service of the API process, reaching the data plane
/// whose edge listens at `edge_addr`; [`Running::serve`] starts it once
/// the API serves.
#[allow(clippy::too_many_arguments)]
pub async fn prepare(
    args: &AppsArgs,
    db: &Db,
    secret_key: [u8; plateau_seal::KEY_LEN],
    registry: Registry,
    api_addr: SocketAddr,
    registry_url: Option<&str>,
    data_dir: &Path,
    edge_addr: SocketAddr,
) -> anyhow::Result<Running> {
    let local = api_addr.to_string();
    let mut names = vec![local.clone(), format!("localhost:{}", api_addr.port())];
    if let Some(url) = registry_url {
        let host = url
            .split_once("://")
            .map_or(url, |(_, rest)| rest)
            .trim_end_matches('/');
        names.push(host.to_owned());
    }
    let mut config = AppsConfig::new(&args.apps_domain, edge_addr.port());
    config.allowed_registries = args
        .apps_registries
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    config.git_allow = args
        .apps_git_allow
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect();
    config.builds_dir = Some(data_dir.join("apps/builds/scratch"));
    config.uploads_dir = Some(data_dir.join("apps/uploads"));
    config.upload_max_bytes = args.apps_upload_max_mb.max(1) << 20;
    config.upload_keep = std::time::Duration::from_secs(args.apps_upload_keep_seconds);
    config.build_timeout = std::time::Duration::from_secs(args.apps_build_timeout_seconds.max(1));
    config.build_memory_bytes = args.apps_build_memory_mb.max(16) << 20;
    config.build_cpus = args.apps_build_cpus.max(1);
    config.domains = args.domains()?;
    config.runner_lease = args.runner_lease();
    // Upload URLs point at the host's public address, which serves the
    // API and the registry alike.
    config.public_url = registry_url
        .map(|u| u.trim_end_matches('/').to_owned())
        .unwrap_or_else(|| format!("http://{api_addr}"));
    let builder = Arc::new(
        LocalBuilder::new(data_dir.join("apps/builds/buildah")).with_cargo(args.apps_cargo_builds),
    );
    let own: Arc<dyn RegistryAccess> = Arc::new(OwnRegistry {
        registry,
        local,
        names,
    });
    let mut apps = Apps::new(
        db.clone(),
        config,
        Arc::new(Sealer::new(&secret_key)),
        own.clone(),
    )
    .with_builder(builder)
    .with_upload_key(&secret_key)
    .with_agent(AgentLink::new(crate::dataplane::apps_socket(data_dir)));
    if plateau_runner::container::check_runc().is_ok() {
        apps = apps.with_images(data_dir.join("apps/images"));
    }
    Ok(Running {
        apps,
        registry: own,
        edge_addr,
        tasks: Vec::new(),
    })
}

/// The apps data plane of `plateau agent`: its edge, runners and
/// supervision, and the control socket the API process reaches it by.
pub struct PlaneRunning {
    tasks: Vec<JoinHandle<()>>,
    plane: Plane,
}

/// Starts the data plane: binds the edge (`PLATEAU_EDGE_LISTEN`), routes
/// every app of the database (loading until its replicas serve), then
/// serves the edge, follows the database and answers the API process.
/// Linux replicas reach beyond the host what `egress` allows; a Linux
/// image this host lacks is fetched through `fetch`. The host registers
/// as runner `host_id` before it follows any app.
#[allow(clippy::too_many_arguments)]
pub async fn plane(
    args: &AppsArgs,
    egress: Egress,
    fetch: Arc<dyn plateau_apps::fetch::HostPull>,
    db: &Db,
    secret_key: [u8; plateau_seal::KEY_LEN],
    data_dir: &Path,
    host_id: &str,
    timeouts: plateau_listen::Timeouts,
) -> anyhow::Result<PlaneRunning> {
    let listener = bind_edge(args.edge_listen, data_dir).await?;
    let edge_addr = listener.local_addr()?;
    let cdn_dir = data_dir.join("agent/cdn");
    let cdn = plateau_edge::Cdn::new(plateau_edge::cdn::Limits {
        memory_bytes: args.cdn_memory_mb << 20,
        disk_bytes: args.cdn_disk_mb << 20,
        dir: (args.cdn_disk_mb > 0).then_some(cdn_dir.clone()),
    })
    .with_context(|| format!("PLATEAU_CDN_DISK_MB: emptying {}", cdn_dir.display()))?;
    let edge = Arc::new(
        Edge::new(&args.apps_domain)
            .with_cdn(cdn)
            .with_forwarding_token(forwarding_token(&secret_key))
            .with_page_views(plateau_apps::analytics::PageViewQueue::start(db.clone())),
    );
    let wasm = Arc::new(WasmRunner::new().context("starting the apps runtime")?);
    let containers = containers(data_dir, egress, fetch);
    let log_retention = AppsConfig::new(&args.apps_domain, edge_addr.port()).log_retention;
    let sealer = Arc::new(Sealer::new(&secret_key));
    let resolver = args.domains()?.resolver;
    let filters = edge_filters(db, &sealer, &secret_key, data_dir, resolver);
    let plane = Plane::new(
        db.clone(),
        sealer,
        log_retention,
        wasm,
        containers,
        edge.clone(),
    )
    .with_filters(filters)
    .with_runner(runner_config(args, host_id, edge_addr));
    plateau_apps::placement::register(db, &runner_config(args, host_id, edge_addr))
        .await
        .context("registering this host as a runner")?;
    if let Err(e) = plane.prime().await {
        tracing::warn!(error = %e, "apps: routing the apps of the database");
    }
    let socket = crate::dataplane::apps_socket(data_dir);
    let control = control::bind(&socket)
        .with_context(|| format!("binding the apps control socket {}", socket.display()))?;
    let mut tasks = crate::edge_tls::start(args, &plane, timeouts).await?;
    tasks.push(tokio::spawn(plateau_edge::serve(listener, edge, timeouts)));
    tasks.push(tokio::spawn(control::serve(plane.clone(), control)));
    if let Some(acme) = args.acme() {
        let issuer = Issuer::new(
            db.clone(),
            Arc::new(Sealer::new(&secret_key)),
            plane.domains().clone(),
            acme,
        );
        tasks.push(tokio::spawn(issuer.keep_issuing()));
    }
    tasks.extend(plane.start());
    tasks.push(Autoscaler::start(plane.clone(), args.autoscale()));
    crate::dataplane::write_edge(data_dir, edge_addr)?;
    tracing::info!(edge = %edge_addr, "apps: the edge serves");
    Ok(PlaneRunning { tasks, plane })
}

/// This host as a runner: its edge's address as other hosts reach it.
fn runner_config(
    args: &AppsArgs,
    host_id: &str,
    edge_addr: SocketAddr,
) -> plateau_apps::placement::RunnerConfig {
    let edge_address = args.runner_address.unwrap_or_else(|| {
        let ip = match edge_addr.ip() {
            IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(std::net::Ipv4Addr::LOCALHOST),
            IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(std::net::Ipv6Addr::LOCALHOST),
            ip => ip,
        };
        SocketAddr::new(ip, edge_addr.port())
    });
    plateau_apps::placement::RunnerConfig {
        id: host_id.to_owned(),
        edge_address,
        lease: args.runner_lease(),
    }
}

/// The apps' firewall and edge filters: components load into a plugin
/// runtime of the agent's own (compiled components cached under
/// `<data dir>/apps/edge-filters`); challenge cookies are signed with a
/// key derived from the secret key, the same on every host; the bot
/// policies verify crawlers through `resolver` (`PLATEAU_DNS_RESOLVER`).
fn edge_filters(
    db: &Db,
    sealer: &Arc<Sealer>,
    secret_key: &[u8; plateau_seal::KEY_LEN],
    data_dir: &Path,
    resolver: Option<Vec<SocketAddr>>,
) -> plateau_apps::filters::EdgeFilters {
    use plateau_plugin_runtime::{
        MemoryStore, PlainCursorCodec, PluginRuntime, RuntimeConfig, Services, SystemClock,
    };
    use sha2::Digest;
    let services = Services {
        // A filter imports nothing of Plateau's: no storage is reached.
        storage: Arc::new(MemoryStore::new()),
        clock: Arc::new(SystemClock),
        cursors: Arc::new(PlainCursorCodec),
        sealer: sealer.clone(),
        commands: None,
        logs: None,
        app_env: None,
    };
    let config = RuntimeConfig::new(data_dir.join("apps/edge-filters"));
    let runtime = match PluginRuntime::new(config, services) {
        Ok(runtime) => Some(Arc::new(runtime)),
        Err(e) => {
            tracing::warn!(error = %e, "apps: edge filters will not run on this host");
            None
        }
    };
    let mut key = sha2::Sha256::new();
    key.update(b"plateau waf challenge\n");
    key.update(secret_key);
    plateau_apps::filters::EdgeFilters::new(db.clone(), runtime, key.finalize().into(), resolver)
}

/// Binds the edge at `listen`; with port 0, the port a previous agent of
/// this data directory had first, so the edge keeps its address across
/// restarts of the agent.
async fn bind_edge(listen: SocketAddr, data_dir: &Path) -> anyhow::Result<tokio::net::TcpListener> {
    if listen.port() == 0
        && let Ok(previous) = crate::dataplane::edge_address(data_dir)
        && previous.ip() == listen.ip()
        && let Ok(listener) = tokio::net::TcpListener::bind(previous).await
    {
        return Ok(listener);
    }
    tokio::net::TcpListener::bind(listen)
        .await
        .with_context(|| format!("PLATEAU_EDGE_LISTEN: listening on {listen}"))
}

impl PlaneRunning {
    pub fn plane(&self) -> &Plane {
        &self.plane
    }

    /// Stops the plane's tasks and writes the buffered log lines; the
    /// replicas stop with the process.
    pub async fn stop(self) {
        for task in &self.tasks {
            task.abort();
        }
        self.plane.flush_logs().await;
    }
}

/// The Linux container runtime under `<data dir>/apps`, when runc runs
/// here; without it apps run Wasm components only, and a Linux image's
/// deployment fails saying what to install.
fn containers(
    data_dir: &Path,
    egress: Egress,
    fetch: Arc<dyn plateau_apps::fetch::HostPull>,
) -> Option<Containers> {
    let root = data_dir.join("apps");
    match ContainerRunner::new(root.join("containers"), egress) {
        Ok(runner) => Some(Containers {
            runner: Arc::new(runner),
            images: root.join("images"),
            fetch: Some(fetch),
        }),
        Err(e) => {
            tracing::warn!(error = %e, "apps: Linux images will not run on this host");
            None
        }
    }
}

impl Running {
    /// Starts the apps' background work of the API process (pipelines a
    /// previous run left, the sweep of uploads).
    pub fn serve(&mut self) {
        self.tasks.extend(self.apps.start());
    }

    pub async fn stop(self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// What the hosts' edges prove their forwarding to each other with: the
/// same on every host of one database, since they share the secret key,
/// and no use to anyone who does not hold it.
fn forwarding_token(secret_key: &[u8]) -> String {
    use sha2::Digest as _;
    let mut h = sha2::Sha256::new();
    h.update(b"plateau edge forwarding\0");
    h.update(secret_key);
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::is_loopback_host;

    #[test]
    fn the_bearer_goes_to_loopback_registries_only() {
        for own in [
            "127.0.0.1:8080",
            "localhost:5000",
            "[::1]:8080",
            "127.0.0.2",
        ] {
            assert!(is_loopback_host(own), "{own}");
        }
        for other in [
            "docker.io",
            "ghcr.io:443",
            "10.0.0.1:5000",
            "127.0.0.1.example.com",
        ] {
            assert!(!is_loopback_host(other), "{other}");
        }
    }
}
