//! What this host runs: launching a deployment from its stored component
//! (or Linux image) on its runtime and health-checking it, switching the edge to it, and a loop that
//! brings this host in step with the database every second (after a
//! restart, and for changes other hosts made).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Empty};
use plateau_edge::Target;
use plateau_runner::container::ImageConfig;
use plateau_runner::{Artifact, Body, LaunchSpec, Limits, Replicas, Runner};
use plateau_store::apps::deployments::Deployment;
use plateau_store::apps::{self, App, components, env};

use crate::Apps;

/// What this host serves for one app.
#[derive(Clone)]
pub struct Local {
    pub slug: String,
    pub deployment_id: String,
    pub memory_mb: i64,
    pub milli_cpu: i64,
    pub replicas: i64,
    pub handle: Arc<dyn Replicas>,
}

/// Health check attempts before a deployment fails, and the pause
/// between them.
const HEALTH_ATTEMPTS: u32 = 10;
const HEALTH_PAUSE: Duration = Duration::from_millis(300);
const SUPERVISE_EVERY: Duration = Duration::from_secs(1);

impl Apps {
    /// Launches deployment `d` of `app` from its stored component with the
    /// app's environment and limits, and returns its replicas once they
    /// pass the health check.
    pub(crate) async fn launch_healthy(
        &self,
        app: &App,
        d: &Deployment,
    ) -> Result<Arc<dyn Replicas>, String> {
        let digest = d
            .component
            .as_deref()
            .ok_or("the deployment has no component")?;
        let stored = components::get(self.db(), &app.org_id, digest)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("the component {digest} is no longer stored"))?;
        let (runner, mut artifact) = self.artifact(&app.org_id, digest, stored)?;
        if let Artifact::Container { config, .. } = &mut artifact {
            config.port = app.port.and_then(|p| u16::try_from(p).ok());
        }
        let mut opened = Vec::new();
        for var in env::list(self.db(), &app.id)
            .await
            .map_err(|e| e.to_string())?
        {
            opened.push((
                var.name.clone(),
                crate::env::open(&self.inner.sealer, &app.id, &var.name, &var.sealed)?,
            ));
        }
        let spec = LaunchSpec {
            app_id: app.id.clone(),
            deployment_id: d.id.clone(),
            artifact,
            env: opened,
            limits: limits(app),
            logs: self.inner.logs.sink(&app.id, &d.id),
        };
        let handle = runner.launch(spec).await.map_err(|e| e.to_string())?;
        health_check(
            &*handle,
            &self.inner.edge.host_name(&app.slug),
            &app.health_check_path,
        )
        .await?;
        Ok(handle)
    }

    /// What a stored digest runs and on which runtime: a Wasm component
    /// (it starts with the Wasm magic) on wasmtime, else a Linux image's
    /// config, with the rootfs unpacked beside it, on runc.
    fn artifact(
        &self,
        org_id: &str,
        digest: &str,
        stored: Vec<u8>,
    ) -> Result<(Arc<dyn Runner>, Artifact), String> {
        if stored.starts_with(b"\0asm") {
            let artifact = Artifact::Wasm {
                digest: digest.to_owned(),
                bytes: Bytes::from(stored),
            };
            return Ok((self.inner.runner.clone(), artifact));
        }
        let containers = self.inner.containers.as_ref().ok_or(
            "this host runs no Linux images: install runc (apt-get install runc) and restart plateau",
        )?;
        let config = ImageConfig::parse(&stored).map_err(|e| e.to_string())?;
        let artifact = Artifact::Container {
            digest: digest.to_owned(),
            rootfs: crate::linux_image::rootfs(&containers.images, org_id, digest),
            config,
        };
        Ok((containers.runner.clone(), artifact))
    }

    /// Sends the app's traffic to `handle`, atomically; the replicas it
    /// replaces drain with the requests they hold.
    pub(crate) fn install(&self, app: &App, deployment_id: &str, handle: Arc<dyn Replicas>) {
        self.inner
            .edge
            .set(&app.slug, Target::Serving(handle.clone()));
        let mut local = self.inner.local.lock().unwrap_or_else(|e| e.into_inner());
        local.insert(
            app.id.clone(),
            Local {
                slug: app.slug.clone(),
                deployment_id: deployment_id.to_owned(),
                memory_mb: app.memory_mb,
                milli_cpu: app.milli_cpu,
                replicas: app.replicas,
                handle,
            },
        );
    }

    /// Tears the app's replicas down; a paused app's name answers 503,
    /// a trashed app's name nothing.
    pub(crate) fn take_down(&self, app_id: &str, slug: &str, paused: bool) {
        if paused {
            self.inner.edge.set(slug, Target::Paused);
        } else {
            self.inner.edge.remove(slug);
        }
        let old = self
            .inner
            .local
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(app_id);
        if let Some(old) = old {
            old.handle.stop();
        }
    }

    /// The replicas this host runs for an app, if any.
    pub fn running(&self, app_id: &str) -> Option<Local> {
        let local = self.inner.local.lock().unwrap_or_else(|e| e.into_inner());
        local.get(app_id).cloned()
    }

    pub(crate) async fn supervise(self) {
        loop {
            if let Err(e) = self.reconcile().await {
                tracing::warn!(error = %e, "apps: following the database");
            }
            tokio::time::sleep(SUPERVISE_EVERY).await;
        }
    }

    /// Brings this host's replicas and edge in step with the database.
    pub async fn reconcile(&self) -> plateau_store::Result<()> {
        let active = apps::active(self.db()).await?;
        let mut seen = HashSet::new();
        for app in &active {
            seen.insert(app.id.clone());
            let lock = self.lock_for(&app.id);
            let _turn = lock.lock().await;
            // Re-read under the lock: a pipeline may have just changed it.
            let Some(app) = apps::get_any(self.db(), &app.id).await? else {
                continue;
            };
            self.follow(&app).await?;
        }
        let gone: Vec<(String, String)> = {
            let local = self.inner.local.lock().unwrap_or_else(|e| e.into_inner());
            local
                .iter()
                .filter(|(id, _)| !seen.contains(*id))
                .map(|(id, l)| (id.clone(), l.slug.clone()))
                .collect()
        };
        for (id, slug) in gone {
            self.take_down(&id, &slug, false);
        }
        Ok(())
    }

    /// Makes this host serve `app` as the database says; the caller holds
    /// the app's lock.
    pub(crate) async fn follow(&self, app: &App) -> plateau_store::Result<()> {
        if app.deleted_at.is_some() {
            self.take_down(&app.id, &app.slug, false);
            return Ok(());
        }
        if app.status == "paused" {
            if self.running(&app.id).is_some()
                || !matches!(self.inner.edge.get(&app.slug), Some(Target::Paused))
            {
                self.take_down(&app.id, &app.slug, true);
            }
            return Ok(());
        }
        let Some(live) = &app.live_deployment_id else {
            return Ok(());
        };
        if let Some(local) = self.running(&app.id)
            && &local.deployment_id == live
            && local.memory_mb == app.memory_mb
            && local.milli_cpu == app.milli_cpu
        {
            if local.replicas != app.replicas {
                local.handle.set_replicas(app.replicas.max(1) as u32);
                let mut all = self.inner.local.lock().unwrap_or_else(|e| e.into_inner());
                if let Some(l) = all.get_mut(&app.id) {
                    l.replicas = app.replicas;
                }
            }
            return Ok(());
        }
        if self.recently_failed(&app.id, live) {
            return Ok(());
        }
        let Some(d) = apps::deployments::get(self.db(), &app.id, live).await? else {
            return Ok(());
        };
        match self.launch_healthy(app, &d).await {
            Ok(handle) => {
                self.forget_failure(&app.id);
                self.install(app, live, handle);
            }
            Err(reason) => {
                tracing::warn!(app = %app.id, deployment = %live, %reason, "apps: the live deployment does not start on this host");
                self.note_failure(&app.id, live);
            }
        }
        Ok(())
    }
}

