//! Branches (issue 32): a branch is a database of its own, made as a full
//! copy of its parent by point-in-time restore (from now, or from
//! `fromTimestamp`), or structure only (`schemaOnly`: the copy with every
//! table emptied). It counts against the plan as a database, may expire
//! (`ttlHours`, deleted by the agent) and may be protected. The parent is
//! the production branch, listed first; it and protected branches cannot
//! be deleted. A reset (`POST .../reset`) makes the branch a fresh copy of
//! its parent as it is now, in place: the branch serves until the copy
//! answers, then its URIs lead to the copy (see `crate::reset`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::{Body, Validator};
use plateau_core::time;
use plateau_kernel::Status;
use plateau_store::databases::backups::Restore;
use plateau_store::databases::branches::{self, Branch};
use plateau_store::databases::resets::{self, Reset};
use plateau_store::databases::{self as db, Database};
use plateau_store::events::{self, NewEvent};
use plateau_store::managed::{self, Table};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::backups::{nearest_backup, past_time};
use super::clusters::{NewCluster, insert_new};
use super::{Service, find};

/// A branch: the production database itself, or a copy of it.
#[derive(Serialize, ToSchema)]
#[schema(as = DatabaseBranch)]
#[serde(rename_all = "camelCase")]
pub struct BranchView {
    /// The branch's own database id (the production branch's is the
    /// database's).
    pub id: String,
    pub name: String,
    pub production: bool,
    pub protected: bool,
    pub schema_only: bool,
    pub status: Status,
    pub status_detail: Option<String>,
    pub from_timestamp: Option<String>,
    pub expires_at: Option<String>,
    pub created_at: String,
}

fn view(d: Database, b: Option<&Branch>) -> BranchView {
    BranchView {
        id: d.id,
        name: d.name,
        production: b.is_none(),
        protected: b.is_none_or(|b| b.protected != 0),
        schema_only: b.is_some_and(|b| b.schema_only != 0),
        status: Status::read(&d.status),
        status_detail: d.status_detail,
        from_timestamp: b.and_then(|b| b.from_time).map(time::to_rfc3339),
        expires_at: b.and_then(|b| b.expires_at).map(time::to_rfc3339),
        created_at: time::to_rfc3339(d.created_at),
    }
}

/// Refuses to delete a protected branch (the API's delete of a database
/// asks too).
pub(super) async fn refuse_protected(
    app: &AppState,
    caller: &Caller,
    d: &Database,
) -> Result<(), ApiError> {
    match branches::of(app.db(), &d.id).await? {
        Some(b) if b.protected != 0 && b.org_id == caller.org_id => Err(ApiError::conflict(
            "branch_protected",
            format!(
                "branch {} is protected; unprotect it first (PATCH protected false)",
                d.id
            ),
        )),
        _ => Ok(()),
    }
}

/// Branch `branch_id` of database `id`, with its database.
async fn find_branch(
    app: &AppState,
    caller: &Caller,
    id: &str,
    branch_id: &str,
) -> Result<(Database, Option<Branch>), ApiError> {
    let parent = find(app, caller, id).await?;
    if branch_id == parent.id {
        return Ok((parent, None));
    }
    let missing = || ApiError::not_found(format!("database {id} has no branch {branch_id}"));
    let b = branches::of(app.db(), branch_id)
        .await?
        .filter(|b| b.parent_id == parent.id && b.org_id == caller.org_id)
        .ok_or_else(missing)?;
    let d = find(app, caller, branch_id).await.map_err(|_| missing())?;
    Ok((d, Some(b)))
}

/// The production branch (the database itself) and its branches.
#[utoipa::path(get, path = "/databases/{id}/branches", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "the branches, production first", body = Vec<BranchView>)))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Vec<BranchView>>, ApiError> {
    let parent = find(&app, &caller, &id).await?;
    let mut out = vec![view(parent, None)];
    for b in branches::list(app.db(), &caller.org_id, &id).await? {
        if let Some(d) = db::get(app.db(), &caller.org_id, &b.database_id).await? {
            out.push(view(d, Some(&b)));
        }
    }
    Ok(Json(out))
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateBranch {
    #[schema(schema_with = plateau_api::openapi::name_schema)]
    pub name: String,
    /// Copy the parent as it was at this time (RFC 3339); now by default.
    pub from_timestamp: Option<String>,
    /// Delete the branch this many hours after it is made (1 to 8760).
    #[schema(minimum = 1, maximum = 8760)]
    pub ttl_hours: Option<i64>,
    /// A protected branch cannot be deleted.
    pub protected: Option<bool>,
    /// The structure only: every table of the copy emptied.
    pub schema_only: Option<bool>,
}

/// Make a branch: a new database copied from this one (now, or at
/// `fromTimestamp`). The answer comes first, with the branch `creating`.
#[utoipa::path(post, path = "/databases/{id}/branches", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    request_body = CreateBranch,
    responses((status = 201, description = "the branch, `creating`", body = BranchView),
              (status = 400, description = "a bad field, named", body = plateau_api::error::Problem),
              (status = 409, description = "no backup yet, the name is taken, or a plan limit is reached", body = plateau_api::error::Problem)))]
