//! Integration tests of the plugin runtime: real components built from
//! `tests/fixture-plugins`, run in-process over a `MemoryStore`.

mod edge;
mod egress;
mod kv;
mod limits;
mod load;
mod smtp;
mod swap;
mod versions;
mod window;

use std::sync::Arc;

use plateau_plugin_artifacts::fixtures;
use plateau_plugin_runtime::{
    Caller, Capability, Loaded, ManualClock, MemoryStore, PlainCursorCodec, PluginRuntime,
    PluginSettings, Request, RuntimeConfig, Services, Storage,
};
use tempfile::TempDir;

/// A runtime over a fresh memory store, a manual clock and a private cache.
pub struct Harness {
    pub runtime: PluginRuntime,
    pub store: Arc<MemoryStore>,
    pub clock: Arc<ManualClock>,
    pub cache: TempDir,
}

pub fn harness() -> Harness {
    harness_with(|_| {})
}

pub fn harness_with(edit: impl FnOnce(&mut RuntimeConfig)) -> Harness {
    let store = Arc::new(MemoryStore::new());
    let cache = tempfile::tempdir().expect("temp dir");
    let (runtime, clock) = runtime_over(store.clone(), &cache, edit);
    Harness {
        runtime,
        store,
        clock,
        cache,
    }
}

/// A runtime with its own clock over `storage`, caching in `cache`.
pub fn runtime_over(
    storage: Arc<dyn Storage>,
    cache: &TempDir,
    edit: impl FnOnce(&mut RuntimeConfig),
) -> (PluginRuntime, Arc<ManualClock>) {
    let clock = Arc::new(ManualClock::new(1_700_000_000_000));
    let mut config = RuntimeConfig::new(cache.path());
    config.max_concurrency = 16;
    edit(&mut config);
    let services = Services {
        storage,
        clock: clock.clone(),
        cursors: Arc::new(PlainCursorCodec),
        sealer: Arc::new(plateau_seal::Sealer::new(&[9; 32])),
        commands: None,
        logs: None,
        app_env: None,
    };
    (
        PluginRuntime::new(config, services).expect("runtime"),
        clock,
    )
}

impl Harness {
    pub async fn load(&self, wasm: &[u8], settings: PluginSettings) -> Loaded {
        self.runtime
            .load(wasm, settings)
            .await
            .expect("the plugin loads")
    }

    pub async fn echo(&self) -> Loaded {
        self.load(fixtures::ECHO, PluginSettings::all_granted())
            .await
    }
}

/// Settings granting only `capabilities`.
pub fn granting(capabilities: &[Capability]) -> PluginSettings {
    PluginSettings {
        grants: capabilities.iter().copied().collect(),
        ..PluginSettings::default()
    }
}

/// A request to `route` at `path` with `query`, by a caller of `org`.
pub fn request(method: &str, route: &str, path: &str, query: &str, org: Option<&str>) -> Request {
    Request {
        method: method.into(),
        path: path.into(),
        route: route.into(),
        query: query.into(),
        headers: Vec::new(),
        body: Vec::new(),
        caller: Caller {
            organization_id: org.map(Into::into),
            actor: org.map(|_| "user:u1".into()),
            scopes: vec!["*".into()],
            ..Caller::default()
        },
    }
}

/// `req` with a JSON `body`.
pub fn with_body(mut req: Request, body: &str) -> Request {
    req.body = body.as_bytes().to_vec();
    req.headers
        .push(("content-type".to_owned(), "application/json".to_owned()));
    req
}

pub fn text(body: &[u8]) -> String {
    String::from_utf8_lossy(body).into_owned()
}
