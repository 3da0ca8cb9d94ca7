//! A plugin's layer of an app's environment (the `app-env` capability,
//! WIT 0.5.2): the host seals the variables with its key and gives them
//! to the app's replicas beside the app's own (which win on a name both
//! have); a layer that changes redeploys the app. A set is committed at
//! once, not with the call, and applies only when its revision is above
//! the last one this plugin set for the app, so syncs that race converge
//! on the newest.

use crate::error::ApiError;
use crate::sys;

/// Whose app: the caller's organisation, or (in a job, a tick or an
/// event, which have no caller) an organisation named by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    Caller,
    Organization(String),
}

/// An app of the owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct App {
    pub id: String,
    pub name: String,
    pub live_deployment: Option<String>,
}

/// What a set did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// False for a stale revision: nothing changed.
    pub applied: bool,
    pub changed: bool,
    /// The redeployment the change started.
    pub deployment: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
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

impl From<AppEnvError> for ApiError {
    fn from(error: AppEnvError) -> ApiError {
        match error {
            AppEnvError::NotFound(m) => ApiError::not_found(m),
            AppEnvError::Invalid(m) => ApiError::bad_request(m),
            AppEnvError::Unavailable(m) => {
                ApiError::unavailable(format!("apps are unavailable, retry later: {m}"))
            }
            AppEnvError::AccessDenied(m) => ApiError::internal(m),
        }
    }
}

/// The app `id` of `owner`; another organisation's is not found.
pub fn get(owner: &Owner, id: &str) -> Result<App, AppEnvError> {
    sys::app_env_get(owner, id)
}

/// Replaces this plugin's layer of app `id` with `vars` (empty removes
/// it) if `revision` is above the last one set; `source` labels the
/// change in the app's timeline.
pub fn set(
    owner: &Owner,
    id: &str,
    revision: u64,
    source: &str,
    vars: &[(String, String)],
) -> Result<Outcome, AppEnvError> {
    sys::app_env_set(owner, id, revision, source, vars)
}
