//! Starting the plugin host for `plateau serve`: the runtime, the built-in
//! plugins, the sync with other hosts and the fuel meter.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use plateau_api::AppState;
use plateau_plugin_runtime::egress::parse_allow_list;
use plateau_plugin_runtime::secrets::{KEY_LEN, Sealer};
use plateau_plugin_runtime::{
    Clock, ManualClock, PluginRuntime, RuntimeConfig, Services, SystemClock,
};
use plateau_plugins::admin_jobs::HostClock;
use plateau_plugins::cursors::SignedCursors;
use plateau_plugins::storage::SqlStorage;
use plateau_plugins::{Dispatcher, EventDelivery, JobRunner, Meter, PluginHost, PluginsConfig};
use plateau_store::{Db, settings};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;
use tokio::task::JoinHandle;

pub struct Setup {
    pub data_dir: PathBuf,
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
}

pub struct Running {
    pub dispatcher: Dispatcher,
    pub jobs: Arc<JobRunner>,
    pub clock: HostClock,
    tasks: Vec<JoinHandle<()>>,
}

/// How many plugin jobs one host runs at once.
const JOB_CONCURRENCY: usize = 32;

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
    "/apps",
];

pub async fn start(setup: &Setup, app: &AppState) -> anyhow::Result<Running> {
    let config = match &setup.config {
        Some(path) => PluginsConfig::load(path).map_err(anyhow::Error::msg)?,
        None => PluginsConfig::default(),
    };
    let mut runtime_config = RuntimeConfig::new(setup.data_dir.join("plugin-cache"));
    runtime_config.perf_map = setup.perf_map;
    runtime_config.egress_allow = parse_allow_list(&setup.egress_allow)
        .map_err(|e| anyhow::anyhow!("PLATEAU_EGRESS_ALLOW: {e}"))?;
    if let Some(path) = &setup.egress_ca_file {
        runtime_config.extra_tls_roots = read_ca_file(path)?;
    }
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
    };
    let runtime =
        PluginRuntime::new(runtime_config, services).context("starting the plugin runtime")?;
    let host = Arc::new(PluginHost::new(app.clone(), runtime, config));
    host.install_builtins(&plateau_plugin_artifacts::builtin_plugins())
        .await
        .context("installing the built-in plugins")?;
    host.sync().await.context("loading the active plugins")?;
    let meter = Arc::new(Meter::default());
    let jobs = Arc::new(JobRunner::new(
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
pub(crate) async fn secret_key(setup: &Setup, db: &Db) -> anyhow::Result<[u8; KEY_LEN]> {
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

/// What `plateau bench-inprocess` measures, in microseconds per request:
/// the flags plugin's OFREP evaluation served in-process (no HTTP, no
/// database: an in-memory store), split into its parts.
#[cfg(feature = "bench-native")]
pub struct InProcess {
    /// A fresh store and instance, dropped without calling the guest.
    pub instantiate: f64,
    /// `PluginVersion::handle`: instantiation, the guest's work, its
    /// key-value reads from the in-memory store, and the store's teardown.
    pub plugin_call: f64,
    /// The native twin's evaluation of the same request, from the same
    /// stored bytes read from the same store.
    pub native: f64,
}

/// Times `n` requests of each kind of [`InProcess`] after a warm-up.
#[cfg(feature = "bench-native")]
pub async fn in_process(n: u32, flag: &str, context: &str) -> anyhow::Result<InProcess> {
    use plateau_plugin_runtime::storage::{BucketId, Namespace, Storage};
    use plateau_plugin_runtime::{Caller, MemoryStore, PlainCursorCodec, PluginSettings, Request};
    use plateau_plugins::native_bench::{evaluate_stored, production};
    use std::time::Instant;

    const ORG: &str = "org_bench";
    const PROJECT: &str = "prj_bench";
    let dir = std::env::temp_dir().join(format!("plateau-bench-{}", std::process::id()));
    let store = Arc::new(MemoryStore::default());
    let services = Services {
        storage: store.clone(),
        clock: Arc::new(SystemClock),
        cursors: Arc::new(PlainCursorCodec),
        sealer: Arc::new(Sealer::new(&[0; KEY_LEN])),
    };
    let runtime = PluginRuntime::new(RuntimeConfig::new(&dir), services)?;
    let (_, wasm) = plateau_plugin_artifacts::builtin_plugins()[0];
    let version = runtime
        .load(wasm, PluginSettings::all_granted())
        .await?
        .version;
    let request = |method: &str, path: &str, route: &str, body: &str| Request {
        method: method.to_owned(),
        path: path.to_owned(),
        route: route.to_owned(),
        query: String::new(),
        headers: vec![("content-type".to_owned(), "application/json".to_owned())],
        body: body.as_bytes().to_vec(),
        caller: Caller {
            organization_id: Some(ORG.to_owned()),
            project_id: Some(PROJECT.to_owned()),
            scopes: vec!["*".to_owned()],
            actor: Some("token:bench".to_owned()),
            plan: Some("pro".to_owned()),
        },
    };
    let put = version
        .handle(request("PUT", "/flags/bench-flag", "/flags/{key}", flag))
        .await?;
    anyhow::ensure!(
        put.response.status < 300,
        "storing the flag answered {}",
        put.response.status
    );
    let evaluate = request(
        "POST",
        "/flags/ofrep/v1/evaluate/flags/bench-flag",
        "/flags/ofrep/v1/evaluate/flags/{key}",
        context,
    );

    let time = |started: Instant| started.elapsed().as_secs_f64() * 1e6 / f64::from(n.max(1));
    for _ in 0..200 {
        version.instantiate_only().await?;
    }
    let started = Instant::now();
    for _ in 0..n {
        version.instantiate_only().await?;
    }
    let instantiate = time(started);

    let check = version.handle(evaluate.clone()).await?;
    anyhow::ensure!(
        check.response.status == 200,
        "the evaluation answered {}",
        check.response.status
    );
    let started = Instant::now();
    for _ in 0..n {
        version.handle(evaluate.clone()).await?;
    }
    let plugin_call = time(started);

    let bucket = BucketId {
        plugin: "flags".to_owned(),
        namespace: Namespace::Organization(ORG.to_owned()),
    };
    let scope = production(PROJECT.to_owned());
    let native_once = async || -> anyhow::Result<Vec<u8>> {
        let stored = store.get(&bucket, &scope.flag_key("bench-flag")).await?;
        let evaluators: Vec<(String, Vec<u8>)> = store
            .list(&bucket, &scope.evaluator_prefix(), None, 200)
            .await?
            .into_iter()
            .map(|e| (e.key, e.value))
            .collect();
        let (status, body) = evaluate_stored(
            "bench-flag",
            stored.as_deref(),
            &evaluators,
            context.as_bytes(),
        )?;
        anyhow::ensure!(
            status.as_u16() == 200,
            "the native evaluation answered {status}"
        );
        Ok(body)
    };
    anyhow::ensure!(
        native_once().await? == check.response.body,
        "the native evaluation and the plugin's differ"
    );
    let started = Instant::now();
    for _ in 0..n {
        native_once().await?;
    }
    let native = time(started);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(InProcess {
        instantiate,
        plugin_call,
        native,
    })
}
