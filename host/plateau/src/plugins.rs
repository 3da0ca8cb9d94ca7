//! Starting the plugin host for `plateau serve`: the runtime, the built-in
//! plugins, the sync with other hosts and the fuel meter.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use plateau_api::AppState;
use plateau_plugin_runtime::egress::parse_allow_list;
use plateau_plugin_runtime::{PluginRuntime, RuntimeConfig, Services, SystemClock};
use plateau_plugins::cursors::SignedCursors;
use plateau_plugins::storage::SqlStorage;
use plateau_plugins::{Dispatcher, Meter, PluginHost, PluginsConfig};
use plateau_store::Db;
use tokio::task::JoinHandle;

pub struct Setup {
    pub data_dir: PathBuf,
    pub egress_allow: String,
    pub config: Option<PathBuf>,
}

pub struct Running {
    pub dispatcher: Dispatcher,
    tasks: Vec<JoinHandle<()>>,
}

/// Paths of the core API that no plugin may claim.
const CORE_PREFIXES: &[&str] = &[
    "/me",
    "/usage",
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
];

pub async fn start(setup: &Setup, app: &AppState) -> anyhow::Result<Running> {
    let config = match &setup.config {
        Some(path) => PluginsConfig::load(path).map_err(anyhow::Error::msg)?,
        None => PluginsConfig::default(),
    };
    let mut runtime_config = RuntimeConfig::new(setup.data_dir.join("plugin-cache"));
    runtime_config.egress_allow = parse_allow_list(&setup.egress_allow)
        .map_err(|e| anyhow::anyhow!("PLATEAU_EGRESS_ALLOW: {e}"))?;
    runtime_config
        .reserved_prefixes
        .extend(CORE_PREFIXES.iter().map(|p| (*p).to_owned()));
    let services = Services {
        storage: Arc::new(SqlStorage::new(app.db().clone())),
        clock: Arc::new(SystemClock),
        cursors: Arc::new(SignedCursors(app.cursors().clone())),
    };
    let runtime =
        PluginRuntime::new(runtime_config, services).context("starting the plugin runtime")?;
    let host = Arc::new(PluginHost::new(app.clone(), runtime, config));
    host.install_builtins(&plateau_plugin_artifacts::builtin_plugins())
        .await
        .context("installing the built-in plugins")?;
    host.sync().await.context("loading the active plugins")?;
    let meter = Arc::new(Meter::default());
    let tasks = vec![
        tokio::spawn(host.clone().keep_in_sync(Duration::from_secs(1))),
        tokio::spawn(
            meter
                .clone()
                .keep_flushing(app.db().clone(), Duration::from_secs(5)),
        ),
    ];
    Ok(Running {
        dispatcher: Dispatcher { host, meter },
        tasks,
    })
}

impl Running {
    pub async fn stop(self, db: &Db) {
        for task in &self.tasks {
            task.abort();
        }
        self.dispatcher.meter.flush(db).await;
    }
}

/// Mean time of `n` instantiations of the built-in flags component (fresh
/// store and instance, pooling allocator), in microseconds.
#[cfg(feature = "bench-native")]
pub async fn instantiation_micros(n: u32) -> anyhow::Result<f64> {
    use plateau_plugin_runtime::{MemoryStore, PlainCursorCodec, PluginSettings};
    let dir = std::env::temp_dir().join(format!("plateau-bench-{}", std::process::id()));
    let services = Services {
        storage: Arc::new(MemoryStore::default()),
        clock: Arc::new(SystemClock),
        cursors: Arc::new(PlainCursorCodec),
    };
    let runtime = PluginRuntime::new(RuntimeConfig::new(&dir), services)?;
    let (_, wasm) = plateau_plugin_artifacts::builtin_plugins()[0];
    let version = runtime
        .load(wasm, PluginSettings::all_granted())
        .await?
        .version;
    for _ in 0..200 {
        version.instantiate_only().await?;
    }
    let started = std::time::Instant::now();
    for _ in 0..n {
        version.instantiate_only().await?;
    }
    let micros = started.elapsed().as_secs_f64() * 1e6 / f64::from(n.max(1));
    let _ = std::fs::remove_dir_all(&dir);
    Ok(micros)
}