/// The runner's limits for the app's settings.
pub(crate) fn limits(app: &App) -> Limits {
    Limits {
        memory_mb: app.memory_mb.clamp(1, u32::MAX as i64) as u32,
        milli_cpu: app.milli_cpu.clamp(1, u32::MAX as i64) as u32,
        replicas: app.replicas.clamp(1, u32::MAX as i64) as u32,
    }
}

/// GETs `path` until it answers 2xx or 3xx.
async fn health_check(handle: &dyn Replicas, host: &str, path: &str) -> Result<(), String> {
    let mut last = String::new();
    for attempt in 0..HEALTH_ATTEMPTS {
        if attempt > 0 {
            tokio::time::sleep(HEALTH_PAUSE).await;
        }
        let request: Request<Body> = Request::get(path)
            .header(header::HOST, host)
            .header(header::USER_AGENT, "plateau-health-check")
            .body(
                Empty::<Bytes>::new()
                    .map_err(|never| match never {})
                    .boxed_unsync(),
            )
            .map_err(|e| format!("the health check path {path:?} is not valid: {e}"))?;
        match handle.handle(request).await {
            Ok(response) => {
                let status = response.status();
                let _ = response.into_body().collect().await;
                if status.is_success() || status.is_redirection() {
                    return Ok(());
                }
                last = format!("GET {path} answered {status}");
            }
            Err(e) => last = e.to_string(),
        }
    }
    Err(format!(
        "the health check failed {HEALTH_ATTEMPTS} times; last: {last}"
    ))
}

/// How long a deployment that failed to start on this host is left alone.
const RETRY_AFTER: Duration = Duration::from_secs(30);

impl Apps {
    fn recently_failed(&self, app_id: &str, deployment_id: &str) -> bool {
        let failures = self
            .inner
            .failures
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        failures
            .get(app_id)
            .is_some_and(|(d, at)| d == deployment_id && at.elapsed() < RETRY_AFTER)
    }

    fn note_failure(&self, app_id: &str, deployment_id: &str) {
        let mut failures = self
            .inner
            .failures
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        failures.insert(
            app_id.to_owned(),
            (deployment_id.to_owned(), std::time::Instant::now()),
        );
    }

    fn forget_failure(&self, app_id: &str) {
        let mut failures = self
            .inner
            .failures
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        failures.remove(app_id);
    }
}

impl Apps {
    /// Follows the database for one app as soon as `ready` holds for it
    /// (once the request that changed it has committed).
    pub(crate) fn spawn_follow(
        &self,
        app_id: String,
        ready: impl Fn(&App) -> bool + Send + 'static,
    ) {
        let apps = self.clone();
        tokio::spawn(async move {
            let started = std::time::Instant::now();
            while started.elapsed() < Duration::from_secs(30) {
                if let Ok(Some(app)) = apps::get_any(apps.db(), &app_id).await
                    && ready(&app)
                {
                    let lock = apps.lock_for(&app_id);
                    let _turn = lock.lock().await;
                    if let Ok(Some(app)) = apps::get_any(apps.db(), &app_id).await
                        && let Err(e) = apps.follow(&app).await
                    {
                        tracing::warn!(app = %app_id, error = %e, "apps: following a change");
                    }
                    return;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        });
    }
}
