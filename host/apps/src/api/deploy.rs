//! Deployments, rollback, pause and resume (spec section 3).

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_api::pagination::{Page, Pager};
use plateau_api::routes::{Pairs, page_and_filters};
use plateau_core::time;
use plateau_store::apps::{self as db, deployments, uploads};
use plateau_store::events;
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use super::{AppView, DeploymentView, load, load_live_in, pull_as};
use crate::pipeline::{self, event};
use crate::{AppStatus, Apps};

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct Deploy {
    /// An OCI reference; default: the app's image. It becomes the app's
    /// image once the deployment is live.
    pub image: Option<String>,
    /// A git repository URL (one the operator allows) to build; it
    /// becomes the app's repository. Not with `image`.
    pub repo: Option<String>,
    /// The branch to build; default: the app's branch, or `main`.
    pub branch: Option<String>,
    /// A stored source upload of this app to build (each is built once);
    /// later deployments build uploads. Not with `image` or `repo`.
    #[serde(rename = "uploadId")]
    pub upload_id: Option<String>,
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Rollback {
    /// The deployment to go back to; default: the one live before the
    /// current one.
    pub deployment_id: Option<String>,
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

/// An app's deployments, newest first.
#[utoipa::path(get, path = "/apps/{id}/deployments", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id"),
           ("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "deployment history", body = Page<DeploymentView>)))]
pub async fn list(
    State(state): State<AppState>,
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    pairs: Pairs,
) -> Result<Json<Page<DeploymentView>>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let (page, filters) = page_and_filters(&pairs);
    // The cursor is bound to the app through the filters.
    let filters = format!("app={id}&{filters}");
    let pager = Pager::new(
        state.cursors(),
        &page,
        "app_deployments",
        &caller.org_id,
        filters,
    )?;
    let listed = deployments::list(apps.db(), &app.id, pager.keyset()).await?;
    Ok(Json(pager.finish(
        listed,
        |d| d.id.clone(),
        DeploymentView::from,
    )))
}

/// Deploy the app's image (or the one sent), or build its git repository
/// (or the one sent): the new deployment takes traffic only once healthy.
#[utoipa::path(post, path = "/apps/{id}/deployments", tag = "apps",
    security(("bearer" = ["apps:deploy"])),
    params(("id" = String, Path, description = "app id")),
    request_body = Deploy,
    responses((status = 201, description = "the pending deployment", body = DeploymentView),
              (status = 409, description = "the upload has no archive yet, or was deployed already", body = plateau_api::error::Problem),
              (status = 400, description = "an image the registry does not have for the organisation, or an invalid field", body = plateau_api::error::Problem),
              (status = 422, description = "a git URL the operator does not allow, or an upload app without an uploadId", body = plateau_api::error::Problem),
              (status = 502, description = "the image's registry did not answer", body = plateau_api::error::Problem)))]
