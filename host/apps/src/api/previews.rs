//! `/apps/{id}/previews`: deploy a branch of the app's linked repository
//! under `<slug>-<branch>`, with the app's environment (but variables of
//! target `production`) and its own, optionally a database branch's
//! connection string; a push to the branch redeploys it (`github`), and a
//! delete removes everything it made. A preview is an app row of its own
//! (`appId`, readable at `/apps/{appId}` and its deployments and logs,
//! changed only here); it counts against the plan's number of apps.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::Path;
use axum::http::StatusCode;
use axum::{Extension, Json};
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_databases::DatabaseService;
use plateau_store::apps::env::EnvVar;
use plateau_store::apps::previews::{self as db, Preview};
use plateau_store::apps::{self as apps_db, App, env, git_links};
use plateau_store::events::{self, Actor};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::deploy::check_git;
use super::{load, load_live_in, pull_as};
use crate::pipeline::{self, event};
use crate::{AppStatus, Apps};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreatePreview {
    /// A branch of the app's linked repository, other than the linked one.
    #[schema(min_length = 1, max_length = 255)]
    pub branch: String,
    /// Variables of this preview only, names to values, over the app's.
    pub env: Option<BTreeMap<String, String>>,
    /// A branch of a managed database of the app's project (not its
    /// production branch), deleted with the preview.
    pub db_branch_id: Option<String>,
    /// The variable that gets the branch's connection string.
    pub db_env_key: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewView {
    pub id: String,
    /// The preview's own app: its deployments and logs are read there.
    pub app_id: String,
    pub branch: String,
    pub slug: String,
    pub url: String,
    /// The preview app's status, or `deleting`.
    pub status: String,
    pub live_deployment_id: Option<String>,
    pub db_branch_id: Option<String>,
    pub db_env_key: Option<String>,
    pub created_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct PreviewList {
    pub items: Vec<PreviewView>,
}

/// The app's previews, oldest first.
#[utoipa::path(get, path = "/apps/{id}/previews", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "previews", body = PreviewList)))]
pub async fn list(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<PreviewList>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let mut items = Vec::new();
    for p in db::list(apps.db(), &app.id).await? {
        let child = apps_db::get_any(apps.db(), &p.app_id).await?;
        items.push(view(&apps, p, child.as_ref()));
    }
    Ok(Json(PreviewList { items }))
}

/// One preview.
#[utoipa::path(get, path = "/apps/{id}/previews/{previewId}", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id"),
           ("previewId" = String, Path, description = "preview id")),
    responses((status = 200, description = "the preview", body = PreviewView)))]
pub async fn get(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path((id, preview_id)): Path<(String, String)>,
) -> Result<Json<PreviewView>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let p = db::get(apps.db(), &app.id, &preview_id)
        .await?
        .ok_or_else(|| not_found(&id, &preview_id))?;
    let child = apps_db::get_any(apps.db(), &p.app_id).await?;
    Ok(Json(view(&apps, p, child.as_ref())))
}

/// Deploy `branch` of the app's linked repository as a preview under
/// `<slug>-<branch>`; its first deployment starts at once.
#[utoipa::path(post, path = "/apps/{id}/previews", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = CreatePreview,
    responses((status = 201, description = "the preview, deploying", body = PreviewView),
              (status = 400, description = "an invalid field (named)", body = plateau_api::error::Problem),
              (status = 403, description = "dbBranchId without databases:write, or not an owner or admin", body = plateau_api::error::Problem),
              (status = 409, description = "not linked, a preview of the branch exists, the database branch is in use or not running, or the plan's number of apps is reached", body = plateau_api::error::Problem)))]
