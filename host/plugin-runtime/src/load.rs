//! [`PluginRuntime`]: the engine, cache and linker, and
//! [`PluginRuntime::load`], which turns component bytes into a checked
//! [`PluginVersion`].

use std::sync::Arc;

use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;
use wasmtime::Engine;
use wasmtime::component::Linker;

use crate::bindings::{self, Call, Returned, WorldPre};
use crate::cache::{CacheOutcome, ComponentCache};
use crate::config::{PluginSettings, RuntimeConfig, Services};
use crate::context::{Phase, PluginContext};
use crate::egress::EgressGuard;
use crate::engine::{self, EpochTicker};
use crate::error::{Error, Result};
use crate::exec::{PluginVersion, run};
use crate::inspect::{WitVersion, inspect};
use crate::state::State;
use crate::types::{Description, Request};
use crate::validate::validate_description;
use crate::waits::Waits;
use plateau_contract::Method;
use plateau_contract::api_schema::ApiSchema;

/// What every plugin version of a runtime shares.
pub(crate) struct RuntimeInner {
    pub engine: Engine,
    pub linker: Linker<State>,
    pub cache: ComponentCache,
    pub config: RuntimeConfig,
    pub services: Services,
    pub egress: EgressGuard,
    /// One permit per pooled instance slot: calls beyond it wait.
    pub permits: Semaphore,
    /// Calls parked in `kv.wait`, at most half the instance slots.
    pub waits: Arc<Waits>,
    pub pooling: bool,
    _ticker: EpochTicker,
}

/// The plugin host of one process.
#[derive(Clone)]
pub struct PluginRuntime {
    pub(crate) inner: Arc<RuntimeInner>,
}

/// A loaded, checked plugin version and how it was loaded.
pub struct Loaded {
    pub version: Arc<PluginVersion>,
    pub report: LoadReport,
}

/// What a load did.
#[derive(Debug, Clone)]
pub struct LoadReport {
    /// `sha256:<hex>` of the component bytes.
    pub digest: String,
    /// Whether the component was compiled or found in the disk cache.
    pub cache: CacheOutcome,
    pub wit_version: WitVersion,
    /// The component's imports, as named in the component.
    pub imports: Vec<String>,
    /// Fuel spent by `describe`.
    pub describe_fuel: u64,
}

impl PluginRuntime {
    pub fn new(config: RuntimeConfig, services: Services) -> Result<Self> {
        let (engine, pooling) = engine::build(&config)?;
        let mut linker = Linker::new(&engine);
        bindings::add_to_linker(&mut linker).map_err(Error::Engine)?;
        let cache = ComponentCache::new(&engine, &config.cache_dir)?;
        let mut egress =
            EgressGuard::with_extra_roots(config.egress_allow.clone(), &config.extra_tls_roots)?;
        if let Some(edge) = &config.local_edge {
            egress = egress.with_local_edge(edge.clone());
        }
        let ticker = EpochTicker::start(engine.clone(), config.epoch_tick)?;
        let inner = RuntimeInner {
            linker,
            cache,
            egress,
            permits: Semaphore::new(config.max_concurrency as usize),
            waits: Arc::new(Waits::new(config.max_concurrency as usize / 2)),
            pooling,
            services,
            config,
            engine,
            _ticker: ticker,
        };
        Ok(PluginRuntime {
            inner: Arc::new(inner),
        })
    }

    /// Whether the pooling allocator is in use (false after a fallback).
    pub fn uses_pooling(&self) -> bool {
        self.inner.pooling
    }

    /// Compiles (or finds in the cache) `wasm`, checks its imports and
    /// exports, then calls `describe` once and checks the description.
    /// No guest code runs before the import checks have passed.
    pub async fn load(&self, wasm: &[u8], settings: PluginSettings) -> Result<Loaded> {
        let rt = self.inner.clone();
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(wasm)));
        let file_key = digest.trim_start_matches("sha256:").to_string();
        let bytes = wasm.to_vec();
        let compiling = rt.clone();
        let (component, cache) = tokio::task::spawn_blocking(move || {
            compiling.cache.load(&compiling.engine, &file_key, &bytes)
        })
        .await
        .map_err(|e| Error::Config(format!("the compile task failed: {e}")))??;

        let inspection = inspect(&rt.engine, &component, &settings.grants)?;
        let instance_pre = rt.linker.instantiate_pre(&component).map_err(Error::Link)?;
        let pre = WorldPre::new(inspection.version, instance_pre).map_err(Error::Link)?;

        // Describe runs under the plugin's limits, without data or network,
        // under a label until the plugin has told its name.
        let loading = Arc::new(PluginContext {
            name: format!("<loading {}>", &digest[..19]),
            settings: settings.clone(),
            services: rt.services.clone(),
            egress: rt.egress.clone(),
            waits: rt.waits.clone(),
        });
        let ran = run(
            &rt,
            &pre,
            loading.clone(),
            Phase::Describe,
            None,
            Call::Describe,
        )
        .await
        .map_err(|e| Error::Describe(Box::new(e)))?;
        let Returned::Description(description) = ran.returned else {
            unreachable!("describe returns a description");
        };
        let description: Description = description;
        validate_description(&description, &settings.grants, &rt.config.reserved_prefixes)
            .map_err(Error::InvalidDescription)?;

        let api_schema = api_schema(&rt, &pre, loading).await;

        let context = Arc::new(PluginContext {
            name: description.name.clone(),
            settings,
            services: rt.services.clone(),
            egress: rt.egress.clone(),
            waits: rt.waits.clone(),
        });
        let report = LoadReport {
            digest: digest.clone(),
            cache,
            wit_version: inspection.version,
            imports: inspection.imports,
            describe_fuel: ran.fuel_consumed,
        };
        tracing::info!(
            plugin = %description.name,
            version = %description.version,
            %digest,
            cache = ?report.cache,
            "plugin loaded"
        );
        let version = PluginVersion {
            runtime: rt,
            pre,
            context,
            served_by: format!("{}@{}", description.name, description.version),
            description,
            digest,
            wit_version: inspection.version,
            api_schema,
        };
        Ok(Loaded {
            version: Arc::new(version),
            report,
        })
    }
}

/// The bodies of the component's routes, asked in band right after
/// `describe` and under its rules (see [`plateau_contract::api_schema`]);
/// none when the component does not answer them.
async fn api_schema(
    rt: &RuntimeInner,
    pre: &WorldPre,
    loading: Arc<PluginContext>,
) -> Option<ApiSchema> {
    let req = Request::new(Method::Get, plateau_contract::api_schema::PATH);
    let ran = run(rt, pre, loading, Phase::Describe, None, Call::Handle(req)).await;
    let response = match ran.map(|r| r.returned) {
        Ok(Returned::Response(response)) => response,
        Ok(_) => unreachable!("handle returns a response"),
        Err(e) => {
            tracing::debug!(error = %e, "the component gave no API schema");
            return None;
        }
    };
    if response.status != 200 {
        return None;
    }
    match serde_json::from_slice(&response.body) {
        Ok(schema) => Some(schema),
        Err(e) => {
            tracing::warn!(error = %e, "the component's API schema is not valid; its routes stay untyped");
            None
        }
    }
}
