//! Plateau's object storage (spec section 4.9): per-organisation buckets
//! and access keys over the API under `/api/v1/storage`, and an
//! S3-compatible endpoint on its own listener, served by `s3s`.
//!
//! Both fronts speak to a [`Provider`] ([`provider`]); the local one
//! ([`local::LocalProvider`]) keeps bytes in an `object_store` and
//! metadata in Plateau's database. Keys ([`keys`]) are checked by the S3
//! front before any provider call.
//!
//! **Architecture Invariant:** a key of one organisation never reaches
//! another organisation's bucket: every S3 operation resolves the bucket
//! and checks its organisation against the key's before the provider
//! sees it.

pub mod acl;
pub mod api;
pub mod api_keys;
pub mod api_objects;
pub mod blobs;
pub mod checksum;
pub mod condition;
pub mod error;
pub mod keys;
pub mod kms;
pub mod lifecycle;
pub mod local;
pub mod lock;
pub mod names;
pub mod presign;
pub mod provider;
pub mod s3;
pub mod sse;
pub mod sweep;

use std::sync::{Arc, OnceLock};

pub use error::{Error, Result};
pub use provider::Provider;

use crate::keys::Keys;

/// Settings of object storage.
#[derive(Clone, Debug)]
pub struct StorageConfig {
    /// The base domain of virtual-host style requests (`s3.localhost`).
    pub domain: String,
    /// The endpoint's public address; by default `http://<domain>:<port>`.
    pub public_url: Option<String>,
    /// The region presigned URLs name (any region is accepted).
    pub region: String,
}

/// The shared handle of the API routes and the S3 endpoint.
#[derive(Clone)]
pub struct Storage {
    inner: Arc<Inner>,
}

struct Inner {
    provider: Arc<dyn Provider>,
    keys: Keys,
    config: StorageConfig,
    endpoint: OnceLock<String>,
}

impl Storage {
    pub fn new(provider: Arc<dyn Provider>, keys: Keys, config: StorageConfig) -> Self {
        Storage {
            inner: Arc::new(Inner {
                provider,
                keys,
                config,
                endpoint: OnceLock::new(),
            }),
        }
    }

    pub fn provider(&self) -> &dyn Provider {
        self.inner.provider.as_ref()
    }

    pub fn keys(&self) -> &Keys {
        &self.inner.keys
    }

    pub fn config(&self) -> &StorageConfig {
        &self.inner.config
    }

    /// Records the port the endpoint listens on.
    pub fn set_port(&self, port: u16) {
        let url = match &self.inner.config.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{}:{port}", self.inner.config.domain),
        };
        let _ = self.inner.endpoint.set(url);
    }

    /// The S3 endpoint's address, as clients use it.
    pub fn endpoint(&self) -> String {
        self.inner.endpoint.get().cloned().unwrap_or_else(|| {
            self.inner
                .config
                .public_url
                .clone()
                .unwrap_or_else(|| format!("http://{}", self.inner.config.domain))
        })
    }
}
