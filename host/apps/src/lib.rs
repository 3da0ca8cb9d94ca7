//! Apps (spec sections 3 and 4.4): the app model and its API
//! ([`api`]), the deployment pipeline ([`pipeline`]: resolve the image,
//! launch, health-check, promote), and the [`supervisor`] that keeps this
//! host's edge in step with the database.
//!
//! A deployment runs on a [`plateau_runner::Runner`] and is served by the
//! [`plateau_edge::Edge`]; this crate is the only one that knows both and
//! the database.
//!
//! **Architecture Invariant:** the database says which deployment of an
//! app is live; every host only follows it (the pipeline that promotes a
//! deployment writes it first, then switches its own edge).
//! **Architecture Invariant:** a deployment's component is stored before
//! it is launched, so rollbacks, resumes, restores and restarts never
//! reach a registry.

pub mod api;
pub mod build;
pub mod config;
pub mod env;
pub mod image;
pub mod linux_image;
pub mod logs;
pub mod pipeline;
pub mod supervisor;
pub mod upload;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use plateau_edge::Edge;
use plateau_runner::Runner;
use plateau_seal::Sealer;
use plateau_store::Db;

pub use config::AppsConfig;
pub use image::RegistryAccess;

use crate::logs::LogBuffer;
use crate::supervisor::Local;

/// The Linux container runtime of this host and where it unpacks images.
#[derive(Clone)]
pub struct Containers {
    pub runner: Arc<dyn Runner>,
    /// `<images>/<org>/<config hex>/rootfs`.
    pub images: std::path::PathBuf,
}

/// The apps service of this host; cheap to clone.
#[derive(Clone)]
pub struct Apps {
    inner: Arc<Inner>,
}

struct Inner {
    db: Db,
    config: AppsConfig,
    sealer: Arc<Sealer>,
    runner: Arc<dyn Runner>,
    /// Runs Linux images, when this host can (runc installed).
    containers: Option<Containers>,
    images: Option<std::path::PathBuf>,
    edge: Arc<Edge>,
    registry: Arc<dyn RegistryAccess>,
    /// Builds git and uploaded sources, when this host does.
    builder: Option<Arc<dyn build::Builder>>,
    /// Signs upload URLs, when this host takes uploads.
    uploads: Option<upload::UploadSigner>,
    logs: Arc<LogBuffer>,
    /// What this host runs, by app id.
    local: Mutex<HashMap<String, Local>>,
    /// One lock per app: its pipeline runs and its supervision take turns.
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
    /// Live deployments that failed to start here, and when.
    failures: Mutex<HashMap<String, (String, std::time::Instant)>>,
}

impl Apps {
    pub fn new(
        db: Db,
        config: AppsConfig,
        sealer: Arc<Sealer>,
        runner: Arc<dyn Runner>,
        containers: Option<Containers>,
        edge: Arc<Edge>,
        registry: Arc<dyn RegistryAccess>,
    ) -> Apps {
        let logs = Arc::new(LogBuffer::new(db.clone(), config.log_retention));
        Apps {
            inner: Arc::new(Inner {
                db,
                config,
                sealer,
                images: containers.as_ref().map(|c| c.images.clone()),
                runner,
                containers,
                edge,
                registry,
                builder: None,
                uploads: None,
                logs,
                local: Mutex::new(HashMap::new()),
                locks: Mutex::new(HashMap::new()),
                failures: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// This service with `builder` building its sources (before it is
    /// cloned or started).
    pub fn with_builder(mut self, builder: Arc<dyn build::Builder>) -> Apps {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.builder = Some(builder);
        }
        self
    }

    /// This service taking source uploads, their URLs signed with a key
    /// derived from `secret` (before it is cloned or started).
    pub fn with_upload_key(mut self, secret: &[u8]) -> Apps {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.uploads = Some(upload::UploadSigner::new(secret));
        }
        self
    }

    pub fn db(&self) -> &Db {
        &self.inner.db
    }

    pub fn config(&self) -> &AppsConfig {
        &self.inner.config
    }

    pub fn edge(&self) -> &Arc<Edge> {
        &self.inner.edge
    }

    /// The public address of the app with `slug`.
    pub fn url(&self, slug: &str) -> String {
        self.inner.config.url(slug)
    }

    fn lock_for(&self, app_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.inner.locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(app_id.to_owned()).or_default().clone()
    }

    /// Starts the background work: log flushing, the supervision loop,
    /// the deployments a previous run left pending, and the sweep of
    /// uploads nobody built.
    pub fn start(&self) -> Vec<tokio::task::JoinHandle<()>> {
        vec![
            tokio::spawn(self.inner.logs.clone().keep_flushing()),
            tokio::spawn(self.clone().supervise()),
            tokio::spawn(self.clone().resume_pending()),
            tokio::spawn(self.clone().sweep_uploads()),
        ]
    }

    /// Writes buffered log lines (at shutdown).
    pub async fn flush_logs(&self) {
        self.inner.logs.flush().await;
    }
}

impl Apps {
    pub(crate) fn sealer(&self) -> &Sealer {
        &self.inner.sealer
    }
}
