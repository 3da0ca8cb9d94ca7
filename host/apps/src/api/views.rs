//! What the apps API answers with.

use plateau_core::time;
use plateau_store::apps::App;
use plateau_store::apps::deployments::Deployment;
use serde::Serialize;
use utoipa::ToSchema;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppView {
    pub id: String,
    pub name: String,
    /// Fixed at creation: renaming keeps it, and the url.
    pub slug: String,
    /// Where the edge serves the app.
    pub url: String,
    /// created, deploying, starting, running, resuming (replicas starting
    /// again after a pause), failed, paused, or deleted (in the trash).
    #[schema(value_type = crate::status::AppStatusName)]
    pub status: String,
    pub project_id: String,
    pub source_type: String,
    pub image: Option<String>,
    pub repo: Option<String>,
    pub branch: Option<String>,
    pub port: Option<i64>,
    pub health_check_path: String,
    pub replicas: i64,
    pub memory_mb: i64,
    pub milli_cpu: i64,
    pub live_deployment_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deleted_at: Option<String>,
}

impl AppView {
    pub fn new(app: App, url: String) -> AppView {
        AppView {
            status: if app.deleted_at.is_some() {
                "deleted".to_owned()
            } else {
                app.status
            },
            id: app.id,
            name: app.name,
            slug: app.slug,
            url,
            project_id: app.project_id,
            source_type: app.source_type,
            image: app.image,
            repo: app.repo,
            branch: app.branch,
            port: app.port,
            health_check_path: app.health_check_path,
            replicas: app.replicas,
            memory_mb: app.memory_mb,
            milli_cpu: app.milli_cpu,
            live_deployment_id: app.live_deployment_id,
            created_at: time::to_rfc3339(app.created_at),
            updated_at: time::to_rfc3339(app.updated_at),
            deleted_at: app.deleted_at.map(time::to_rfc3339),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeploymentView {
    pub id: String,
    pub app_id: String,
    /// pending (building, then deploying, for a built source), live,
    /// superseded or failed.
    pub status: String,
    /// What started it: deploy, rollback, env, restore.
    pub cause: String,
    pub source_type: String,
    pub image: Option<String>,
    /// The manifest digest the image resolved to.
    pub digest: Option<String>,
    /// Why it failed.
    pub reason: Option<String>,
    /// The git repository and branch a `git` deployment built.
    pub repo: Option<String>,
    pub branch: Option<String>,
    /// The source upload an `upload` deployment built.
    pub upload_id: Option<String>,
    /// The build's output (its last 64 KiB), for built deployments.
    pub build_log: Option<String>,
    pub created_at: String,
    pub live_at: Option<String>,
    pub finished_at: Option<String>,
}

impl From<Deployment> for DeploymentView {
    fn from(d: Deployment) -> Self {
        DeploymentView {
            id: d.id,
            app_id: d.app_id,
            status: d.status,
            cause: d.cause,
            source_type: d.source_type,
            image: d.image,
            digest: d.digest,
            reason: d.reason,
            repo: d.repo,
            branch: d.branch,
            upload_id: d.upload_id,
            build_log: d.build_log,
            created_at: time::to_rfc3339(d.created_at),
            live_at: d.live_at.map(time::to_rfc3339),
            finished_at: d.finished_at.map(time::to_rfc3339),
        }
    }
}
