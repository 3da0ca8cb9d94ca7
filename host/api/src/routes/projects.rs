//! `/projects` (spec section 4.3): the organisation's resource groups.
//! The default project is created with the organisation; it, and any
//! project that still holds something, cannot be deleted.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_store::events::{self, NewEvent};
use plateau_store::projects::{self, Project};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{Pairs, page_and_filters};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::{Body, Validator};
use crate::pagination::{Page, Pager};
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectView {
    pub id: String,
    pub name: String,
    /// The organisation's default project, which cannot be deleted.
    pub is_default: bool,
    pub created_at: String,
}

impl From<Project> for ProjectView {
    fn from(p: Project) -> Self {
        ProjectView {
            id: p.id,
            name: p.name,
            is_default: p.is_default != 0,
            created_at: time::to_rfc3339(p.created_at),
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateProject {
    /// Unique within the organisation, 1 to 100 characters.
    #[schema(schema_with = crate::openapi::name_schema)]
    pub name: String,
}

/// List projects, oldest first. A project-limited token sees its project only.
#[utoipa::path(get, path = "/projects", tag = "projects",
    security(("bearer" = ["projects:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "projects", body = Page<ProjectView>)))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<ProjectView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(app.cursors(), &page, "projects", &caller.org_id, filters)?;
    let listed = projects::list(
        app.db(),
        &caller.org_id,
        caller.project_id.as_deref(),
        pager.keyset(),
    )
    .await?;
    Ok(Json(pager.finish(
        listed,
        |p| p.id.clone(),
        ProjectView::from,
    )))
}

/// One project.
#[utoipa::path(get, path = "/projects/{id}", tag = "projects",
    security(("bearer" = ["projects:read"])),
    params(("id" = String, Path, description = "project id")),
    responses((status = 200, description = "the project", body = ProjectView)))]
pub async fn get(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ProjectView>, ApiError> {
    visible(&caller, &id)?;
    let project = projects::get(app.db(), &caller.org_id, &id)
        .await?
        .ok_or_else(|| not_found(&id))?;
    Ok(Json(project.into()))
}

/// Create a project.
#[utoipa::path(post, path = "/projects", tag = "projects",
    security(("bearer" = ["projects:write"])),
    request_body = CreateProject,
    responses((status = 201, description = "the new project", body = ProjectView)))]
pub async fn create(
    State(app): State<AppState>,
    caller: Caller,
    Body(input): Body<CreateProject>,
) -> Result<(StatusCode, Json<ProjectView>), ApiError> {
    Validator::new().name("name", &input.name).finish()?;
    if let Some(only) = &caller.project_id {
        return Err(ApiError::forbidden(
            "project_limited_token",
            format!("this token is limited to project {only} and cannot create projects"),
        ));
    }
    crate::spend::guard::check(app.db(), &caller, None).await?;
    let now = time::now_ms();
    let project = Project {
        id: new_id("prj"),
        org_id: caller.org_id.clone(),
        name: input.name.trim().to_owned(),
        is_default: 0,
        created_at: now,
    };
    let mut tx = app.db().begin().await?;
    if let Err(e) = projects::insert(&mut tx, &project).await {
        return Err(if e.is_unique_violation() {
            ApiError::conflict(
                "name_taken",
                format!(
                    "a project named {:?} already exists; choose another name",
                    project.name
                ),
            )
        } else {
            e.into()
        });
    }
    let event = NewEvent::audited(
        &caller.org_id,
        "project.created",
        "resources",
        "create",
        &caller.actor(),
    )
    .resource("project", &project.id)
    .data(json!({ "name": project.name }));
    events::record(&mut tx, &event, now).await?;
    tx.commit_last().await?;
    Ok((StatusCode::CREATED, Json(project.into())))
}

/// Delete an empty project other than the default one.
#[utoipa::path(delete, path = "/projects/{id}", tag = "projects",
    security(("bearer" = ["projects:write"])),
    params(("id" = String, Path, description = "project id")),
    responses((status = 200, description = "the deleted project", body = ProjectView),
              (status = 409, description = "the default project, or a project that is not empty", body = crate::error::Problem)))]
pub async fn delete(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ProjectView>, ApiError> {
    visible(&caller, &id)?;
    let mut tx = app.db().begin().await?;
    let project = projects::get_for_update(&mut tx, &caller.org_id, &id)
        .await?
        .ok_or_else(|| not_found(&id))?;
    if project.is_default != 0 {
        return Err(ApiError::conflict(
            "default_project",
            "the default project cannot be deleted",
        ));
    }
    let contents = projects::contents(&mut tx, &caller.org_id, &id).await?;
    if !contents.is_empty() {
        let what: Vec<String> = contents
            .iter()
            .map(|(kind, n)| format!("{n} {kind}"))
            .collect();
        return Err(ApiError::conflict(
            "project_not_empty",
            format!(
                "project {id} still holds {}; remove them first",
                what.join(", ")
            ),
        ));
    }
    projects::delete(&mut tx, &caller.org_id, &id).await?;
    let now = time::now_ms();
    let event = NewEvent::audited(
        &caller.org_id,
        "project.deleted",
        "resources",
        "delete",
        &caller.actor(),
    )
    .resource("project", &id)
    .data(json!({ "name": project.name }));
    events::record(&mut tx, &event, now).await?;
    tx.commit_last().await?;
    Ok(Json(project.into()))
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("project {id} does not exist"))
}

/// A project-limited token sees no other project.
fn visible(caller: &Caller, id: &str) -> Result<(), ApiError> {
    match &caller.project_id {
        Some(only) if only != id => Err(not_found(id)),
        _ => Ok(()),
    }
}
