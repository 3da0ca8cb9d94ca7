//! Apps (spec sections 3 and 4.4): the app model and its API
//! ([`api`]), the deployment pipeline ([`pipeline`]: build, resolve the
//! image, then wait for the data plane's outcome), and the data plane
//! ([`supervisor::Plane`], in the host's `plateau agent` process): it
//! launches, health-checks and promotes new deployments ([`launch`]) and
//! keeps this host's replicas and edge in step with the database.
//!
//! The two processes share the database (the desired state: each app's
//! live deployment, scale, limits, paused; the deployments to launch)
//! and a Unix socket ([`control`]) the API uses to have the plane follow
//! a change at once and to ask what runs.
//!
//! A deployment runs on a [`plateau_runner::Runner`] and is served by the
//! [`plateau_edge::Edge`]; this crate is the only one that knows both and
//! the database.
//!
//! **Architecture Invariant:** the database says which deployment of an
//! app is live; every host only follows it (the plane that promotes a
//! deployment writes it first, then switches its own edge).
//! **Architecture Invariant:** the data plane needs no API process: while
//! `plateau serve` is down or restarting, apps serve from the routing the
//! plane last followed.
//! **Architecture Invariant:** a deployment's component is stored before
//! it is launched, so rollbacks, resumes, restores and restarts never
//! reach a registry.

pub mod analytics;
pub mod api;
pub mod autoscale;
pub mod bots;
pub mod build;
pub mod cdn;
pub mod config;
pub mod control;
pub mod domains;
pub mod env;
pub mod failures;
pub mod fetch;
pub mod filter_stats;
pub mod filters;
pub mod image;
pub mod launch;
pub mod linux_image;
pub mod logs;
pub mod metering;
pub mod pipeline;
pub mod placement;
pub mod plugin_env;
pub mod previews;
pub mod rules;
pub mod spend;
pub mod status;
pub mod supervisor;
pub mod upload;
pub mod volumes;
pub mod waf;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use plateau_runner::Runner;
use plateau_seal::Sealer;
use plateau_store::Db;

pub use config::AppsConfig;
pub use image::RegistryAccess;
pub use status::AppStatus;
pub use supervisor::Plane;
pub use volumes::Volumes;

use crate::control::AgentLink;

/// The Linux container runtime of this host and where it unpacks images.
#[derive(Clone)]
pub struct Containers {
    pub runner: Arc<dyn Runner>,
    /// `<images>/<org>/<config hex>/rootfs`.
    pub images: std::path::PathBuf,
    /// How this host fetches an image it lacks from the registry (in the
    /// agent); without it, only images unpacked here run.
    pub fetch: Option<Arc<dyn fetch::HostPull>>,
}

/// The apps service of this host; cheap to clone. In the API process it
/// serves the routes and runs the pipelines; in the agent it is what the
/// [`Plane`] reads and records with.
#[derive(Clone)]
pub struct Apps {
    inner: Arc<Inner>,
}

struct Inner {
    db: Db,
    config: AppsConfig,
    sealer: Arc<Sealer>,
    /// Where Linux images are unpacked, when this host runs them.
    images: Option<std::path::PathBuf>,
    registry: Arc<dyn RegistryAccess>,
    /// The data plane of this host, as the API process reaches it.
    agent: Option<AgentLink>,
    /// Builds git and uploaded sources, when this host does.
    builder: Option<Arc<dyn build::Builder>>,
    /// Signs upload URLs, when this host takes uploads.
    uploads: Option<upload::UploadSigner>,
    /// One lock per app: its pipelines take turns.
    locks: Mutex<HashMap<String, Arc<tokio::sync::Mutex<()>>>>,
}

impl Apps {
    pub fn new(
        db: Db,
        config: AppsConfig,
        sealer: Arc<Sealer>,
        registry: Arc<dyn RegistryAccess>,
    ) -> Apps {
        Apps {
            inner: Arc::new(Inner {
                db,
                config,
                sealer,
                images: None,
                registry,
                agent: None,
                builder: None,
                uploads: None,
                locks: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// This service unpacking Linux images under `images` (before it is
    /// cloned or started).
    pub fn with_images(mut self, images: std::path::PathBuf) -> Apps {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.images = Some(images);
        }
        self
    }

    /// This service reaching its host's data plane at `agent` (before it
    /// is cloned or started).
    pub fn with_agent(mut self, agent: AgentLink) -> Apps {
        if let Some(inner) = Arc::get_mut(&mut self.inner) {
            inner.agent = Some(agent);
        }
        self
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

    /// The public address of the app with `slug`.
    pub fn url(&self, slug: &str) -> String {
        self.inner.config.url(slug)
    }

    fn lock_for(&self, app_id: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.inner.locks.lock().unwrap_or_else(|e| e.into_inner());
        locks.entry(app_id.to_owned()).or_default().clone()
    }

    /// Starts the API process's background work: the deployments a
    /// previous run left pending, the sweep of uploads nobody built, and
    /// of previews whose delete a previous run did not finish.
    pub fn start(&self) -> Vec<tokio::task::JoinHandle<()>> {
        vec![
            tokio::spawn(self.clone().resume_pending()),
            tokio::spawn(self.clone().sweep_uploads()),
            tokio::spawn(self.clone().sweep_previews()),
        ]
    }
}

impl Apps {
    /// The app's variables as name → (target, SHA-256 of the value in
    /// hex): what a manifest compares its desired environment with, so no
    /// value leaves this crate in the clear.
    pub async fn env_digests(
        &self,
        app_id: &str,
    ) -> Result<std::collections::BTreeMap<String, (String, String)>, String> {
        use sha2::Digest;
        let vars = plateau_store::apps::env::list(self.db(), app_id)
            .await
            .map_err(|e| e.to_string())?;
        let mut digests = std::collections::BTreeMap::new();
        for v in vars {
            let value = env::open(self.sealer(), app_id, &v.name, &v.sealed)?;
            let digest = hex::encode(sha2::Sha256::digest(value.as_bytes()));
            digests.insert(v.name, (v.target, digest));
        }
        Ok(digests)
    }

    pub(crate) fn sealer(&self) -> &Sealer {
        &self.inner.sealer
    }

    pub(crate) fn agent(&self) -> Option<&AgentLink> {
        self.inner.agent.as_ref()
    }
}
