//! The service behind the `app-env` capability: a plugin's layer of an
//! app's environment. The host implements [`AppEnv`] on its apps (sealing
//! the values with its key, checking names and values by the apps' own
//! rules, and redeploying the app on a change); this crate only checks
//! who may ask.

use async_trait::async_trait;

/// An app of an organisation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppInfo {
    pub id: String,
    pub name: String,
    pub live_deployment: Option<String>,
}

/// What a `set` did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SetOutcome {
    /// False for a stale revision: nothing changed.
    pub applied: bool,
    pub changed: bool,
    /// The redeployment the change started.
    pub deployment: Option<String>,
}

/// One layer to set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layer {
    /// The plugin whose layer it is.
    pub plugin: String,
    pub revision: u64,
    /// What the event names as the change's source.
    pub source: String,
    /// Names and values; empty removes the layer.
    pub vars: Vec<(String, String)>,
}

/// Why a call failed; each is a WIT error value for the guest.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AppEnvError {
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    AccessDenied(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Unavailable(String),
}

/// Reads and sets plugins' layers of apps' environments; the host
/// implements it.
#[async_trait]
pub trait AppEnv: Send + Sync {
    /// App `app_id` of organisation `org_id`; another organisation's is
    /// not found.
    async fn get(&self, org_id: &str, app_id: &str) -> Result<AppInfo, AppEnvError>;

    /// Replaces `layer.plugin`'s layer of app `app_id` if `layer.revision`
    /// is above the last one set, redeploying the app when its variables
    /// change.
    async fn set(
        &self,
        org_id: &str,
        app_id: &str,
        layer: Layer,
    ) -> Result<SetOutcome, AppEnvError>;
}