pub async fn create(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<CreateBranch>,
) -> Result<(StatusCode, Json<BranchView>), ApiError> {
    let parent = find(&app, &caller, &id).await?;
    Validator::new()
        .name("name", &input.name)
        .check(
            input.ttl_hours.is_none_or(|h| (1..=8760).contains(&h)),
            "ttlHours",
            "must be between 1 and 8760",
        )
        .finish()?;
    let from = past_time(input.from_timestamp.as_deref(), "fromTimestamp")?;
    let base = nearest_backup(&app, &caller, &id, from, "fromTimestamp").await?;
    let now = time::now_ms();
    let new = NewCluster {
        name: input.name.trim().to_owned(),
        version: parent.version.clone(),
        replicas: 0,
        memory_mb: parent.memory_mb,
        cpus: parent.cpus,
        disk_gb: parent.disk_gb,
        project_id: parent.project_id.clone(),
    };
    let restore = Restore {
        database_id: String::new(),
        org_id: caller.org_id.clone(),
        source_id: parent.id.clone(),
        backup_id: base.id,
        target_time: from,
        created_at: now,
    };
    let branch = Branch {
        database_id: String::new(),
        org_id: caller.org_id.clone(),
        parent_id: parent.id.clone(),
        protected: i64::from(input.protected.unwrap_or(false)),
        schema_only: i64::from(input.schema_only.unwrap_or(false)),
        from_time: from,
        expires_at: input.ttl_hours.map(|h| now + h * 3_600_000),
        created_at: now,
    };
    let d = insert_new(
        &app,
        &service,
        &caller,
        new,
        Some(restore),
        Some(branch.clone()),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(view(d, Some(&branch)))))
}

/// One branch (the database's own id is the production branch).
#[utoipa::path(get, path = "/databases/{id}/branches/{branchId}", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id"),
           ("branchId" = String, Path, description = "branch id")),
    responses((status = 200, description = "the branch", body = BranchView)))]
pub async fn get(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, branch_id)): Path<(String, String)>,
) -> Result<Json<BranchView>, ApiError> {
    let (d, b) = find_branch(&app, &caller, &id, &branch_id).await?;
    Ok(Json(view(d, b.as_ref())))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateBranch {
    pub protected: bool,
}

/// Protect a branch, or lift its protection.
#[utoipa::path(patch, path = "/databases/{id}/branches/{branchId}", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id"),
           ("branchId" = String, Path, description = "branch id")),
    request_body = UpdateBranch,
    responses((status = 200, description = "the branch", body = BranchView),
              (status = 409, description = "the production branch is always protected", body = plateau_api::error::Problem)))]
pub async fn update(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, branch_id)): Path<(String, String)>,
    Body(input): Body<UpdateBranch>,
) -> Result<Json<BranchView>, ApiError> {
    let (d, b) = find_branch(&app, &caller, &id, &branch_id).await?;
    let Some(mut b) = b else {
        return Err(ApiError::conflict(
            "branch_protected",
            "the production branch is always protected",
        ));
    };
    branches::set_protected(app.db(), &b.database_id, input.protected).await?;
    b.protected = i64::from(input.protected);
    Ok(Json(view(d, Some(&b))))
}

/// Delete a branch (its database); the production branch and protected
/// branches are refused.
#[utoipa::path(delete, path = "/databases/{id}/branches/{branchId}", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id"),
           ("branchId" = String, Path, description = "branch id")),
    responses((status = 202, description = "the branch, `deleting`", body = super::DatabaseView),
              (status = 409, description = "the production branch, or a protected branch", body = plateau_api::error::Problem)))]
pub async fn delete(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path((id, branch_id)): Path<(String, String)>,
) -> Result<(StatusCode, Json<super::DatabaseView>), ApiError> {
    let (d, b) = find_branch(&app, &caller, &id, &branch_id).await?;
    if b.is_none() {
        return Err(ApiError::conflict(
            "branch_protected",
            "the production branch cannot be deleted; delete the database instead",
        ));
    }
    super::clusters::delete(State(app), service, caller, Path(d.id)).await
}

/// Reset a branch: it becomes a fresh copy of its parent as it is now
/// (structure only for a structure-only branch). The branch serves as it
/// was until the copy answers; then its URIs, which do not change, lead
/// to the copy. The answer comes first, with the branch `updating`.
#[utoipa::path(post, path = "/databases/{id}/branches/{branchId}/reset", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id"),
           ("branchId" = String, Path, description = "branch id")),
    responses((status = 202, description = "the branch, `updating`", body = BranchView),
              (status = 409, description = "the production branch, a branch being changed, or a parent with no backup yet", body = plateau_api::error::Problem)))]
pub async fn reset(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, branch_id)): Path<(String, String)>,
) -> Result<(StatusCode, Json<BranchView>), ApiError> {
    let (d, b) = find_branch(&app, &caller, &id, &branch_id).await?;
    let Some(b) = b else {
        return Err(ApiError::conflict(
            "production_branch",
            "the production branch has no parent to be reset to",
        ));
    };
    let status = Status::read(&d.status);
    if d.placement.is_empty() || status.pending() {
        return Err(ApiError::conflict(
            "branch_busy",
            format!(
                "branch {branch_id} is {}; reset it once it is running",
                status.as_str()
            ),
        ));
    }
    let base = nearest_backup(&app, &caller, &id, None, "id").await?;
    let now = time::now_ms();
    let event = NewEvent::audited(
        &caller.org_id,
        "database.branch_reset_requested",
        "resources",
        "update",
        &caller.actor(),
    )
    .resource("database", &d.id)
    .data(serde_json::json!({ "parent": id, "backup": base.id }));
    let mut tx = app.db().begin().await?;
    let r = Reset {
        database_id: d.id.clone(),
        org_id: caller.org_id.clone(),
        source_id: id.clone(),
        backup_id: base.id,
        requested_at: now,
    };
    resets::put(&mut tx, &r).await?;
    let updating = Status::Updating.as_str();
    managed::request(
        &mut tx,
        Table::Databases,
        &caller.org_id,
        &d.id,
        updating,
        now,
    )
    .await?;
    events::record(&mut tx, &event, now).await?;
    tx.commit_last().await?;
    let d = find(&app, &caller, &d.id).await?;
    Ok((StatusCode::ACCEPTED, Json(view(d, Some(&b)))))
}
