//! [`PluginHost`]: the plugins this host serves, kept in step with the
//! database. Loading, switching and rolling back write the database first
//! and then apply locally; every other host applies the change on its next
//! sync (every second), so a switch made on one host reaches all of them
//! within seconds.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use plateau_api::AppState;
use plateau_core::time;
use plateau_plugin_runtime::{Description, PluginRuntime, PluginSlot, PluginVersion};
use plateau_store::events::{self, Actor, NewEvent};
use plateau_store::plugins::{self as db, VersionInfo};
use serde_json::json;

use crate::admin::MAX_COMPONENT_BYTES;
use crate::config::PluginsConfig;
use crate::docs;
use crate::oci::{self, OciSource, PullError};
use crate::routes::CompiledRoute;

/// The organisation id under which platform-level events (plugin loads,
/// switches, rollbacks) are recorded; the admin API reads them.
pub const PLATFORM_ORG: &str = "platform";

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    NotFound(String),
    #[error(transparent)]
    Runtime(#[from] plateau_plugin_runtime::Error),
    #[error(transparent)]
    Store(#[from] plateau_store::Error),
    #[error(transparent)]
    Pull(#[from] PullError),
}

/// One active plugin on this host.
struct Active {
    slot: PluginSlot,
    generation: i64,
    routes: Arc<Vec<CompiledRoute>>,
}

pub struct PluginHost {
    app: AppState,
    runtime: PluginRuntime,
    config: PluginsConfig,
    active: RwLock<BTreeMap<String, Active>>,
}

/// What the dispatcher needs for one request: the version that serves it
/// and that version's routes.
pub struct Target {
    pub version: Arc<PluginVersion>,
    pub routes: Arc<Vec<CompiledRoute>>,
}

impl PluginHost {
    pub fn new(app: AppState, runtime: PluginRuntime, config: PluginsConfig) -> Self {
        PluginHost {
            app,
            runtime,
            config,
            active: RwLock::new(BTreeMap::new()),
        }
    }

    pub fn app(&self) -> &AppState {
        &self.app
    }

    /// The runtime plugins load into (edge filters are checked there
    /// before they are stored).
    pub fn runtime(&self) -> &PluginRuntime {
        &self.runtime
    }

    /// The plugin owning `path`, by its prefixes, with its current version.
    pub fn target(&self, path: &str) -> Option<Target> {
        let active = self.active.read().unwrap_or_else(|e| e.into_inner());
        active.values().find_map(|a| {
            let version = a.slot.current();
            let owns = version.description().prefixes.iter().any(|p| {
                path == p
                    || path
                        .strip_prefix(p.as_str())
                        .is_some_and(|r| r.starts_with('/'))
            });
            owns.then(|| Target {
                version,
                routes: a.routes.clone(),
            })
        })
    }

    /// The current version of plugin `name`, if it is active here.
    pub fn version(&self, name: &str) -> Option<Arc<PluginVersion>> {
        let active = self.active.read().unwrap_or_else(|e| e.into_inner());
        active.get(name).map(|a| a.slot.current())
    }

    /// Every active plugin's current version, by name.
    pub fn current(&self) -> Vec<(String, Arc<PluginVersion>, i64)> {
        let active = self.active.read().unwrap_or_else(|e| e.into_inner());
        active
            .iter()
            .map(|(name, a)| (name.clone(), a.slot.current(), a.generation))
            .collect()
    }

    /// Checks and compiles `wasm` as a version of `name`, under `name`'s
    /// grants, and stores it; with `activate`, also makes it serve.
    pub async fn load(
        &self,
        name: &str,
        wasm: &[u8],
        source: &str,
        activate: bool,
        actor: &Actor,
    ) -> Result<VersionInfo, HostError> {
        let loaded = self.runtime.load(wasm, self.config.settings(name)).await?;
        let description = loaded.version.description().clone();
        if description.name != name {
            return Err(HostError::Invalid(format!(
                "the component describes itself as plugin {:?}, not {name:?}",
                description.name
            )));
        }
        let info = VersionInfo {
            name: name.to_owned(),
            digest: loaded.report.digest.clone(),
            version: description.version.clone(),
            wit_version: loaded.version.wit_version().to_string(),
            source: source.to_owned(),
            description: docs::description_json(&description).to_string(),
            loaded_at: time::now_ms(),
        };
        let mut tx = self.app.db().begin().await?;
        let inserted = db::insert_version(&mut tx, &info, wasm).await?;
        let event = NewEvent::audited(
            PLATFORM_ORG,
            "plugin.version.loaded",
            "plugins",
            "create",
            actor,
        )
        .resource("plugin", name)
        .data(json!({ "digest": info.digest, "version": info.version, "source": source }));
        events::record(&mut tx, &event, info.loaded_at).await?;
        tx.commit().await?;
        // Loaded before (from this or another source): that record stays.
        let stored = if inserted {
            info
        } else {
            db::version(self.app.db(), name, &info.digest)
                .await?
                .unwrap_or(info)
        };
        if activate {
            self.switch(name, &stored.digest, actor).await?;
        }
        Ok(stored)
    }

    /// Pulls the plugin artifact `source` names and loads its component
    /// exactly as [`PluginHost::load`] loads an upload. The version's
    /// source is the reference pinned to the manifest digest it resolved
    /// to; its bytes are stored, so switching back to it later needs no
    /// registry.
    pub async fn load_reference(
        &self,
        name: &str,
        source: &OciSource,
        activate: bool,
        actor: &Actor,
    ) -> Result<VersionInfo, HostError> {
        let pulled = oci::pull(source, MAX_COMPONENT_BYTES).await?;
        tracing::info!(plugin = name, reference = %pulled.pinned, layer = %pulled.layer_digest, "pulled a plugin artifact");
        self.load(name, &pulled.wasm, &pulled.pinned, activate, actor)
            .await
    }

    /// Makes the stored version `digest` serve `name`.
    pub async fn switch(&self, name: &str, digest: &str, actor: &Actor) -> Result<(), HostError> {
        self.set_active(name, Some(digest), "plugin.switched", actor)
            .await
    }

    /// Makes the previous version serve `name` again.
    pub async fn rollback(&self, name: &str, actor: &Actor) -> Result<(), HostError> {
        self.set_active(name, None, "plugin.rolled_back", actor)
            .await
    }

    async fn set_active(
        &self,
        name: &str,
        digest: Option<&str>,
        kind: &str,
        actor: &Actor,
    ) -> Result<(), HostError> {
        // Read and compile outside the write transaction: compiling can take
        // seconds, and SQLite has one writer.
        let current = db::active(self.app.db())
            .await?
            .into_iter()
            .find(|a| a.name == name);
        let target = match digest {
            Some(d) => d.to_owned(),
            None => current
                .as_ref()
                .and_then(|c| c.previous_digest.clone())
                .ok_or_else(|| {
                    HostError::Invalid(format!(
                        "plugin {name} has no previous version to roll back to"
                    ))
                })?,
        };
        if current.as_ref().is_some_and(|c| c.active_digest == target) {
            return Ok(());
        }
        let wasm = db::version_wasm(self.app.db(), name, &target)
            .await?
            .ok_or_else(|| {
                HostError::NotFound(format!("plugin {name} has no stored version {target}"))
            })?;
        // A version that no longer loads is never made active.
        let loaded = self.runtime.load(&wasm, self.config.settings(name)).await?;
        let mut tx = self.app.db().begin().await?;
        let now = time::now_ms();
        let previous = current.as_ref().map(|c| c.active_digest.as_str());
        let generation = db::set_active(&mut tx, name, &target, previous, now).await?;
        let event = NewEvent::audited(PLATFORM_ORG, kind, "plugins", "update", actor)
            .resource("plugin", name)
            .data(json!({ "digest": target, "previous": previous, "version": loaded.version.description().version }));
        events::record(&mut tx, &event, now).await?;
        tx.commit().await?;
        self.install(name, loaded.version, generation);
        Ok(())
    }

    /// Puts `version` in service on this host.
    fn install(&self, name: &str, version: Arc<PluginVersion>, generation: i64) {
        let routes = Arc::new(
            version
                .description()
                .routes
                .iter()
                .map(CompiledRoute::new)
                .collect::<Vec<_>>(),
        );
        self.publish(version.description());
        let mut active = self.active.write().unwrap_or_else(|e| e.into_inner());
        match active.get_mut(name) {
            Some(a) => {
                if a.generation >= generation && a.slot.current().digest() == version.digest() {
                    return;
                }
                if let Err(e) = a.slot.switch(version) {
                    tracing::error!(plugin = name, error = %e, "switching versions");
                    return;
                }
                a.generation = generation;
                a.routes = routes;
            }
            None => {
                active.insert(
                    name.to_owned(),
                    Active {
                        slot: PluginSlot::new(version),
                        generation,
                        routes,
                    },
                );
            }
        }
        drop(active);
        self.app.set_plugin_paths(docs::paths(&self.current()));
        tracing::info!(plugin = name, generation, "plugin version in service");
    }

    /// Adds the plugin's scopes to the token model.
    fn publish(&self, description: &Description) {
        self.app.add_scopes(
            description
                .scopes
                .iter()
                .map(|s| (s.name.clone(), s.description.clone())),
        );
    }

    /// Stores the built-in plugins and makes them serve where the operator
    /// has not chosen another version: a built-in replaces an older
    /// built-in, never an uploaded version.
    pub async fn install_builtins(&self, builtins: &[(&str, &[u8])]) -> Result<(), HostError> {
        let actor = Actor::system();
        let active: HashMap<String, db::ActivePlugin> = db::active(self.app.db())
            .await?
            .into_iter()
            .map(|a| (a.name.clone(), a))
            .collect();
        for (name, wasm) in builtins {
            let info = self.load(name, wasm, "builtin", false, &actor).await?;
            let replace = match active.get(*name) {
                None => true,
                Some(a) if a.active_digest == info.digest => false,
                Some(a) => db::version(self.app.db(), name, &a.active_digest)
                    .await?
                    .is_none_or(|v| v.source == "builtin"),
            };
            if replace {
                self.switch(name, &info.digest, &actor).await?;
            }
        }
        Ok(())
    }

    /// Applies what the database says serves; returns how many plugins
    /// changed. Runs at start and then every second.
    pub async fn sync(&self) -> Result<usize, HostError> {
        let wanted = db::active(self.app.db()).await?;
        let mut changed = 0;
        for plugin in wanted {
            let have = {
                let active = self.active.read().unwrap_or_else(|e| e.into_inner());
                active.get(&plugin.name).map(|a| a.generation)
            };
            if have.is_some_and(|g| g >= plugin.generation) {
                continue;
            }
            let Some(wasm) =
                db::version_wasm(self.app.db(), &plugin.name, &plugin.active_digest).await?
            else {
                tracing::error!(plugin = %plugin.name, digest = %plugin.active_digest, "active version is not stored");
                continue;
            };
            let loaded = self
                .runtime
                .load(&wasm, self.config.settings(&plugin.name))
                .await?;
            self.install(&plugin.name, loaded.version, plugin.generation);
            changed += 1;
        }
        Ok(changed)
    }

    /// Syncs every `period` until the task is dropped.
    pub async fn keep_in_sync(self: Arc<Self>, period: Duration) {
        let mut every = tokio::time::interval(period);
        loop {
            every.tick().await;
            if let Err(e) = self.sync().await {
                tracing::warn!(error = %e, "syncing plugins with the database");
            }
        }
    }
}
