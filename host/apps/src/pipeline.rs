//! The deployment pipeline of the API process: a pending deployment is
//! built (git and uploaded sources) and resolved to a stored component
//! (pulled once); storing it hands the deployment to the data plane
//! ([`crate::launch`], in `plateau agent`), which launches, health-checks
//! and promotes it or records why it failed. The pipeline waits for that
//! recorded outcome, so an app's deployments go live in order. Each step
//! is an event in the timeline.

use std::time::Duration;

use plateau_core::id::new_id;
use plateau_core::time;
use plateau_store::apps::deployments::{self, Deployment};
use plateau_store::apps::{self, App, components};
use plateau_store::events::{self, Actor, NewEvent};
use plateau_store::{Db, Tx};
use serde_json::json;

use crate::image::{self, PullAs};
use crate::{AppStatus, Apps};

/// How long the pipeline waits for the request that created a deployment
/// to commit (it commits with its idempotency record, after the handler).
const VISIBLE_WITHIN: Duration = Duration::from_secs(30);

/// The statuses of a deployment on its way.
const WORKING: [&str; 3] = ["pending", "building", "deploying"];
/// How often the pipeline reads whether its deployment went live.
const OUTCOME_POLL: Duration = Duration::from_millis(100);

/// An event of an app's deployment (category `deploys`).
pub fn event(app: &App, kind: &str, action: &str, actor: &Actor) -> NewEvent {
    NewEvent::audited(&app.org_id, kind, "deploys", action, actor).resource("app", &app.id)
}

/// A new pending deployment of `app`, for the caller's transaction.
pub fn pending(
    app: &App,
    cause: &str,
    image: Option<String>,
    from: Option<&Deployment>,
) -> Deployment {
    Deployment {
        id: new_id("dpl"),
        app_id: app.id.clone(),
        org_id: app.org_id.clone(),
        status: "pending".to_owned(),
        cause: cause.to_owned(),
        source_type: from.map_or("image", |d| d.source_type.as_str()).to_owned(),
        image: from.and_then(|d| d.image.clone()).or(image),
        digest: from.and_then(|d| d.digest.clone()),
        component: from.and_then(|d| d.component.clone()),
        reason: None,
        created_at: time::now_ms(),
        live_at: None,
        finished_at: None,
        repo: from.and_then(|d| d.repo.clone()),
        branch: from.and_then(|d| d.branch.clone()),
        upload_id: None,
        build_log: None,
    }
}

/// A new pending deployment building `branch` of the git repository `repo`.
pub fn pending_git(app: &App, repo: &str, branch: &str) -> Deployment {
    let mut d = pending(app, "deploy", None, None);
    d.source_type = "git".to_owned();
    d.repo = Some(repo.to_owned());
    d.branch = Some(branch.to_owned());
    d
}

/// A new pending deployment building the uploaded archive `upload_id`.
pub fn pending_upload(app: &App, upload_id: &str) -> Deployment {
    let mut d = pending(app, "deploy", None, None);
    d.source_type = "upload".to_owned();
    d.upload_id = Some(upload_id.to_owned());
    d
}

/// Inserts `d` with its event; a first deployment makes the app `deploying`.
pub async fn create(
    tx: &mut Tx,
    app: &App,
    d: &Deployment,
    actor: &Actor,
) -> plateau_store::Result<()> {
    deployments::insert(tx, d).await?;
    if app.live_deployment_id.is_none() && !AppStatus::Paused.is(&app.status) {
        let deploying = AppStatus::Deploying.as_str();
        apps::set_status(tx, &app.id, deploying, d.created_at).await?;
    }
    let e = event(app, "app.deployment.created", "deploy", actor).data(json!({
        "deploymentId": d.id,
        "cause": d.cause,
        "image": d.image,
        "source": d.source_type,
        "repo": d.repo,
        "branch": d.branch,
        "uploadId": d.upload_id,
    }));
    events::record(tx, &e, d.created_at).await?;
    Ok(())
}

/// A redeployment of the live component after a change of the app's
/// environment (cause `env`), for the caller's transaction: none when the
/// app has no live deployment or is paused.
pub async fn redeploy_env(
    tx: &mut Tx,
    app: &App,
    actor: &Actor,
) -> plateau_store::Result<Option<Deployment>> {
    let Some(live) = &app.live_deployment_id else {
        return Ok(None);
    };
    if AppStatus::Paused.is(&app.status) {
        return Ok(None);
    }
    let Some(from) = deployments::get_in(tx, &app.id, live).await? else {
        return Ok(None);
    };
    let d = pending(app, "env", None, Some(&from));
    create(tx, app, &d, actor).await?;
    Ok(Some(d))
}

impl Apps {
    /// Runs the pipeline of `deployment_id` in the background; `pull`
    /// is who pulls when the deployment needs its image.
    pub fn spawn_pipeline(&self, app_id: String, deployment_id: String, pull: Option<PullAs>) {
        let apps = self.clone();
        tokio::spawn(async move { apps.run_pipeline(&app_id, &deployment_id, pull).await });
    }

    async fn run_pipeline(&self, app_id: &str, deployment_id: &str, pull: Option<PullAs>) {
        let lock = self.lock_for(app_id);
        let _turn = lock.lock().await;
        let Some(d) = self.wait_visible(app_id, deployment_id).await else {
            return;
        };
        if !WORKING.contains(&d.status.as_str()) {
            return;
        }
        let outcome = self.steps(app_id, d, pull).await;
        if let Err(e) = outcome {
            tracing::warn!(app = app_id, deployment = deployment_id, error = %e, "apps: the pipeline stopped");
        }
    }

