//! `/apps` and `/apps/{id}`: create, list, read, rename, trash, restore.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::{Body, Validator};
use plateau_api::pagination::{Page, Pager};
use plateau_api::routes::{Pairs, page_and_filters};
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_store::apps::{self as db, App};
use plateau_store::events;
use plateau_store::projects;
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use super::{AppView, load, load_live_in, not_found, pull_as};
use crate::pipeline::{self, event};
use crate::{AppStatus, Apps};

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateApp {
    /// 1 to 100 characters; the slug (and url) is made from it once.
    pub name: String,
    /// `image` (default), `git`, or `upload` (deployed with the
    /// `uploadId` of a source upload).
    pub source_type: Option<String>,
    /// An OCI reference of a `wasi:http/proxy` component or of a Linux
    /// image (linux/amd64, listening on `$PORT`); with it, the app is
    /// deployed at once.
    pub image: Option<String>,
    /// A git repository URL (for `git`), among those the operator allows
    /// (`PLATEAU_APPS_GIT_ALLOW`); built from its `Dockerfile`.
    pub repo: Option<String>,
    /// The branch to build; default `main`.
    pub branch: Option<String>,
    pub port: Option<i64>,
    /// Default: the organisation's default project.
    pub project_id: Option<String>,
    /// Default `/`.
    pub health_check_path: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RenameApp {
    #[schema(schema_with = plateau_api::openapi::name_schema)]
    pub name: String,
}

/// List the organisation's apps outside the trash, oldest first.
#[utoipa::path(get, path = "/apps", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "apps", body = Page<AppView>)))]
pub async fn list(
    State(state): State<AppState>,
    Extension(apps): Extension<Apps>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<AppView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(state.cursors(), &page, "apps", &caller.org_id, filters)?;
    let listed = db::list(
        apps.db(),
        &caller.org_id,
        caller.project_id.as_deref(),
        pager.keyset(),
    )
    .await?;
    Ok(Json(pager.finish(
        listed,
        |a| a.id.clone(),
        |a| {
            let url = apps.url(&a.slug);
            AppView::new(a, url)
        },
    )))
}

/// Create an app; with an `image` (or, for `git`, a `repo`), its first
/// deployment starts at once.
#[utoipa::path(post, path = "/apps", tag = "apps",
    security(("bearer" = ["apps:write"])),
    request_body = CreateApp,
    responses((status = 201, description = "the new app", body = AppView),
              (status = 409, description = "the plan's number of apps is reached", body = plateau_api::error::Problem),
              (status = 400, description = "an image the registry does not have for the organisation, or an invalid field", body = plateau_api::error::Problem),
              (status = 422, description = "a git URL the operator does not allow", body = plateau_api::error::Problem),
              (status = 502, description = "the image's registry did not answer", body = plateau_api::error::Problem)))]
