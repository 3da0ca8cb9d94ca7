//! Launching on the data plane: a deployment runs from its stored
//! component (or Linux image) with the app's environment and limits, is
//! health-checked, and a new deployment is then promoted: the database
//! first, then this host's edge, in one atomic switch. A deployment that
//! never gets healthy fails with its reason and the live one keeps serving.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, header};
use http_body_util::{BodyExt, Empty};
use plateau_core::time;
use plateau_runner::container::ImageConfig;
use plateau_runner::{Artifact, Body, LaunchSpec, Limits, Replicas, Runner};
use plateau_store::apps::deployments::{self, Deployment};
use plateau_store::apps::{self, App, components};
use plateau_store::events::{self, Actor};
use serde_json::json;

use crate::AppStatus;
use crate::pipeline::{event, fail};
use crate::supervisor::Plane;

/// Health check attempts before a deployment fails, and the pause
/// between them.
const HEALTH_ATTEMPTS: u32 = 10;
const HEALTH_PAUSE: Duration = Duration::from_millis(300);

impl Plane {
    /// Launches deployment `d` of `app` from its stored component with the
    /// app's environment and limits, and returns its replicas once they
    /// pass the health check.
    pub(crate) async fn launch_healthy(
        &self,
        app: &App,
        d: &Deployment,
    ) -> Result<Launched, String> {
        let digest = d
            .component
            .as_deref()
            .ok_or("the deployment has no component")?;
        let stored = components::get(self.db(), &app.org_id, digest)
            .await
            .map_err(|e| e.to_string())?
            .ok_or_else(|| format!("the component {digest} is no longer stored"))?;
        let (runner, mut artifact) = self.artifact(&app.org_id, digest, stored)?;
        if let Artifact::Container { config, rootfs, .. } = &mut artifact {
            config.port = app.port.and_then(|p| u16::try_from(p).ok());
            if !rootfs.is_dir() {
                self.fetch_image(app, d, digest).await?;
            }
        }
        let opened = crate::previews::environment(self.db(), self.sealer(), app).await?;
        let (volumes, mounts) = crate::volumes::mounted(self.db(), &app.id)
            .await?
            .into_iter()
            .unzip();
        let spec = LaunchSpec {
            app_id: app.id.clone(),
            deployment_id: d.id.clone(),
            artifact,
            env: opened,
            limits: limits(app),
            logs: self.logs().sink(&app.id, &d.id),
            volumes: mounts,
        };
        let handle = runner.launch(spec).await.map_err(|e| e.to_string())?;
        health_check(
            &*handle,
            &self.edge().host_name(&app.slug),
            &app.health_check_path,
        )
        .await?;
        Ok(Launched { handle, volumes })
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
            return Ok((self.wasm().clone(), artifact));
        }
        let containers = self.containers().ok_or(
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

    /// Fetches the Linux image of `d` (config `digest`), which this host
    /// lacks, from the registry ([`crate::fetch`]).
    async fn fetch_image(&self, app: &App, d: &Deployment, digest: &str) -> Result<(), String> {
        let containers = self.containers().ok_or("this host runs no Linux images")?;
        let Some(pull) = &containers.fetch else {
            return Err(format!(
                "the image of deployment {} is not unpacked on this host, which fetches none",
                d.id
            ));
        };
        crate::fetch::fetch(&**pull, &containers.images, &app.org_id, d, digest).await
    }

    /// Records once per failure that the live deployment of `app` does not
    /// start on this host, and why (`app.start_failed`): the plane tries
    /// again after a pause, never in a loop.
    pub(crate) async fn record_start_failure(
        &self,
        app: &App,
        deployment_id: &str,
        reason: &str,
    ) -> plateau_store::Result<()> {
        let runner = self.placement().runner.as_ref().map(|r| r.id.clone());
        let now = time::now_ms();
        let mut tx = self.db().begin().await?;
        let e = event(app, "app.start_failed", "update", &Actor::system()).data(json!({
            "deploymentId": deployment_id,
            "serverId": runner,
            "reason": reason,
        }));
        events::record(&mut tx, &e, now).await?;
        tx.commit().await
    }

    /// Launches the new deployment `d` the API handed over (its component
    /// stored), and promotes it once healthy, or records why it failed;
    /// the caller holds the app's lock.
    pub(crate) async fn launch_new(&self, d: &Deployment) -> plateau_store::Result<()> {
        // Read the app now: the environment and limits are those of now.
        let Some(app) = apps::get_any(self.db(), &d.app_id).await? else {
            return Ok(());
        };
        if let Some(why) = gone(&app) {
            let reason = format!("the app was {why} during the deployment");
            return fail(self.db(), &app, d, &reason).await;
        }
        if app.live_deployment_id.is_none() {
            self.mark_loading(&app.slug);
        }
        let launched = match self.launch_healthy(&app, d).await {
            Ok(launched) => launched,
            Err(reason) => return fail(self.db(), &app, d, &reason).await,
        };
        self.promote(&app, d, launched).await
    }

    /// Records `d` live (unless the app went meanwhile), then serves it.
    async fn promote(
        &self,
        app: &App,
        d: &Deployment,
        launched: Launched,
    ) -> plateau_store::Result<()> {
        let handle = launched.handle.clone();
        let now = time::now_ms();
        let mut tx = self.db().begin().await?;
        let Some(current) = apps::get_in(&mut tx, &app.org_id, &app.id).await? else {
            return Ok(());
        };
        if let Some(why) = gone(&current) {
            drop(tx);
            handle.stop();
            let reason = format!("the app was {why} during the deployment");
            return fail(self.db(), app, d, &reason).await;
        }
        if !deployments::promote(&mut tx, &app.id, &d.id, now).await? {
            drop(tx);
            // Another host promoted it: serve it here too; or it failed.
            let now_live = deployments::get(self.db(), &app.id, &d.id).await?;
            if now_live.is_some_and(|d| d.status == "live") {
                self.install(&current, &d.id, launched);
            } else {
                handle.stop();
            }
            return Ok(());
        }
        apps::set_live(&mut tx, &app.id, &d.id, now).await?;
        // The app's image is the one live: set when a deployment of an
        // image goes live (a rollback's too), not when it is asked for.
        if d.source_type == "image"
            && let Some(image) = &d.image
        {
            apps::set_image(&mut tx, &app.id, image, now).await?;
        }
        let e = event(app, "app.deployment.live", "deploy", &Actor::system()).data(json!({
            "deploymentId": d.id,
            "cause": d.cause,
            "image": d.image,
            "digest": d.digest,
            "previous": current.live_deployment_id,
        }));
        events::record(&mut tx, &e, now).await?;
        tx.commit().await?;
        let mut live = current;
        live.live_deployment_id = Some(d.id.clone());
        live.status = AppStatus::Running.as_str().to_owned();
        self.install(&live, &d.id, launched);
        Ok(())
    }
}

/// A deployment's replicas, healthy, and the volumes they mount.
pub(crate) struct Launched {
    pub handle: Arc<dyn Replicas>,
    /// Ids of the app's volumes the replicas mount.
    pub volumes: Vec<String>,
}

/// Why a deployment of `app` may not go live: deleted or paused.
fn gone(app: &App) -> Option<&'static str> {
    if app.deleted_at.is_some() {
        Some("deleted")
    } else if AppStatus::Paused.is(&app.status) {
        Some("paused")
    } else {
        None
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