    /// Waits until the request that created the deployment has committed.
    async fn wait_visible(&self, app_id: &str, id: &str) -> Option<Deployment> {
        let started = std::time::Instant::now();
        while started.elapsed() < VISIBLE_WITHIN {
            match deployments::get(self.db(), app_id, id).await {
                Ok(Some(d)) => return Some(d),
                Ok(None) => tokio::time::sleep(Duration::from_millis(20)).await,
                Err(e) => {
                    tracing::warn!(error = %e, "apps: reading a deployment");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
        None
    }

    async fn steps(
        &self,
        app_id: &str,
        mut d: Deployment,
        pull: Option<PullAs>,
    ) -> plateau_store::Result<()> {
        let Some(app) = apps::get_any(self.db(), app_id).await? else {
            return Ok(());
        };
        if d.component.is_none() && d.image.is_none() && d.source_type != "image" {
            match self.build(&app, &d, pull.as_ref()).await? {
                Ok(image) => d.image = Some(image),
                Err(reason) => return self.fail(&app, &d, &reason).await,
            }
        }
        if d.component.is_none() {
            match self.resolve(&app, &d, pull).await? {
                Ok(component) => d.component = Some(component),
                Err(reason) => return self.fail(&app, &d, &reason).await,
            }
        }
        self.await_outcome(&d).await;
        Ok(())
    }

    /// Waits until the data plane recorded the outcome of `d` (live or
    /// failed), checking the database every [`OUTCOME_POLL`].
    async fn await_outcome(&self, d: &Deployment) {
        if let Some(agent) = self.agent() {
            agent.nudge(&d.app_id);
        }
        loop {
            match deployments::get(self.db(), &d.app_id, &d.id).await {
                Ok(Some(now)) if !WORKING.contains(&now.status.as_str()) => return,
                Ok(None) => return,
                Ok(Some(_)) => {}
                Err(e) => tracing::warn!(error = %e, "apps: reading a deployment"),
            }
            tokio::time::sleep(OUTCOME_POLL).await;
        }
    }

    /// Pulls the deployment's image and stores its component; the inner
    /// error is the deployment's failure reason.
    async fn resolve(
        &self,
        app: &App,
        d: &Deployment,
        pull: Option<PullAs>,
    ) -> plateau_store::Result<Result<String, String>> {
        let Some(image) = d.image.as_deref() else {
            return Ok(Err(
                "the deployment names no image; set the app's image".to_owned()
            ));
        };
        let Some(who) = pull else {
            return Ok(Err(
                "the host restarted before the image was pulled; deploy again".to_owned(),
            ));
        };
        let resolved = match image::resolve(
            image,
            &who,
            &*self.inner.registry,
            &self.config().allowed_registries,
            self.inner.images.as_deref(),
        )
        .await
        {
            Ok(resolved) => resolved,
            Err(reason) => return Ok(Err(reason)),
        };
        let now = time::now_ms();
        let mut tx = self.db().begin().await?;
        components::put(
            &mut tx,
            &app.org_id,
            &resolved.component_digest,
            &resolved.stored,
            now,
        )
        .await?;
        deployments::set_artifact(
            &mut tx,
            &d.id,
            &resolved.manifest_digest,
            &resolved.component_digest,
        )
        .await?;
        let e = event(app, "app.deployment.pulled", "deploy", &Actor::system()).data(json!({
            "deploymentId": d.id,
            "image": image,
            "digest": resolved.manifest_digest,
            "bytes": resolved.stored.len(),
        }));
        events::record(&mut tx, &e, now).await?;
        tx.commit().await?;
        Ok(Ok(resolved.component_digest))
    }

    async fn fail(&self, app: &App, d: &Deployment, reason: &str) -> plateau_store::Result<()> {
        fail(self.db(), app, d, reason).await
    }

    /// Picks up the deployments a previous run of the host left pending.
    pub(crate) async fn resume_pending(self) {
        match deployments::pending(self.db()).await {
            Ok(pending) => {
                for d in pending {
                    self.spawn_pipeline(d.app_id.clone(), d.id.clone(), None);
                }
            }
            Err(e) => tracing::warn!(error = %e, "apps: reading pending deployments"),
        }
    }
}

/// Records that `d` failed with `reason` (a first deployment's failure
/// makes the app `failed`); nothing when it was no longer working.
pub(crate) async fn fail(
    db: &Db,
    app: &App,
    d: &Deployment,
    reason: &str,
) -> plateau_store::Result<()> {
    let now = time::now_ms();
    let mut tx = db.begin().await?;
    if !deployments::fail(&mut tx, &d.id, reason, now).await? {
        return Ok(());
    }
    let current = apps::get_in(&mut tx, &app.org_id, &app.id).await?;
    if let Some(current) = current
        && current.live_deployment_id.is_none()
        && AppStatus::Deploying.is(&current.status)
    {
        apps::set_status(&mut tx, &app.id, AppStatus::Failed.as_str(), now).await?;
    }
    let e = event(app, "app.deployment.failed", "deploy", &Actor::system()).data(json!({
        "deploymentId": d.id,
        "reason": reason,
    }));
    events::record(&mut tx, &e, now).await?;
    tx.commit().await?;
    Ok(())
}
