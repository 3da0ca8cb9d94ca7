//! `plateau serve`: open the store, bootstrap the first organisation, and
//! serve the API until SIGTERM or Ctrl-C, letting requests in flight finish.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::extract::ConnectInfo;
use clap::Args;
use plateau_api::{ApiConfig, AppState, Extensions};
use plateau_core::secret::{self, TOKEN_PREFIX};
use plateau_core::time;
use plateau_seal::Sealer;
use plateau_store::{Db, idempotency, provision, sessions, settings};
use utoipa_axum::router::OpenApiRouter;

use crate::apps::AppsArgs;
use crate::caches;
use crate::config::{ListenArgs, LogFormat, RegistryGcArgs, RegistryStoreArgs, StoreArgs};
use crate::databases;
use crate::host;
use crate::logging;
use crate::plugins;

#[derive(Args)]
pub struct ServeArgs {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, env = "PLATEAU_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    #[command(flatten)]
    pub(crate) store: StoreArgs,
    /// On first start with an empty store, the owner token's secret (plt_ and 40 letters or digits).
    #[arg(long, env = "PLATEAU_BOOTSTRAP_TOKEN", hide_env_values = true)]
    bootstrap_token: Option<String>,
    /// The platform operator's password for the admin API; admin login is off without it.
    #[arg(long, env = "PLATEAU_ADMIN_PASSWORD", hide_env_values = true)]
    admin_password: Option<String>,
    /// Largest accepted request body, in bytes.
    #[arg(long, env = "PLATEAU_MAX_BODY_BYTES", default_value_t = 1024 * 1024)]
    max_body_bytes: usize,
    /// How long a verified token is trusted without reading the database,
    /// in milliseconds; 0 turns the cache off. Other hosts refuse a revoked
    /// token within this time; the host that revoked it does at once.
    #[arg(long, env = "PLATEAU_AUTH_CACHE_MS", default_value_t = 2000)]
    auth_cache_ms: u64,
    /// Where a referral link's visit is sent on to, with `ref=<code>`
    /// added: the operator's sign-up or landing page.
    #[arg(
        long,
        env = "PLATEAU_REFERRAL_LANDING_URL",
        default_value = "/console/"
    )]
    referral_landing_url: String,
    /// CIDRs exempt from the plugin egress guard's refusal of loopback,
    /// private, link-local and metadata addresses (`127.0.0.0/8,::1/128`).
    #[arg(long, env = "PLATEAU_EGRESS_ALLOW", default_value = "")]
    pub(crate) egress_allow: String,
    /// Certificates plugins' outbound TLS (HTTPS and SMTP) trusts besides
    /// Mozilla's roots, for a private CA: a PEM file of one or more
    /// certificates, or one DER certificate.
    #[arg(long, env = "PLATEAU_EGRESS_CA_FILE")]
    egress_ca_file: Option<std::path::PathBuf>,
    /// JSON file granting plugins their capabilities, outbound hosts,
    /// configuration and limits.
    #[arg(long, env = "PLATEAU_PLUGINS_CONFIG")]
    plugins_config: Option<std::path::PathBuf>,
    /// The key plugins' secrets are sealed with (their `secrets`
    /// capability): 32 bytes in base64. Without it, a key is generated once
    /// and kept in the database, shared by every host on it.
    #[arg(long, env = "PLATEAU_SECRET_KEY", hide_env_values = true)]
    secret_key: Option<String>,
    /// Write `/tmp/perf-<pid>.map` naming the functions of compiled plugin
    /// components, for profiling the server with `perf`.
    #[arg(long, env = "PLATEAU_PLUGIN_PERF_MAP")]
    plugin_perf_map: bool,
    /// Where compiled plugin components are cached (default: `plugin-cache`
    /// in the data directory). Hosts of one build may share it; it must be
    /// writable by no one else, as the host runs what it finds there.
    #[arg(long, env = "PLATEAU_PLUGIN_CACHE_DIR")]
    plugin_cache_dir: Option<PathBuf>,
    /// `system`, or `manual` for tests: the host clock that plugins and
    /// their schedules see then moves only through `POST /admin/clock`.
    #[arg(long, env = "PLATEAU_CLOCK", default_value = "system", value_parser = ["system", "manual"])]
    clock: String,
    #[command(flatten)]
    pub(crate) listen_timeouts: ListenArgs,
    #[command(flatten)]
    pub(crate) apps: AppsArgs,
    #[command(flatten)]
    registry_store: RegistryStoreArgs,
    #[command(flatten)]
    pub(crate) caches: caches::CacheArgs,
    #[command(flatten)]
    pub(crate) databases: databases::DatabaseArgs,
    /// The `haproxy` binary (2.6 or later) of the endpoints that always
    /// lead to the leader: caches with replicas (`uri`) and databases
    /// (`writeUri`).
    #[arg(long, env = "PLATEAU_HAPROXY", default_value = "haproxy")]
    pub(crate) haproxy: PathBuf,
    #[command(flatten)]
    registry_gc: RegistryGcArgs,
    #[command(flatten)]
    pub(crate) usage: crate::usage::UsageArgs,
    /// Milliseconds between evaluations of every enabled alarm
    /// (`/alarms`), anomaly monitor (`/anomalies`) and spend budget
    /// (`/spend`) against the series store.
    #[arg(long, env = "PLATEAU_ALARMS_EVALUATE_MS", default_value_t = 60_000)]
    alarms_evaluate_ms: u64,
    #[command(flatten)]
    storage: crate::storage::StorageArgs,
    /// The registry's public address (`https://registry.example.com`) for the bearer challenge;
    /// by default each request's Host.
    #[arg(long, env = "PLATEAU_REGISTRY_URL")]
    pub(crate) registry_url: Option<String>,
    /// Seconds between registry garbage collections; 0 turns the periodic collection off.
    #[arg(
        long,
        env = "PLATEAU_REGISTRY_GC_INTERVAL_SECS",
        default_value_t = 3600
    )]
    registry_gc_interval_secs: u64,
    /// Unfinished registry uploads an organisation may have at once.
    #[arg(long, env = "PLATEAU_REGISTRY_MAX_UPLOADS", default_value_t = 100)]
    registry_max_uploads: i64,
    /// Log format.
    #[arg(long, env = "PLATEAU_LOG_FORMAT", value_enum, default_value = "text")]
    pub(crate) log_format: LogFormat,
}

