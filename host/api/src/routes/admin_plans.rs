//! The operator changes an organisation's plan: `GET` and `PATCH
//! /admin/organizations/{id}` (admin session).
//!
//! A change to a plan whose limits the organisation is already past is
//! refused, not applied: 409 `plan_limits_exceeded`, whose `errors` name
//! each resource kind that is over (`apps`, `databases`,
//! `cacheInstances`, `dbDiskGb`, `storageGb`) with its count and the new
//! plan's limit. The operator (or the organisation) removes what is over,
//! then changes the plan; nothing is ever paused or deleted by a plan
//! change. Cron jobs live in their plugin and are checked when one is
//! created, not here. Resources created between the check and the change
//! are caught by each service's own limit check on their next change.

use axum::Json;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use plateau_core::Plan;
use plateau_store::events::Actor;
use plateau_store::orgs;
use plateau_store::plans::{self, Footprint, PlanLimits};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::admin::OrganizationView;
use crate::auth::AdminSession;
use crate::error::{ApiError, FieldError, Problem, problem_response};
use crate::json::Body;
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationDetail {
    pub organization: OrganizationView,
    /// The plan's limits (spec section 8); storage, disk and bandwidth in GB.
    #[schema(value_type = Object)]
    pub limits: PlanLimits,
    /// What the organisation holds of what plans limit.
    #[schema(value_type = Object)]
    pub footprint: Footprint,
    pub members: i64,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChangePlan {
    /// free, starter, pro or scale.
    pub plan: String,
}

async fn limits_of(app: &AppState, plan: &str) -> Result<PlanLimits, ApiError> {
    plans::get(app.db(), plan)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("plan {plan} has no limits row")))
}

/// Each resource kind `footprint` holds past `limits`, as field errors.
pub fn over_limits(footprint: &Footprint, limits: &PlanLimits) -> Vec<FieldError> {
    let gb = 1_000_000_000i64;
    let storage_gb = (footprint.storage_bytes + gb - 1) / gb;
    [
        ("apps", footprint.apps, limits.apps, "apps"),
        (
            "databases",
            footprint.databases,
            limits.databases,
            "databases",
        ),
        (
            "cacheInstances",
            footprint.cache_instances,
            limits.cache_instances,
            "cache instances",
        ),
        (
            "dbDiskGb",
            footprint.db_disk_gb,
            limits.db_disk_gb,
            "GB of database disk",
        ),
        (
            "storageGb",
            storage_gb,
            limits.storage_gb,
            "GB of object storage",
        ),
    ]
    .into_iter()
    .filter(|(_, count, limit, _)| count > limit)
    .map(|(field, count, limit, what)| FieldError {
        field: field.to_owned(),
        message: format!("{count} {what}; the {} plan allows {limit}", limits.name),
    })
    .collect()
}

async fn detail(app: &AppState, org: orgs::Organization) -> Result<OrganizationDetail, ApiError> {
    let limits = limits_of(app, &org.plan).await?;
    let footprint = plans::footprint(app.db(), &org.id).await?;
    let members = orgs::count_members(app.db(), &org.id).await?;
    Ok(OrganizationDetail {
        organization: org.into(),
        limits,
        footprint,
        members,
    })
}

async fn find(app: &AppState, id: &str) -> Result<orgs::Organization, ApiError> {
    orgs::get(app.db(), id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("organization {id} does not exist")))
}

/// One organisation with its plan's limits and what it holds against them.
#[utoipa::path(get, path = "/admin/organizations/{id}", tag = "admin",
    security(("adminSession" = [])),
    params(("id" = String, Path, description = "organisation id")),
    responses((status = 200, description = "the organisation", body = OrganizationDetail)))]
pub async fn get_org(
    State(app): State<AppState>,
    _session: AdminSession,
    Path(id): Path<String>,
) -> Result<Json<OrganizationDetail>, ApiError> {
    let org = find(&app, &id).await?;
    Ok(Json(detail(&app, org).await?))
}

/// Change the organisation's plan. A plan whose limits it is past is
/// refused (409 `plan_limits_exceeded`, `errors` naming each resource
/// kind over, with its count and the limit).
#[utoipa::path(patch, path = "/admin/organizations/{id}", tag = "admin",
    security(("adminSession" = [])),
    params(("id" = String, Path, description = "organisation id")),
    request_body = ChangePlan,
    responses((status = 200, description = "the organisation on its new plan", body = OrganizationDetail),
        (status = 409, description = "the organisation is past the new plan's limits (plan_limits_exceeded)", body = Problem,
            content_type = "application/problem+json")))]
pub async fn change_plan(
    State(app): State<AppState>,
    session: AdminSession,
    Path(id): Path<String>,
    Body(input): Body<ChangePlan>,
) -> Result<Response, ApiError> {
    let plan = input
        .plan
        .parse::<Plan>()
        .map_err(|e| ApiError::invalid("plan", e.to_string()))?;
    let org = find(&app, &id).await?;
    let limits = limits_of(&app, plan.as_str()).await?;
    let footprint = plans::footprint(app.db(), &id).await?;
    let over = over_limits(&footprint, &limits);
    if !over.is_empty() {
        let summary: Vec<String> = over
            .iter()
            .map(|e| format!("{}: {}", e.field, e.message))
            .collect();
        let problem = Problem {
            errors: over,
            ..Problem::new(
                409,
                "plan_limits_exceeded",
                format!(
                    "the organisation holds more than the {plan} plan allows ({}): remove what is over, then change the plan",
                    summary.join("; ")
                ),
            )
        };
        return Ok(problem_response(&problem));
    }
    let actor = Actor::admin(session.ip.clone());
    if plans::change_org_plan(app.db(), &id, &org.plan, plan.as_str(), &actor).await? {
        // Tokens carry the plan they authenticated with: forget them.
        app.token_cache().evict_org(&id);
    }
    let org = find(&app, &id).await?;
    Ok(Json(detail(&app, org).await?).into_response())
}