pub async fn create(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<Deploy>,
) -> Result<(StatusCode, Json<DeploymentView>), ApiError> {
    if let Some(image) = input.image.as_deref().map(str::trim)
        && input.repo.is_none()
        && input.upload_id.is_none()
    {
        crate::image::parse_reference(image).map_err(|m| ApiError::invalid("image", m))?;
        // Asked before the transaction: it waits on the registry.
        load(apps.db(), &caller, &id).await?;
        super::check_image(&apps, &caller, image).await?;
    }
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let mut app = load_live_in(&mut tx, &caller, &id).await?;
    refuse_paused(&app)?;
    if input.image.is_some() && input.repo.is_some() {
        return Err(ApiError::invalid(
            "repo",
            "send an image or a repo, not both",
        ));
    }
    if let Some(upload) = &input.upload_id {
        if input.image.is_some() || input.repo.is_some() || input.branch.is_some() {
            return Err(ApiError::invalid(
                "uploadId",
                "send an uploadId alone, without image, repo or branch",
            ));
        }
        check_upload(&mut tx, &app, upload).await?;
        uploads::set_app_source(&mut tx, &app.id, now).await?;
        app.source_type = "upload".to_owned();
        let d = pipeline::pending_upload(&app, upload);
        pipeline::create(&mut tx, &app, &d, &caller.actor()).await?;
        tx.commit_last().await?;
        apps.spawn_pipeline(app.id.clone(), d.id.clone(), Some(pull_as(&caller)));
        return Ok((StatusCode::CREATED, Json(d.into())));
    }
    if let Some(image) = input.image.as_deref().map(str::trim) {
        if let Err(message) = crate::image::parse_reference(image) {
            return Err(ApiError::invalid("image", message));
        }
        app.image = Some(image.to_owned());
        app.source_type = "image".to_owned();
    }
    if input.repo.is_some() || input.branch.is_some() {
        let repo = input.repo.clone().or(app.repo.clone()).unwrap_or_default();
        let branch = input
            .branch
            .clone()
            .or(app.branch.clone())
            .unwrap_or_else(|| "main".to_owned());
        check_git(&apps, &repo, &branch)?;
        db::set_git(&mut tx, &app.id, repo.trim(), &branch, now).await?;
        app.repo = Some(repo.trim().to_owned());
        app.branch = Some(branch);
        app.source_type = "git".to_owned();
    }
    if app.source_type == "git" {
        let repo = app.repo.clone().unwrap_or_default();
        let branch = app.branch.clone().unwrap_or_else(|| "main".to_owned());
        check_git(&apps, &repo, &branch)?;
        let d = pipeline::pending_git(&app, &repo, &branch);
        pipeline::create(&mut tx, &app, &d, &caller.actor()).await?;
        tx.commit_last().await?;
        apps.spawn_pipeline(app.id.clone(), d.id.clone(), Some(pull_as(&caller)));
        return Ok((StatusCode::CREATED, Json(d.into())));
    }
    if app.source_type == "upload" {
        return Err(ApiError::Unprocessable {
            code: "upload_required",
            detail: "the app is built from uploads, each built once: \
                send the uploadId of a new one (POST /apps/{id}/source-upload)"
                .to_owned(),
        });
    }
    if app.source_type != "image" {
        return Err(ApiError::Unprocessable {
            code: "source_not_supported",
            detail: format!(
                "{} sources are not deployed this way: send an image or a repo",
                app.source_type
            ),
        });
    }
    let Some(image) = app.image.clone() else {
        return Err(ApiError::invalid("image", "the app has no image; send one"));
    };
    let d = pipeline::pending(&app, "deploy", Some(image), None);
    pipeline::create(&mut tx, &app, &d, &caller.actor()).await?;
    tx.commit_last().await?;
    apps.spawn_pipeline(app.id.clone(), d.id.clone(), Some(pull_as(&caller)));
    Ok((StatusCode::CREATED, Json(d.into())))
}

/// Make an earlier deployment's component live again, without a rebuild
/// or a pull.
#[utoipa::path(post, path = "/apps/{id}/rollback", tag = "apps",
    security(("bearer" = ["apps:deploy"])),
    params(("id" = String, Path, description = "app id")),
    request_body = Rollback,
    responses((status = 201, description = "the pending rollback deployment", body = DeploymentView),
              (status = 409, description = "no earlier deployment to go back to", body = plateau_api::error::Problem)))]
pub async fn rollback(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<Rollback>,
) -> Result<(StatusCode, Json<DeploymentView>), ApiError> {
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    refuse_paused(&app)?;
    let target = match &input.deployment_id {
        Some(target) => deployments::get_in(&mut tx, &app.id, target)
            .await?
            .ok_or_else(|| {
                ApiError::not_found(format!("deployment {target} of app {id} does not exist"))
            })?,
        None => {
            let live = app
                .live_deployment_id
                .as_deref()
                .ok_or_else(nothing_earlier)?;
            deployments::previous_live(&mut tx, &app.id, live)
                .await?
                .ok_or_else(nothing_earlier)?
        }
    };
    if target.live_at.is_none() || target.component.is_none() {
        return Err(ApiError::conflict(
            "deployment_never_live",
            format!(
                "deployment {} was never live; roll back to one that was",
                target.id
            ),
        ));
    }
    let d = pipeline::pending(&app, "rollback", None, Some(&target));
    pipeline::create(&mut tx, &app, &d, &caller.actor()).await?;
    tx.commit_last().await?;
    apps.spawn_pipeline(app.id.clone(), d.id.clone(), None);
    Ok((StatusCode::CREATED, Json(d.into())))
}

