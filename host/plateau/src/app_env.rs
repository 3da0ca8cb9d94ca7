//! The apps behind the plugins' `app-env` capability: a plugin's layer of
//! an app's environment, set through [`plateau_apps::Apps`], which seals it
//! and redeploys the app on a change.
//!
//! The plugin runtime starts before the apps service, so [`HostAppEnv`] is
//! handed to it empty and filled once the apps exist; a call in between
//! answers that the apps are starting.

use std::sync::OnceLock;

use async_trait::async_trait;
use plateau_apps::Apps;
use plateau_plugin_runtime::app_env::{AppEnv, AppEnvError, AppInfo, Layer, SetOutcome};

/// The `app-env` service of this host.
#[derive(Default)]
pub struct HostAppEnv {
    apps: OnceLock<Apps>,
}

impl HostAppEnv {
    /// Starts answering with `apps`.
    pub fn start(&self, apps: Apps) {
        let _ = self.apps.set(apps);
    }

    fn apps(&self) -> Result<&Apps, AppEnvError> {
        self.apps
            .get()
            .ok_or_else(|| AppEnvError::Unavailable("the apps service is starting".into()))
    }
}

#[async_trait]
impl AppEnv for HostAppEnv {
    async fn get(&self, org_id: &str, app_id: &str) -> Result<AppInfo, AppEnvError> {
        self.apps()?.layer_app(org_id, app_id).await
    }

    async fn set(
        &self,
        org_id: &str,
        app_id: &str,
        layer: Layer,
    ) -> Result<SetOutcome, AppEnvError> {
        self.apps()?.set_layer(org_id, app_id, layer).await
    }
}