pub async fn create(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Body(input): Body<CreateApp>,
) -> Result<(StatusCode, Json<AppView>), ApiError> {
    let source_type = input
        .source_type
        .clone()
        .unwrap_or_else(|| "image".to_owned());
    let health = input
        .health_check_path
        .clone()
        .unwrap_or_else(|| "/".to_owned());
    let mut v = Validator::new();
    v.name("name", &input.name)
        .check(
            matches!(source_type.as_str(), "image" | "git" | "upload"),
            "sourceType",
            "must be image, git or upload",
        )
        .check(
            health.starts_with('/')
                && health.len() <= 512
                && !health.contains(|c: char| c.is_whitespace() || c.is_control()),
            "healthCheckPath",
            "must be a path starting with /",
        )
        .check(
            input.port.is_none_or(|p| (1..=65535).contains(&p)),
            "port",
            "must be between 1 and 65535",
        );
    if let Some(Err(message)) = input.image.as_deref().map(crate::image::parse_reference) {
        v.check(false, "image", message);
    }
    v.finish()?;
    let branch = input.branch.clone().map(|b| b.trim().to_owned());
    let branch = match (&input.repo, branch) {
        (Some(_), None) => Some("main".to_owned()),
        (_, branch) => branch,
    };
    if let Some(repo) = &input.repo {
        super::deploy::check_git(&apps, repo, branch.as_deref().unwrap_or("main"))?;
    }
    let project_id = project(&apps, &caller, input.project_id.as_deref()).await?;
    plateau_api::cost::check_new_resource(apps.db(), &caller, Some(&project_id), "creating an app")
        .await?;
    if let Some(image) = input.image.as_deref().map(str::trim)
        && source_type == "image"
    {
        super::check_image(&apps, &caller, image).await?;
    }
    let limits = db::plan_limits(apps.db(), &caller.plan).await?;
    let now = time::now_ms();
    let id = new_id("app");
    let mut app = App {
        slug: slug(&input.name, &id),
        id,
        org_id: caller.org_id.clone(),
        project_id,
        name: input.name.trim().to_owned(),
        source_type,
        image: input.image.map(|i| i.trim().to_owned()),
        repo: input.repo.map(|r| r.trim().to_owned()),
        branch,
        port: input.port,
        health_check_path: health,
        status: AppStatus::Created.as_str().to_owned(),
        replicas: 1,
        memory_mb: limits.as_ref().map_or(128, |l| l.memory_mb.min(128)),
        milli_cpu: limits.as_ref().map_or(250, |l| l.milli_cpu.min(250)),
        live_deployment_id: None,
        created_at: now,
        updated_at: now,
        deleted_at: None,
    };
    let mut tx = apps.db().begin().await?;
    check_plan(&mut tx, &caller.org_id).await?;
    db::insert(&mut tx, &app).await?;
    let e = event(&app, "app.created", "create", &caller.actor()).data(json!({
        "name": app.name,
        "slug": app.slug,
        "image": app.image,
    }));
    events::record(&mut tx, &e, now).await?;
    let first = match (&app.image, app.source_type.as_str()) {
        (Some(image), "image") => {
            let d = pipeline::pending(&app, "deploy", Some(image.clone()), None);
            pipeline::create(&mut tx, &app, &d, &caller.actor()).await?;
            app.status = AppStatus::Deploying.as_str().to_owned();
            Some(d.id)
        }
        (_, "git") if app.repo.is_some() => {
            let repo = app.repo.clone().unwrap_or_default();
            let branch = app.branch.clone().unwrap_or_else(|| "main".to_owned());
            let d = pipeline::pending_git(&app, &repo, &branch);
            pipeline::create(&mut tx, &app, &d, &caller.actor()).await?;
            app.status = AppStatus::Deploying.as_str().to_owned();
            Some(d.id)
        }
        _ => None,
    };
    tx.commit_last().await?;
    if let Some(d) = first {
        apps.spawn_pipeline(app.id.clone(), d, Some(pull_as(&caller)));
    }
    let url = apps.url(&app.slug);
    Ok((StatusCode::CREATED, Json(AppView::new(app, url))))
}

/// One app, with its status and url (also while in the trash).
#[utoipa::path(get, path = "/apps/{id}", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "the app", body = AppView)))]
pub async fn get(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<AppView>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let url = apps.url(&app.slug);
    Ok(Json(AppView::new(app, url)))
}

/// Rename an app; its slug and url stay.
#[utoipa::path(patch, path = "/apps/{id}", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = RenameApp,
    responses((status = 200, description = "the renamed app", body = AppView)))]
pub async fn rename(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<RenameApp>,
) -> Result<Json<AppView>, ApiError> {
    Validator::new().name("name", &input.name).finish()?;
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let mut app = load_live_in(&mut tx, &caller, &id).await?;
    let name = input.name.trim().to_owned();
    db::rename(&mut tx, &app.id, &name, now).await?;
    let e = event(&app, "app.renamed", "update", &caller.actor())
        .data(json!({ "from": app.name, "to": name }));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    app.name = name;
    app.updated_at = now;
    let url = apps.url(&app.slug);
    Ok(Json(AppView::new(app, url)))
}

/// Move an app to the trash: its replicas stop; config, env and
/// deployments are kept for a restore; its previews are deleted.
#[utoipa::path(delete, path = "/apps/{id}", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "the app, in the trash", body = AppView)))]
pub async fn delete(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<AppView>, ApiError> {
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let mut app = load_live_in(&mut tx, &caller, &id).await?;
    db::set_trashed(&mut tx, &app.id, Some(now), now).await?;
    let e = event(&app, "app.deleted", "delete", &caller.actor()).data(json!({ "name": app.name }));
    events::record(&mut tx, &e, now).await?;
    let previews =
        super::previews::close_all(apps.db(), &mut tx, &app, &caller.actor(), now).await?;
    tx.commit_last().await?;
    apps.follow_on_agent(&app.id).await;
    for p in previews {
        apps.spawn_purge(p);
    }
    app.deleted_at = Some(now);
    app.updated_at = now;
    let url = apps.url(&app.slug);
    Ok(Json(AppView::new(app, url)))
}

/// Bring an app back from the trash and redeploy its last live component.
#[utoipa::path(post, path = "/apps/{id}/restore", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "the restored app", body = AppView),
              (status = 409, description = "not in the trash, or the plan's number of apps is reached", body = plateau_api::error::Problem)))]