/// The documented areas of the API besides the core, by name. Merging
/// keeps one component schema per name, so two areas must never give one
/// name to two schemas (see [`schema_collisions`]).
pub fn areas() -> Vec<(&'static str, OpenApiRouter<AppState>)> {
    vec![
        ("plugin admin", plateau_plugin_host::admin::routes()),
        ("plugin jobs", plateau_plugin_host::admin_jobs::routes()),
        ("caches", plateau_cache::api::routes()),
        ("databases", plateau_databases::api::routes()),
        ("apps", plateau_apps::api::routes()),
        ("storage", plateau_storage::api::routes()),
        ("manifest", plateau_manifest::routes()),
    ]
}

/// Component schema names that two areas (the core among them) define
/// differently, each with the areas that do: merged into one document,
/// one of the two would silently describe the other's operations.
pub fn schema_collisions() -> Vec<String> {
    let mut seen: std::collections::BTreeMap<String, (&'static str, serde_json::Value)> =
        Default::default();
    let mut collisions = Vec::new();
    let all = std::iter::once(("core", plateau_api::core_routes())).chain(areas());
    for (area, routes) in all {
        let doc = routes.into_openapi();
        let schemas = doc.components.map(|c| c.schemas).unwrap_or_default();
        for (name, schema) in schemas {
            let schema = serde_json::to_value(&schema).unwrap_or_default();
            match seen.get(&name) {
                Some((first, known)) if *known != schema => {
                    collisions.push(format!("{name} (in {first} and {area})"));
                }
                Some(_) => {}
                None => {
                    seen.insert(name, (area, schema));
                }
            }
        }
    }
    collisions
}

pub async fn run(args: ServeArgs) -> anyhow::Result<()> {
    run_with(args, OpenApiRouter::new()).await
}

/// [`run`] with more API routes, declared like the core's (a
/// `#[utoipa::path]` with its `security`).
pub async fn run_with(args: ServeArgs, routes: OpenApiRouter<AppState>) -> anyhow::Result<()> {
    logging::init(args.log_format);
    if let Some(token) = &args.bootstrap_token {
        anyhow::ensure!(
            secret::is_well_formed(token, TOKEN_PREFIX),
            "PLATEAU_BOOTSTRAP_TOKEN must be plt_ followed by 40 letters or digits"
        );
    }
    let db = args.store.open().await?;
    bootstrap(&db, args.bootstrap_token.clone()).await?;
    let cursor_key = settings::get_or_init(&db, "cursor_key", || secret::generate("")).await?;
    let config = ApiConfig {
        admin_password: args.admin_password.clone(),
        max_body_bytes: args.max_body_bytes,
        auth_cache_ttl: Duration::from_millis(args.auth_cache_ms),
        referral_landing: args.referral_landing_url.clone(),
        ..ApiConfig::default()
    };
    let state = AppState::new(db.clone(), config, cursor_key.into_bytes());
    let commands = Arc::new(crate::commands::HostCommands::default());
    let mut setup = args.plugins_setup();
    setup.commands = Some(commands.clone());
    let app_env = Arc::new(crate::app_env::HostAppEnv::default());
    setup.app_env = Some(app_env.clone());
    let plugins = plugins::start(&setup, &state).await?;
    let secret_key = plugins::secret_key(&args.plugins_setup(), &db).await?;
    let sealer = Arc::new(Sealer::new(&secret_key));
    let host_id = host::identity(&args.store.data_dir, &db).await?;
    let caches = caches::start(
        &args.caches,
        &args.store.data_dir,
        &db,
        sealer.clone(),
        &host_id,
        &args.haproxy,
    )?;
    let databases = databases::start(
        &args.databases,
        &args.store.data_dir,
        &db,
        sealer.clone(),
        &host_id,
        &args.haproxy,
        &args.egress_allow,
    )?;
    let volumes = crate::apps::volumes(&args.apps, &db, &args.store.data_dir, &host_id)?;
    // The data plane: supervision and failover go on in the agent while
    // this process is down.
    let agent = crate::dataplane::Agent::ensure(&args.store.data_dir).await?;
    let edge_addr = crate::dataplane::edge_address(&args.store.data_dir)?;
    let (storage, storage_listener) =
        crate::storage::open(&args.storage, &args.store.data_dir, &state, &secret_key).await?;
    let routes = areas()
        .into_iter()
        .fold(OpenApiRouter::new(), |all, (_, area)| all.merge(area))
        .merge(routes);
    let extensions = Extensions {
        routes: Some(routes),
        fallback: Some(plateau_plugin_host::dispatch::router(
            plugins.dispatcher.clone(),
        )),
    };
    let listener = tokio::net::TcpListener::bind(args.listen)
        .await
        .with_context(|| format!("listening on {}", args.listen))?;
    let addr = listener.local_addr()?;
    let blob_store = args.registry_store.open(&args.store.data_dir)?;
    let registry = plateau_registry::Registry::new(
        state.clone(),
        blob_store.clone(),
        plateau_registry::RegistryConfig {
            public_url: args.registry_url.clone(),
            max_uploads_per_org: args.registry_max_uploads,
        },
    )
    .await?;
    tracing::info!(store = %blob_store.location, "registry serving under /v2");
    let mut apps = crate::apps::prepare(
        &args.apps,
        &db,
        secret_key,
        registry.clone(),
        addr,
        args.registry_url.as_deref(),
        &args.store.data_dir,
        edge_addr,
    )
    .await?;
    commands
        .start(apps.registry.clone())
        .context("starting the command runner of cron jobs")?;
    app_env.start(apps.apps.clone());
    // The /v2 routes go in after the API's layers: they keep the OCI error
    // format, and unknown paths still get the API's problem bodies.
    state.set_apps_control(Arc::new(apps.apps.clone()));
    let watchers = state.clone();
    let api = plateau_api::app_with(state, extensions)
        .map_err(anyhow::Error::msg)?
        .layer(axum::Extension(plugins.dispatcher.host.clone()))
        .layer(axum::Extension(plugins.jobs.clone()))
        .layer(axum::Extension(plugins.clock.clone()))
        .layer(axum::Extension(caches.clone()))
        .layer(axum::Extension(databases.clone()))
        .layer(axum::Extension(apps.apps.clone()))
        .layer(axum::Extension(volumes))
        .layer(axum::Extension(storage.clone()));
    // The web console calls the API in-process, through this same router.
    let console = plateau_console::router(api.clone(), sealer);
    let app = crate::guides::mount(plateau_registry::mount(api.merge(console), registry));
    let timeouts = args.listen_timeouts.timeouts();
    apps.serve();
    tracing::info!(%addr, edge = %apps.edge_addr, backend = ?db.backend(), "plateau is serving");
    let storage_addr = storage_listener.local_addr()?;
    tracing::info!(addr = %storage_addr, endpoint = %storage.endpoint(), "object storage serving S3");
    println!("edge listening on http://{}", apps.edge_addr);
    println!("storage listening on http://{storage_addr}");
    println!("listening on http://{addr}");
    let (stop_storage, storage_stopped) = tokio::sync::oneshot::channel::<()>();
    let s3 = tokio::spawn(plateau_storage::s3::serve(
        storage_listener,
        plateau_storage::s3::service(storage),
        timeouts,
        async {
            let _ = storage_stopped.await;
        },
    ));
    let maintenance = tokio::spawn(maintain(db.clone()));
    let alarms = tokio::spawn(evaluate_watchers(watchers, args.alarms_evaluate_ms));
    let registry_gc = tokio::spawn(registry_gc(
        db.clone(),
        blob_store,
        args.registry_gc.options(),
        args.registry_gc_interval_secs,
    ));
    // Handlers read the client's address as axum's `ConnectInfo`.
    let make =
        |peer: SocketAddr| tower::Layer::layer(&axum::Extension(ConnectInfo(peer)), app.clone());
    plateau_listen::serve(listener, timeouts, make, shutdown_signal()).await;
    let _ = stop_storage.send(());
    let _ = s3.await;
    maintenance.abort();
    alarms.abort();
    registry_gc.abort();
    agent.detach();
    plugins.stop(&db).await;
    apps.stop().await;
    db.close().await;
    tracing::info!("stopped");
    Ok(())
}

/// Creates the first organisation on an empty store and prints its owner
/// token once (unless the operator chose it with PLATEAU_BOOTSTRAP_TOKEN).
async fn bootstrap(db: &Db, token: Option<String>) -> anyhow::Result<()> {
    let chosen = token.is_some();
    if let Some(created) = provision::bootstrap(db, token).await? {
        tracing::info!(org = %created.org.id, "created the first organization");
        if !chosen {
            println!(
                "first start: created organization {} with owner token (shown once):",
                created.org.id
            );
            println!("{}", created.owner.secret);
        }
    }
    Ok(())
}

/// Purges expired idempotency records and sessions every ten minutes.
async fn maintain(db: Db) {
    let mut every = tokio::time::interval(Duration::from_secs(600));
    loop {
        every.tick().await;
        let now = time::now_ms();
        if let Err(e) = idempotency::purge_expired(&db, now).await {
            tracing::warn!(error = %e, "purging idempotency records");
        }
        if let Err(e) = sessions::purge_expired(&db, now).await {
            tracing::warn!(error = %e, "purging admin sessions");
        }
    }
}

/// Every `interval_ms`, one pass over what watches the series store:
/// alarms, anomaly monitors and spend budgets.
async fn evaluate_watchers(state: plateau_api::AppState, interval_ms: u64) {
    let mut every = tokio::time::interval(Duration::from_millis(interval_ms.max(100)));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let db = state.db().clone();
    loop {
        every.tick().await;
        let now = time::now_ms();
        if let Err(e) = plateau_api::alarms::evaluate_all(&db, now).await {
            tracing::warn!(error = %e, "evaluating alarms");
        }
        if let Err(e) = plateau_api::anomalies::evaluate_all(&db, now).await {
            tracing::warn!(error = %e, "judging anomaly monitors");
        }
        let apps = state.apps_control();
        if let Err(e) = plateau_api::spend::evaluate::evaluate_all(&db, apps.as_deref(), now).await
        {
            tracing::warn!(error = %e, "evaluating spend budgets");
        }
    }
}

/// Collects registry garbage every `interval_secs` (never when 0).
async fn registry_gc(
    db: Db,
    store: plateau_registry::BlobStore,
    options: plateau_registry::gc::GcOptions,
    interval_secs: u64,
) {
    if interval_secs == 0 {
        return;
    }
    let mut every = tokio::time::interval(Duration::from_secs(interval_secs));
    every.tick().await;
    loop {
        every.tick().await;
        match plateau_registry::gc::collect(&db, &store, &options).await {
            Ok(report) => tracing::info!(?report, "registry garbage collected"),
            Err(e) => tracing::warn!(error = %e, "registry garbage collection"),
        }
    }
}

pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {}
        () = term => {}
    }
    tracing::info!("shutting down: finishing requests in flight");
}

impl ServeArgs {
    pub(crate) fn plugins_setup(&self) -> plugins::Setup {
        plugins::Setup {
            egress_allow: self.egress_allow.clone(),
            egress_ca_file: self.egress_ca_file.clone(),
            config: self.plugins_config.clone(),
            secret_key: self.secret_key.clone(),
            manual_clock: self.clock == "manual",
            perf_map: self.plugin_perf_map,
            cache_dir: self
                .plugin_cache_dir
                .clone()
                .unwrap_or_else(|| self.store.data_dir.join("plugin-cache")),
            commands: None,
            app_env: None,
            apps_domain: self.apps.apps_domain.clone(),
            data_dir: self.store.data_dir.clone(),
        }
    }
}