pub async fn create(
    Extension(apps): Extension<Apps>,
    Extension(databases): Extension<Arc<DatabaseService>>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<CreatePreview>,
) -> Result<(StatusCode, Json<PreviewView>), ApiError> {
    let parent = load(apps.db(), &caller, &id).await?;
    let link = git_links::get(apps.db(), &parent.id).await?;
    let (Some(_), Some(repo)) = (link, parent.repo.clone()) else {
        return Err(ApiError::conflict(
            "app_not_linked",
            format!("app {id} is not linked to a repository; link one with PUT /apps/{id}/github"),
        ));
    };
    let branch = input.branch.trim().to_owned();
    check_git(&apps, &repo, &branch)?;
    if parent.branch.as_deref() == Some(branch.as_str()) {
        return Err(ApiError::invalid(
            "branch",
            format!("{branch} is the linked branch, which deploys the app itself"),
        ));
    }
    let mut vars = input.env.clone().unwrap_or_default();
    if vars.len() > crate::env::MAX_VARS {
        return Err(ApiError::invalid("env", "too many variables"));
    }
    for (name, value) in &vars {
        if let Some(message) = crate::env::check(name, value) {
            return Err(ApiError::invalid("env", message));
        }
    }
    let database = match (&input.db_branch_id, &input.db_env_key) {
        (None, None) => None,
        (Some(_), None) => return Err(ApiError::invalid("dbEnvKey", "send it with dbBranchId")),
        (None, Some(_)) => return Err(ApiError::invalid("dbBranchId", "send it with dbEnvKey")),
        (Some(branch_id), Some(key)) => {
            if let Some(message) = crate::env::check(key, "") {
                return Err(ApiError::invalid("dbEnvKey", message));
            }
            if vars.contains_key(key) {
                return Err(ApiError::invalid(
                    "dbEnvKey",
                    format!("{key} is also in env"),
                ));
            }
            let uri =
                super::preview_db::branch_uri(apps.db(), &databases, &caller, &parent, branch_id)
                    .await?;
            vars.insert(key.clone(), uri);
            Some((branch_id.clone(), key.clone()))
        }
    };
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let parent = load_live_in(&mut tx, &caller, &id).await?;
    if db::for_branch(&mut tx, &parent.id, &branch)
        .await?
        .is_some()
    {
        return Err(ApiError::conflict(
            "preview_exists",
            format!("app {id} has a preview of {branch} (or one being deleted)"),
        ));
    }
    if let Some((branch_id, _)) = &database
        && let Some(other) = db::with_db_branch(&mut tx, branch_id).await?
    {
        return Err(ApiError::conflict(
            "db_branch_in_use",
            format!(
                "database branch {branch_id} goes with preview {} already",
                other.id
            ),
        ));
    }
    super::apps::check_plan(&mut tx, &caller.org_id).await?;
    let child = child_app(&mut tx, &parent, &repo, &branch, now).await?;
    apps_db::insert(&mut tx, &child).await?;
    let p = Preview {
        id: new_id("prv"),
        org_id: parent.org_id.clone(),
        parent_id: parent.id.clone(),
        app_id: child.id.clone(),
        branch: branch.clone(),
        db_branch_id: database.as_ref().map(|d| d.0.clone()),
        db_env_key: database.as_ref().map(|d| d.1.clone()),
        status: "open".to_owned(),
        created_at: now,
        updated_at: now,
    };
    db::insert(&mut tx, &p).await?;
    for (name, value) in &vars {
        let sealed =
            crate::env::seal(apps.sealer(), &child.id, name, value).map_err(ApiError::Internal)?;
        let var = EnvVar {
            name: name.clone(),
            sealed,
            target: "preview".to_owned(),
            updated_at: now,
        };
        env::put(&mut tx, &child.id, &var).await?;
    }
    let e = event(&parent, "app.preview.created", "create", &caller.actor()).data(json!({
        "previewId": p.id,
        "appId": child.id,
        "branch": branch,
        "slug": child.slug,
        "env": vars.keys().collect::<Vec<_>>(),
        "dbBranchId": p.db_branch_id,
    }));
    events::record(&mut tx, &e, now).await?;
    let d = pipeline::pending_git(&child, &repo, &branch);
    pipeline::create(&mut tx, &child, &d, &caller.actor()).await?;
    tx.commit_last().await?;
    apps.spawn_pipeline(child.id.clone(), d.id, Some(pull_as(&caller)));
    let mut child = child;
    child.status = AppStatus::Deploying.as_str().to_owned();
    Ok((StatusCode::CREATED, Json(view(&apps, p, Some(&child)))))
}

/// Delete a preview: its replicas and host name go at once (the answer
/// comes once this host's edge no longer serves it), then its
/// deployments, builds, logs and variables, and its database branch
/// unless that is protected.
#[utoipa::path(delete, path = "/apps/{id}/previews/{previewId}", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id"),
           ("previewId" = String, Path, description = "preview id")),
    responses((status = 202, description = "the preview, deleting", body = PreviewView)))]
pub async fn delete(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path((id, preview_id)): Path<(String, String)>,
) -> Result<(StatusCode, Json<PreviewView>), ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let p = db::get_in(&mut tx, &app.id, &preview_id)
        .await?
        .ok_or_else(|| not_found(&id, &preview_id))?;
    close(apps.db(), &mut tx, &app, &p, &caller.actor(), now).await?;
    tx.commit_last().await?;
    let (p, child) = finish_close(&apps, p).await?;
    Ok((StatusCode::ACCEPTED, Json(view(&apps, p, child.as_ref()))))
}