/// Pause: the replicas are torn down; config, env and deployments stay.
#[utoipa::path(post, path = "/apps/{id}/pause", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = Empty,
    responses((status = 200, description = "the paused app", body = AppView)))]
pub async fn pause(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(_empty): Body<Empty>,
) -> Result<Json<AppView>, ApiError> {
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let mut app = load_live_in(&mut tx, &caller, &id).await?;
    if !AppStatus::Paused.is(&app.status) {
        db::set_status(&mut tx, &app.id, AppStatus::Paused.as_str(), now).await?;
        let e = event(&app, "app.paused", "update", &caller.actor()).data(json!({}));
        events::record(&mut tx, &e, now).await?;
        tx.commit_last().await?;
        app.status = AppStatus::Paused.as_str().to_owned();
        app.updated_at = now;
    }
    apps.follow_on_agent(&app.id).await;
    let url = apps.url(&app.slug);
    Ok(Json(AppView::new(app, url)))
}

/// Resume a paused app: its last live deployment is launched again,
/// without a rebuild.
#[utoipa::path(post, path = "/apps/{id}/resume", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = Empty,
    responses((status = 200, description = "the resumed app", body = AppView),
              (status = 409, description = "the app is not paused", body = plateau_api::error::Problem)))]
pub async fn resume(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(_empty): Body<Empty>,
) -> Result<Json<AppView>, ApiError> {
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let mut app = load_live_in(&mut tx, &caller, &id).await?;
    if !AppStatus::Paused.is(&app.status) {
        return Err(ApiError::conflict(
            "app_not_paused",
            format!("app {id} is not paused"),
        ));
    }
    // The replicas start on the data plane, which records `running`
    // once they pass their health check.
    let status = crate::spend::resumed_status(&app);
    db::set_status(&mut tx, &app.id, status.as_str(), now).await?;
    let e = event(&app, "app.resumed", "update", &caller.actor()).data(json!({}));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    app.status = status.as_str().to_owned();
    app.updated_at = now;
    apps.nudge_agent(&app.id);
    let url = apps.url(&app.slug);
    Ok(Json(AppView::new(app, url)))
}

/// Refuses an upload that is not this app's, not stored, or built already.
async fn check_upload(
    tx: &mut plateau_store::Tx,
    app: &plateau_store::apps::App,
    upload: &str,
) -> Result<(), ApiError> {
    let found = uploads::get_in(tx, &app.org_id, &app.id, upload)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(format!("upload {upload} of app {} does not exist", app.id))
        })?;
    if found.stored_at.is_none() {
        return Err(ApiError::conflict(
            "upload_not_stored",
            format!("upload {upload} has no archive yet; PUT it to the upload URL first"),
        ));
    }
    if uploads::used(tx, upload).await? {
        return Err(ApiError::conflict(
            "upload_used",
            format!("upload {upload} was deployed already; upload the archive again"),
        ));
    }
    Ok(())
}

/// Refuses a git URL the operator does not allow, or a bad branch name.
pub(crate) fn check_git(apps: &Apps, repo: &str, branch: &str) -> Result<(), ApiError> {
    if repo.trim().is_empty() {
        return Err(ApiError::invalid(
            "repo",
            "the app has no repository; send one",
        ));
    }
    if !crate::build::git::valid_branch(branch) {
        return Err(ApiError::invalid("branch", "must be a branch name"));
    }
    if !crate::build::git::allowed(repo, &apps.config().git_allow) {
        return Err(ApiError::Unprocessable {
            code: "git_url_not_allowed",
            detail: format!(
                "{} is not among the git URLs this host builds from; \
                 the operator allows them with PLATEAU_APPS_GIT_ALLOW",
                repo.trim()
            ),
        });
    }
    Ok(())
}

fn refuse_paused(app: &plateau_store::apps::App) -> Result<(), ApiError> {
    if AppStatus::Paused.is(&app.status) {
        return Err(ApiError::conflict(
            "app_paused",
            format!("app {} is paused; resume it first", app.id),
        ));
    }
    Ok(())
}

fn nothing_earlier() -> ApiError {
    ApiError::conflict(
        "no_earlier_deployment",
        "the app has no earlier deployment that was live; send deploymentId",
    )
}
