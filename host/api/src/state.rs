//! The state every handler shares: the database, the settings, the cursor
//! codec and the catalogue of known scopes.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock, RwLock};

use plateau_core::CORE_SCOPES;
use plateau_store::Db;

use crate::pagination::CursorCodec;
use crate::spend::AppsControl;
use crate::token_cache::TokenCache;

/// Settings of the API layer.
#[derive(Clone, Debug)]
pub struct ApiConfig {
    /// The platform operator's password; without it admin login is off.
    pub admin_password: Option<String>,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// Lifetime of a minted token when `expiresInSeconds` is omitted.
    pub default_token_ttl_secs: i64,
    /// Lifetime of an admin session.
    pub admin_session_ttl_secs: i64,
    /// How long a verified token is trusted without reading the database.
    pub auth_cache_ttl: std::time::Duration,
    /// Where a referral link's visit is sent on to, with `ref=<code>`.
    pub referral_landing: String,
}

impl Default for ApiConfig {
    fn default() -> Self {
        ApiConfig {
            admin_password: None,
            max_body_bytes: 1024 * 1024,
            default_token_ttl_secs: DEFAULT_TOKEN_TTL_SECS,
            admin_session_ttl_secs: 12 * 60 * 60,
            auth_cache_ttl: std::time::Duration::from_secs(2),
            referral_landing: "/console/".to_owned(),
        }
    }
}

/// 90 days: the lifetime of a minted token that does not ask for one.
pub const DEFAULT_TOKEN_TTL_SECS: i64 = 90 * 24 * 60 * 60;

#[derive(Clone)]
pub struct AppState {
    inner: Arc<Inner>,
}

struct Inner {
    db: Db,
    config: ApiConfig,
    cursors: CursorCodec,
    tokens: TokenCache,
    /// Scope name to description: the core scopes plus those plugins add.
    scopes: RwLock<BTreeMap<String, String>>,
    /// OpenAPI `paths` of the plugins in service, merged into the document.
    plugin_paths: RwLock<serde_json::Value>,
    /// What pauses and resumes apps for spend budgets, once the apps
    /// area is up.
    apps_control: OnceLock<Arc<dyn AppsControl>>,
}

impl AppState {
    pub fn new(db: Db, config: ApiConfig, cursor_key: Vec<u8>) -> Self {
        let scopes = CORE_SCOPES
            .iter()
            .map(|(name, description)| ((*name).to_owned(), (*description).to_owned()))
            .collect();
        AppState {
            inner: Arc::new(Inner {
                db,
                cursors: CursorCodec::new(cursor_key),
                tokens: TokenCache::new(config.auth_cache_ttl),
                config,
                scopes: RwLock::new(scopes),
                plugin_paths: RwLock::new(serde_json::Value::Null),
                apps_control: OnceLock::new(),
            }),
        }
    }

    pub fn db(&self) -> &Db {
        &self.inner.db
    }

    pub fn config(&self) -> &ApiConfig {
        &self.inner.config
    }

    pub fn cursors(&self) -> &CursorCodec {
        &self.inner.cursors
    }

    pub fn token_cache(&self) -> &TokenCache {
        &self.inner.tokens
    }

    pub fn is_known_scope(&self, name: &str) -> bool {
        self.inner
            .scopes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .contains_key(name)
    }

    /// Adds scopes (from a plugin's self-description) to the catalogue.
    pub fn add_scopes(&self, scopes: impl IntoIterator<Item = (String, String)>) {
        let mut known = self.inner.scopes.write().unwrap_or_else(|e| e.into_inner());
        known.extend(scopes);
    }

    /// Replaces the plugins' part of the OpenAPI document.
    pub fn set_plugin_paths(&self, paths: serde_json::Value) {
        *self
            .inner
            .plugin_paths
            .write()
            .unwrap_or_else(|e| e.into_inner()) = paths;
    }

    pub fn plugin_paths(&self) -> serde_json::Value {
        self.inner
            .plugin_paths
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Sets what pauses and resumes apps (once; later calls are ignored).
    pub fn set_apps_control(&self, control: Arc<dyn AppsControl>) {
        let _ = self.inner.apps_control.set(control);
    }

    pub fn apps_control(&self) -> Option<Arc<dyn AppsControl>> {
        self.inner.apps_control.get().cloned()
    }

    pub fn known_scopes(&self) -> BTreeMap<String, String> {
        self.inner
            .scopes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
}
