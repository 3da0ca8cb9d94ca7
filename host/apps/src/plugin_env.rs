//! Plugins' layers of apps' environments (the `app-env` capability): a
//! plugin such as the config store sets the variables it resolved for an
//! app; the host seals them, and a layer that differs from the stored one
//! redeploys the app's live component, as a change of the app's own
//! variables does (`app.env.changed`, a deployment of cause `env`).
//! Layers carry a revision that only grows, so concurrent syncs converge
//! on the newest and a stale one changes nothing.

use std::collections::BTreeMap;

use plateau_core::time;
use plateau_plugin_runtime::app_env::{AppEnvError, AppInfo, Layer, SetOutcome};
use plateau_store::apps::plugin_env::{self as db, LayerHead};
use plateau_store::apps::{self, previews};
use plateau_store::events::{self, Actor};
use serde_json::json;

use crate::Apps;
use crate::env::{self, MAX_VARS};
use crate::pipeline::{self, event};

/// The longest source label, in bytes.
const MAX_SOURCE: usize = 256;

fn unavailable(e: plateau_store::Error) -> AppEnvError {
    tracing::warn!(error = %e, "apps: a plugin's layer of an app's environment");
    AppEnvError::Unavailable("the platform's store could not be reached".into())
}

fn not_found(id: &str) -> AppEnvError {
    AppEnvError::NotFound(format!("app {id} does not exist"))
}

/// The checks of the app's own variables, on a whole layer.
fn check(layer: &Layer) -> Result<BTreeMap<String, String>, AppEnvError> {
    if layer.source.len() > MAX_SOURCE || layer.source.contains(char::is_control) {
        return Err(AppEnvError::Invalid(format!(
            "the source is at most {MAX_SOURCE} bytes without control characters"
        )));
    }
    if layer.vars.len() > MAX_VARS {
        return Err(AppEnvError::Invalid(format!(
            "a layer has at most {MAX_VARS} variables"
        )));
    }
    let mut vars = BTreeMap::new();
    for (name, value) in &layer.vars {
        if let Some(why) = env::check(name, value) {
            return Err(AppEnvError::Invalid(why));
        }
        if vars.insert(name.clone(), value.clone()).is_some() {
            return Err(AppEnvError::Invalid(format!("{name} is set twice")));
        }
    }
    Ok(vars)
}

impl Apps {
    /// App `app_id` of `org_id`, outside the trash and not a preview's.
    pub async fn layer_app(&self, org_id: &str, app_id: &str) -> Result<AppInfo, AppEnvError> {
        let app = apps::get(self.db(), org_id, app_id)
            .await
            .map_err(unavailable)?
            .filter(|a| a.deleted_at.is_none())
            .ok_or_else(|| not_found(app_id))?;
        if previews::of_app(self.db(), &app.id)
            .await
            .map_err(unavailable)?
            .is_some()
        {
            return Err(not_found(app_id));
        }
        Ok(AppInfo {
            id: app.id,
            name: app.name,
            live_deployment: app.live_deployment_id,
        })
    }

    /// Replaces `layer.plugin`'s layer of app `app_id` of `org_id` when
    /// its revision is newer, in one transaction with its event and the
    /// redeployment a change starts.
    pub async fn set_layer(
        &self,
        org_id: &str,
        app_id: &str,
        layer: Layer,
    ) -> Result<SetOutcome, AppEnvError> {
        let vars = check(&layer)?;
        let revision = i64::try_from(layer.revision)
            .map_err(|_| AppEnvError::Invalid("the revision is above 2^63".into()))?;
        self.layer_app(org_id, app_id).await?;
        let now = time::now_ms();
        let mut tx = self.db().begin().await.map_err(unavailable)?;
        let app = apps::get_in(&mut tx, org_id, app_id)
            .await
            .map_err(unavailable)?
            .filter(|a| a.deleted_at.is_none())
            .ok_or_else(|| not_found(app_id))?;
        let head = db::head_in(&mut tx, &app.id, &layer.plugin)
            .await
            .map_err(unavailable)?;
        if head.as_ref().is_some_and(|h| h.revision >= revision) {
            return Ok(SetOutcome::default());
        }
        let stored = db::vars_in(&mut tx, &app.id, &layer.plugin)
            .await
            .map_err(unavailable)?;
        let mut current = BTreeMap::new();
        for v in stored {
            let value = env::open_layer(self.sealer(), &app.id, &layer.plugin, &v.name, &v.sealed)
                .map_err(AppEnvError::Unavailable)?;
            current.insert(v.name, value);
        }
        let changed = current != vars;
        let mut sealed = Vec::with_capacity(vars.len());
        for (name, value) in &vars {
            let s = env::seal_layer(self.sealer(), &app.id, &layer.plugin, name, value)
                .map_err(AppEnvError::Unavailable)?;
            sealed.push((name.clone(), s));
        }
        let head = LayerHead {
            plugin: layer.plugin.clone(),
            revision,
            source: layer.source.clone(),
            updated_at: now,
        };
        db::replace(&mut tx, &app.id, &head, &sealed)
            .await
            .map_err(unavailable)?;
        let mut deployment = None;
        if changed {
            let actor = Actor {
                kind: "plugin".to_owned(),
                id: Some(layer.plugin.clone()),
                ..Actor::default()
            };
            let set: Vec<&String> = vars
                .iter()
                .filter(|(k, v)| current.get(*k) != Some(*v))
                .map(|(k, _)| k)
                .collect();
            let removed: Vec<&String> = current.keys().filter(|k| !vars.contains_key(*k)).collect();
            let e = event(&app, "app.env.changed", "update", &actor).data(json!({
                "set": set,
                "removed": removed,
                "plugin": layer.plugin,
                "source": layer.source,
            }));
            events::record(&mut tx, &e, now)
                .await
                .map_err(unavailable)?;
            deployment = pipeline::redeploy_env(&mut tx, &app, &actor)
                .await
                .map_err(unavailable)?
                .map(|d| d.id);
        }
        // At once, never held for an idempotency record: the pipeline
        // spawned next must see the deployment.
        tx.commit().await.map_err(unavailable)?;
        if let Some(d) = &deployment {
            self.spawn_pipeline(app.id.clone(), d.clone(), None);
        }
        Ok(SetOutcome {
            applied: true,
            changed,
            deployment,
        })
    }
}
