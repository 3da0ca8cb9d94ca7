//! The `refuse_new` action: while a budget that chose it is at its limit
//! (until `POST /spend/resume`), creating a project, app, database, cache
//! or bucket is refused with 409 `spend_limit_reached`. An organisation's
//! budget refuses every creation; a project's refuses those in the
//! project.
//!
//! Projects, apps, databases and caches are checked where they are created
//! ([`check`]; apps, databases and caches through
//! `crate::cost::check_new_resource`), so every way of starting one (its
//! route, a restore, a branch, a manifest) is covered and the project is
//! the one the resource really gets. Buckets, made only by their route and
//! behind the storage provider, are checked by path ([`guard`]), a project
//! budget by the `projectId` the body names or the token's project.

use axum::extract::{MatchedPath, Request, State};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use plateau_store::Db;
use plateau_store::spend::{self, Budget};

use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;

/// The API paths whose POST creates a resource that costs and that is not
/// checked where it is created.
pub const CREATING: [&str; 1] = ["/storage/buckets"];

/// Refuses starting a resource in `project` (none: the organisation's
/// level only) while a budget that chose `refuse_new` is at its limit.
pub async fn check(db: &Db, caller: &Caller, project: Option<&str>) -> Result<(), ApiError> {
    let budgets = spend::refusing(db, &caller.org_id).await?;
    match budgets.iter().find(|b| {
        b.project_id.is_none() || (project.is_some() && b.project_id.as_deref() == project)
    }) {
        Some(budget) => Err(limit_reached(budget)),
        None => Ok(()),
    }
}

/// Refuses a creation while a budget that chose `refuse_new` is at its
/// limit; lets everything else through untouched.
pub async fn guard(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let creating = req.method() == Method::POST
        && req
            .extensions()
            .get::<MatchedPath>()
            .map(|p| p.as_str().trim_start_matches(crate::API_PREFIX))
            .is_some_and(|p| CREATING.contains(&p));
    let Some(caller) = req
        .extensions()
        .get::<Caller>()
        .cloned()
        .filter(|_| creating)
    else {
        return next.run(req).await;
    };
    match refused(&app, &caller, req).await {
        Ok(Ok(req)) => next.run(req).await,
        Ok(Err(budget)) => limit_reached(&budget).into_response(),
        Err(e) => e.into_response(),
    }
}

/// The request back when nothing refuses it, else the budget that does.
async fn refused(
    app: &AppState,
    caller: &Caller,
    req: Request,
) -> Result<Result<Request, Budget>, ApiError> {
    let budgets = spend::refusing(app.db(), &caller.org_id).await?;
    if budgets.is_empty() {
        return Ok(Ok(req));
    }
    if let Some(org) = budgets.iter().find(|b| b.project_id.is_none()) {
        return Ok(Err(org.clone()));
    }
    // Only project budgets: which project does the request name?
    let (parts, body) = req.into_parts();
    let bytes = crate::json::read_body(body, app.config().max_body_bytes).await?;
    let named = serde_json::from_slice::<serde_json::Value>(&bytes)
        .ok()
        .and_then(|v| v.get("projectId")?.as_str().map(str::to_owned))
        .or_else(|| caller.project_id.clone());
    if let Some(budget) = budgets
        .into_iter()
        .find(|b| b.project_id.is_some() && b.project_id == named)
    {
        return Ok(Err(budget));
    }
    Ok(Ok(Request::from_parts(
        parts,
        axum::body::Body::from(bytes),
    )))
}

fn limit_reached(b: &Budget) -> ApiError {
    let whose = match &b.project_id {
        Some(project) => format!("project {project}'s"),
        None => "the organisation's".to_owned(),
    };
    ApiError::conflict(
        "spend_limit_reached",
        format!(
            "{whose} monthly spend budget ({} cents, budget {}) is reached and refuses new resources; raise it with PATCH /spend/budgets/{} and lift the limit with POST /spend/resume",
            b.amount_cents, b.id, b.id
        ),
    )
}
