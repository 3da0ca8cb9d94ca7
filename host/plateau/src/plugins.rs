//! Starting the plugin host for `plateau serve`: the runtime, the built-in
//! plugins, the sync with other hosts and the fuel meter.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use plateau_api::AppState;
use plateau_plugin_host::admin_jobs::HostClock;
use plateau_plugin_host::cursors::SignedCursors;
use plateau_plugin_host::storage::SqlStorage;
use plateau_plugin_host::{Dispatcher, EventDelivery, JobWorker, Meter, PluginHost, PluginsConfig};
use plateau_plugin_runtime::app_env::AppEnv;
use plateau_plugin_runtime::commands::Commands;
use plateau_plugin_runtime::egress::{LocalEdge, parse_allow_list};
use plateau_plugin_runtime::{
    Clock, ManualClock, PluginRuntime, RuntimeConfig, Services, SystemClock,
};
use plateau_seal::{KEY_LEN, Sealer};
use plateau_store::{Db, settings};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use tokio::task::JoinHandle;

pub struct Setup {
    pub egress_allow: String,
    /// `PLATEAU_EGRESS_CA_FILE`: extra roots for plugins' outbound TLS.
    pub egress_ca_file: Option<PathBuf>,
    pub config: Option<PathBuf>,
    /// `PLATEAU_SECRET_KEY`, base64.
    pub secret_key: Option<String>,
    /// `PLATEAU_CLOCK=manual`: a host clock moved only through `/admin/clock`.
    pub manual_clock: bool,
    /// `PLATEAU_PLUGIN_PERF_MAP`: a perf map of compiled guests.
    pub perf_map: bool,
    /// `PLATEAU_PLUGIN_CACHE_DIR`: compiled components, by digest and engine.
    pub cache_dir: PathBuf,
    /// What runs the `runner` capability's commands.
    pub commands: Option<Arc<dyn Commands>>,
    /// What sets the `app-env` capability's layers of apps' environments.
    pub app_env: Option<Arc<dyn AppEnv>>,
    /// `PLATEAU_APPS_DOMAIN`: plugins' plain-HTTP requests to names under
    /// it go to the app edge the agent of `data_dir` runs.
    pub apps_domain: String,
    pub data_dir: PathBuf,
}

pub struct Running {
    pub dispatcher: Dispatcher,
    pub jobs: Arc<JobWorker>,
    pub clock: HostClock,
    tasks: Vec<JoinHandle<()>>,
}

/// How many plugin jobs one host runs at once.
const JOB_CONCURRENCY: usize = 64;

/// Paths of the core API that no plugin may claim.
const CORE_PREFIXES: &[&str] = &[
    "/me",
    "/usage",
    "/metrics",
    "/alarms",
    "/anomalies",
    "/spend",
    "/tokens",
    "/notifications",
    "/connect",
    "/projects",
    "/events",
    "/audit",
    "/changelog",
    "/admin",
    "/health",
    "/openapi.json",
    "/plugins",
    "/v2",
    "/caches",
    "/databases",
    "/apps",
    "/edge-filters",
    "/waf",
];