/// Once the close of `p` committed: waits until this host's edge no
/// longer serves it, then removes what it made in the background.
pub(super) async fn finish_close(
    apps: &Apps,
    mut p: Preview,
) -> Result<(Preview, Option<App>), ApiError> {
    apps.follow_on_agent(&p.app_id).await;
    let child = apps_db::get_any(apps.db(), &p.app_id).await?;
    p.status = "deleting".to_owned();
    apps.spawn_purge(p.clone());
    Ok((p, child))
}

/// Starts deleting preview `p` of `app` in `tx`: the preview app goes to
/// the trash (the data plane takes it down), the row is `deleting` until
/// [`Apps::purge_preview`] removes it, and its database branch is asked
/// to be deleted unless protected. Nothing when it already was.
pub(super) async fn close(
    db: &plateau_store::Db,
    tx: &mut plateau_store::Tx,
    app: &App,
    p: &Preview,
    actor: &Actor,
    now: i64,
) -> Result<(), ApiError> {
    if !db::set_deleting(tx, &p.id, now).await? {
        return Ok(());
    }
    apps_db::set_trashed(tx, &p.app_id, Some(now), now).await?;
    let db_branch = match &p.db_branch_id {
        Some(branch_id) => {
            Some(super::preview_db::delete_branch(db, tx, app, branch_id, actor, now).await?)
        }
        None => None,
    };
    let e = event(app, "app.preview.deleted", "delete", actor).data(json!({
        "previewId": p.id,
        "appId": p.app_id,
        "branch": p.branch,
        "dbBranchId": p.db_branch_id,
        "dbBranch": db_branch,
    }));
    events::record(tx, &e, now).await?;
    Ok(())
}

/// Starts deleting every preview of `app` (which goes to the trash) in
/// `tx`; the caller has [`Apps::spawn_purge`] finish them once committed.
pub(crate) async fn close_all(
    db: &plateau_store::Db,
    tx: &mut plateau_store::Tx,
    app: &App,
    actor: &Actor,
    now: i64,
) -> Result<Vec<Preview>, ApiError> {
    let mut closed = Vec::new();
    for p in db::list_in(tx, &app.id).await? {
        close(db, tx, app, &p, actor, now).await?;
        closed.push(p);
    }
    Ok(closed)
}

/// The open preview of `branch` of `app`, as the app it runs: what a push
/// to `branch` deploys.
pub(crate) async fn open_for_push(
    tx: &mut plateau_store::Tx,
    app: &App,
    branch: &str,
) -> Result<Option<App>, ApiError> {
    let Some(p) = db::for_branch(tx, &app.id, branch).await? else {
        return Ok(None);
    };
    if p.status != "open" {
        return Ok(None);
    }
    Ok(apps_db::get_in(tx, &app.org_id, &p.app_id)
        .await?
        .filter(|a| a.deleted_at.is_none()))
}

/// The preview's app, as its parent's with the branch's repository.
async fn child_app(
    tx: &mut plateau_store::Tx,
    parent: &App,
    repo: &str,
    branch: &str,
    now: i64,
) -> Result<App, ApiError> {
    let name: String = format!("{} ({branch})", parent.name)
        .chars()
        .take(100)
        .collect();
    Ok(App {
        id: new_id("app"),
        org_id: parent.org_id.clone(),
        project_id: parent.project_id.clone(),
        name,
        slug: crate::previews::free_slug(tx, &parent.slug, branch).await?,
        source_type: "git".to_owned(),
        image: None,
        repo: Some(repo.to_owned()),
        branch: Some(branch.to_owned()),
        port: parent.port,
        health_check_path: parent.health_check_path.clone(),
        status: AppStatus::Created.as_str().to_owned(),
        replicas: 1,
        memory_mb: parent.memory_mb,
        milli_cpu: parent.milli_cpu,
        live_deployment_id: None,
        created_at: now,
        updated_at: now,
        deleted_at: None,
    })
}

fn not_found(id: &str, preview_id: &str) -> ApiError {
    ApiError::not_found(format!("app {id} has no preview {preview_id}"))
}

fn view(apps: &Apps, p: Preview, child: Option<&App>) -> PreviewView {
    let slug = child.map(|c| c.slug.clone()).unwrap_or_default();
    let status = match child {
        Some(c) if p.status == "open" => c.status.clone(),
        _ => "deleting".to_owned(),
    };
    PreviewView {
        url: apps.url(&slug),
        slug,
        status,
        live_deployment_id: child.and_then(|c| c.live_deployment_id.clone()),
        id: p.id,
        app_id: p.app_id,
        branch: p.branch,
        db_branch_id: p.db_branch_id,
        db_env_key: p.db_env_key,
        created_at: time::to_rfc3339(p.created_at),
    }
}
