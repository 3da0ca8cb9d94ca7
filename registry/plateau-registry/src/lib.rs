//! Plateau's container registry: the OCI Distribution Specification v1.1
//! under `/v2`, served next to the API by `plateau serve`.
//!
//! Repositories live in their organisation's namespace, `<org id>/<path>`;
//! another organisation's repositories answer exactly as if they did not
//! exist. Blob content goes to an `object_store` ([`blobs`]), metadata to
//! Plateau's database through `plateau_store::registry` (this crate writes
//! no SQL), and every push or delete of a manifest is an event in the
//! organisation's timeline and audit log (category `registry`).
//!
//! **Architecture Invariant:** the registry answers in the OCI error format
//! (`{"errors":[...]}`), not with the API's problem documents: OCI clients
//! read only that format.

pub mod auth;
pub mod blobs;
pub mod error;
pub mod gc;
pub mod manifest;
pub mod quota;
pub mod reference;
pub mod routes;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::routing::any;
use plateau_api::AppState;
use plateau_core::secret;
use plateau_store::{Db, settings};

pub use blobs::BlobStore;
pub use error::{Error, Result};

use crate::reference::Hasher;

/// Settings of the registry.
#[derive(Clone, Debug)]
pub struct RegistryConfig {
    /// The registry's public address (`https://registry.example.com`), for
    /// the bearer challenge; by default taken from each request's `Host`.
    pub public_url: Option<String>,
    /// Open upload sessions an organisation may have at once.
    pub max_uploads_per_org: i64,
}

impl Default for RegistryConfig {
    fn default() -> Self {
        RegistryConfig {
            public_url: None,
            max_uploads_per_org: 100,
        }
    }
}

/// The registry's shared state.
#[derive(Clone)]
pub struct Registry {
    inner: Arc<Inner>,
}

struct Inner {
    app: AppState,
    store: BlobStore,
    config: RegistryConfig,
    token_key: Vec<u8>,
    /// Running hashes of uploads in progress on this host, by upload id,
    /// with the bytes they cover. Another host (or a restart) reads the
    /// parts back instead.
    hashers: Mutex<HashMap<String, (u64, Hasher)>>,
}

impl Registry {
    /// The registry over the API's state; the bearer signing key is kept
    /// in the database so that every host shares it.
    pub async fn new(app: AppState, store: BlobStore, config: RegistryConfig) -> Result<Registry> {
        let key = token_key_of(app.db()).await?;
        Ok(Registry {
            inner: Arc::new(Inner {
                app,
                store,
                config,
                token_key: key,
                hashers: Mutex::new(HashMap::new()),
            }),
        })
    }

    pub fn app(&self) -> &AppState {
        &self.inner.app
    }

    pub fn db(&self) -> &Db {
        self.inner.app.db()
    }

    pub fn store(&self) -> &BlobStore {
        &self.inner.store
    }

    pub fn config(&self) -> &RegistryConfig {
        &self.inner.config
    }

    fn token_key(&self) -> &[u8] {
        &self.inner.token_key
    }

    /// Takes the running hash of an upload if it covers exactly `size` bytes.
    fn take_hasher(&self, upload_id: &str, size: u64) -> Option<Hasher> {
        let mut map = self.inner.hashers.lock().unwrap_or_else(|e| e.into_inner());
        match map.remove(upload_id) {
            Some((n, h)) if n == size => Some(h),
            _ => None,
        }
    }

    fn put_hasher(&self, upload_id: &str, size: u64, hasher: Hasher) {
        let mut map = self.inner.hashers.lock().unwrap_or_else(|e| e.into_inner());
        map.insert(upload_id.to_owned(), (size, hasher));
    }

    fn forget_hasher(&self, upload_id: &str) {
        let mut map = self.inner.hashers.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(upload_id);
    }
}

/// Adds the `/v2` routes to `router` (the API). Added after the API's own
/// layers, they keep the OCI error format, while unknown paths still get
/// the API's problem bodies.
pub fn mount(router: Router, registry: Registry) -> Router {
    let trace = tower_http::trace::TraceLayer::new_for_http().make_span_with(
        |req: &axum::extract::Request| {
            tracing::info_span!("registry", method = %req.method(), path = %req.uri().path())
        },
    );
    let root = any(routes::root)
        .with_state(registry.clone())
        .layer(trace.clone());
    let all = any(routes::dispatch).with_state(registry).layer(trace);
    router
        .route("/v2", root.clone())
        .route("/v2/", root)
        .route("/v2/{*path}", all)
}

/// The key registry bearers are signed with, kept in the database so that
/// every host shares it (made on first use).
pub(crate) async fn token_key_of(db: &Db) -> Result<Vec<u8>> {
    let key = settings::get_or_init(db, "registry_token_key", || secret::generate("")).await?;
    Ok(key.into_bytes())
}