pub async fn start(setup: &Setup, app: &AppState) -> anyhow::Result<Running> {
    let config = match &setup.config {
        Some(path) => PluginsConfig::load(path).map_err(anyhow::Error::msg)?,
        None => PluginsConfig::default(),
    };
    let mut runtime_config = RuntimeConfig::new(&setup.cache_dir);
    runtime_config.perf_map = setup.perf_map;
    runtime_config.egress_allow = parse_allow_list(&setup.egress_allow)
        .map_err(|e| anyhow::anyhow!("PLATEAU_EGRESS_ALLOW: {e}"))?;
    if let Some(path) = &setup.egress_ca_file {
        runtime_config.extra_tls_roots = read_ca_file(path)?;
    }
    let data_dir = setup.data_dir.clone();
    runtime_config.local_edge = Some(LocalEdge {
        domain: setup.apps_domain.clone(),
        // Read at each new connection: a restarted agent may listen anew.
        address: Arc::new(move || crate::dataplane::edge_address(&data_dir).ok()),
    });
    runtime_config
        .reserved_prefixes
        .extend(CORE_PREFIXES.iter().map(|p| (*p).to_owned()));
    let manual = setup
        .manual_clock
        .then(|| Arc::new(ManualClock::new(SystemClock.now_millis())));
    let clock = HostClock {
        clock: match &manual {
            Some(manual) => manual.clone(),
            None => Arc::new(SystemClock),
        },
        manual,
    };
    let services = Services {
        storage: Arc::new(SqlStorage::new(app.db().clone())),
        clock: clock.clock.clone(),
        cursors: Arc::new(SignedCursors(app.cursors().clone())),
        sealer: Arc::new(Sealer::new(&secret_key(setup, app.db()).await?)),
        commands: setup.commands.clone(),
        logs: Some(Arc::new(crate::platform_logs::HostLogs::new(
            app.db().clone(),
        ))),
        app_env: setup.app_env.clone(),
    };
    let runtime =
        PluginRuntime::new(runtime_config, services).context("starting the plugin runtime")?;
    let host = Arc::new(PluginHost::new(app.clone(), runtime, config));
    host.install_builtins(&plateau_plugin_artifacts::builtin_plugins())
        .await
        .context("installing the built-in plugins")?;
    host.sync().await.context("loading the active plugins")?;
    let meter = Arc::new(Meter::default());
    let jobs = Arc::new(JobWorker::new(
        host.clone(),
        app.db().clone(),
        clock.clock.clone(),
        JOB_CONCURRENCY,
        Duration::from_millis(100),
    ));
    let delivery = Arc::new(EventDelivery::new(
        host.clone(),
        app.db().clone(),
        clock.clock.clone(),
    ));
    let tasks = vec![
        tokio::spawn(jobs.clone().run()),
        tokio::spawn(delivery.run(Duration::from_millis(250))),
        tokio::spawn(host.clone().keep_in_sync(Duration::from_secs(1))),
        tokio::spawn(
            meter
                .clone()
                .keep_flushing(app.db().clone(), Duration::from_secs(5)),
        ),
    ];
    Ok(Running {
        dispatcher: Dispatcher { host, meter },
        jobs,
        clock,
        tasks,
    })
}

/// The certificates of `PLATEAU_EGRESS_CA_FILE` (DER): every certificate
/// of a PEM file, or the file itself when it is not PEM.
fn read_ca_file(path: &Path) -> anyhow::Result<Vec<Vec<u8>>> {
    let bytes = std::fs::read(path)
        .with_context(|| format!("PLATEAU_EGRESS_CA_FILE: reading {}", path.display()))?;
    if !bytes.trim_ascii_start().starts_with(b"-----BEGIN") {
        return Ok(vec![bytes]);
    }
    let certificates = CertificateDer::pem_slice_iter(&bytes)
        .map(|c| c.map(|c| c.to_vec()))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| {
            anyhow::anyhow!(
                "PLATEAU_EGRESS_CA_FILE: {} is not a valid PEM file: {e:?}",
                path.display()
            )
        })?;
    anyhow::ensure!(
        !certificates.is_empty(),
        "PLATEAU_EGRESS_CA_FILE: {} has no CERTIFICATE block",
        path.display()
    );
    Ok(certificates)
}

/// The key of the plugins' `secrets`: `PLATEAU_SECRET_KEY`, or one
/// generated once and kept in the database.
pub async fn secret_key(setup: &Setup, db: &Db) -> anyhow::Result<[u8; KEY_LEN]> {
    let encoded = match &setup.secret_key {
        Some(key) => key.clone(),
        None => {
            let generated = Sealer::generate_key().map_err(anyhow::Error::msg)?;
            settings::get_or_init(db, "plugin_secret_key", || BASE64.encode(generated)).await?
        }
    };
    let bytes = BASE64
        .decode(encoded.trim())
        .context("PLATEAU_SECRET_KEY must be base64")?;
    bytes
        .try_into()
        .map_err(|_| anyhow::anyhow!("PLATEAU_SECRET_KEY must be {KEY_LEN} bytes in base64"))
}

impl Running {
    pub async fn stop(self, db: &Db) {
        for task in &self.tasks {
            task.abort();
        }
        self.dispatcher.meter.flush(db).await;
    }
}
