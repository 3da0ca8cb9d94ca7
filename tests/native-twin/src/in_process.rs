//! The flags component's per-request costs, timed in-process (no HTTP, no
//! database: an in-memory store): instantiation alone, the whole plugin
//! call, and the native twin's evaluation of the same stored bytes.

use std::sync::Arc;
use std::time::Instant;

use plateau_plugin_runtime::storage::{BucketId, Namespace, Storage};
use plateau_plugin_runtime::{
    Caller, MemoryStore, PlainCursorCodec, PluginRuntime, PluginSettings, Request, RuntimeConfig,
    Services, SystemClock,
};
use plateau_seal::{KEY_LEN, Sealer};

use crate::flags::{evaluate_stored, production};

/// What `in-process` measures, in microseconds per request:
/// the flags plugin's OFREP evaluation served in-process (no HTTP, no
/// database: an in-memory store), split into its parts.
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
pub async fn measure(n: u32, flag: &str, context: &str) -> anyhow::Result<InProcess> {
    const ORG: &str = "org_bench";
    const PROJECT: &str = "prj_bench";
    let dir = std::env::temp_dir().join(format!("plateau-native-twin-{}", std::process::id()));
    let store = Arc::new(MemoryStore::default());
    let services = Services {
        storage: store.clone(),
        clock: Arc::new(SystemClock),
        cursors: Arc::new(PlainCursorCodec),
        sealer: Arc::new(Sealer::new(&[0; KEY_LEN])),
        commands: None,
        logs: None,
        app_env: None,
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