pub async fn restore(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<AppView>, ApiError> {
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let mut app = db::get_in(&mut tx, &caller.org_id, &id)
        .await?
        .ok_or_else(|| not_found(&id))?;
    if caller
        .project_id
        .as_ref()
        .is_some_and(|p| *p != app.project_id)
    {
        return Err(not_found(&id));
    }
    if app.deleted_at.is_none() {
        return Err(ApiError::conflict(
            "app_not_in_trash",
            format!("app {id} is not in the trash"),
        ));
    }
    check_plan(&mut tx, &caller.org_id).await?;
    db::set_trashed(&mut tx, &app.id, None, now).await?;
    app.deleted_at = None;
    let e =
        event(&app, "app.restored", "update", &caller.actor()).data(json!({ "name": app.name }));
    events::record(&mut tx, &e, now).await?;
    let mut redeploy = None;
    if let Some(live) = &app.live_deployment_id
        && !AppStatus::Paused.is(&app.status)
        && let Some(from) = plateau_store::apps::deployments::get_in(&mut tx, &app.id, live).await?
    {
        let d = pipeline::pending(&app, "restore", None, Some(&from));
        pipeline::create(&mut tx, &app, &d, &caller.actor()).await?;
        redeploy = Some(d.id);
    }
    tx.commit_last().await?;
    if let Some(d) = redeploy {
        apps.spawn_pipeline(app.id.clone(), d, None);
    }
    app.updated_at = now;
    let url = apps.url(&app.slug);
    Ok(Json(AppView::new(app, url)))
}

/// Refuses a new app (or a restore) beyond the plan's number of apps.
pub(crate) async fn check_plan(tx: &mut plateau_store::Tx, org_id: &str) -> Result<(), ApiError> {
    let (plan, allowed) = db::plan_app_limit(tx, org_id).await?;
    let used = db::count_active(tx, org_id).await?;
    if used >= allowed {
        return Err(ApiError::conflict(
            "plan_limit_reached",
            format!(
                "the {plan} plan allows {allowed} app{}; delete an app or move to a larger plan",
                if allowed == 1 { "" } else { "s" }
            ),
        ));
    }
    Ok(())
}

/// The project a new app goes to: the one asked for (which the token must
/// see), or the token's, or the default.
async fn project(apps: &Apps, caller: &Caller, asked: Option<&str>) -> Result<String, ApiError> {
    let wanted = asked.or(caller.project_id.as_deref());
    if let (Some(only), Some(asked)) = (&caller.project_id, asked)
        && only != asked
    {
        return Err(ApiError::invalid(
            "projectId",
            format!("this token is limited to project {only}"),
        ));
    }
    let found = match wanted {
        Some(id) => projects::get(apps.db(), &caller.org_id, id).await?,
        None => projects::default_for(apps.db(), &caller.org_id).await?,
    };
    found
        .map(|p| p.id)
        .ok_or_else(|| ApiError::invalid("projectId", "no such project in this organization"))
}

/// A host-name label from the name, made unique with the id's random tail.
fn slug(name: &str, id: &str) -> String {
    let mut base = String::new();
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() {
            base.push(c.to_ascii_lowercase());
        } else if !base.ends_with('-') && !base.is_empty() {
            base.push('-');
        }
        if base.len() >= 40 {
            break;
        }
    }
    let base = base.trim_end_matches('-');
    let tail = &id[id.len() - 6..];
    if base.is_empty() {
        format!("app-{tail}")
    } else {
        format!("{base}-{tail}")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn slugs_are_host_labels() {
        assert_eq!(
            super::slug("My Shop!", "app_01abcdefghjkmnpq"),
            "my-shop-jkmnpq"
        );
        assert_eq!(super::slug("日本", "app_0123456789"), "app-456789");
    }
}
