//! `POST /manifest` and `POST /manifest/plan` (spec section 4.3).

use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_apps::Apps;
use plateau_cache::CacheService;
use plateau_databases::DatabaseService;
use serde_json::{Value, json};

use crate::apply::{Stopped, apply};
use crate::model::Manifest;
use crate::observe::{Services, observe};
use crate::views::{ManifestBody, ManifestPlan};
use crate::{diff, graph, parse};

/// The services, as handlers extract them.
type Databases = Extension<Arc<DatabaseService>>;
type Caches = Extension<Arc<CacheService>>;

/// Plan a manifest: per item and field, what an apply would create,
/// update or leave unchanged, and what it would delete with `prune`;
/// changes nothing. Values that depend on an item not yet created or
/// running are `known: false`; environment values are never shown.
#[utoipa::path(post, path = "/manifest/plan", tag = "manifest",
    security(("bearer" = ["manifest:write"])),
    request_body = ManifestBody,
    responses((status = 200, description = "the plan", body = ManifestPlan),
              (status = 400, description = "an invalid field (named by its path, `apps[1].env.DATABASE_URL`), or references that form a cycle", body = plateau_api::error::Problem),
              (status = 409, description = "a name taken outside the project, or a field that cannot change on an existing resource", body = plateau_api::error::Problem)))]
pub async fn plan(
    State(state): State<AppState>,
    Extension(apps): Extension<Apps>,
    Extension(databases): Databases,
    Extension(caches): Caches,
    caller: Caller,
    Body(body): Body<Value>,
) -> Result<Json<ManifestPlan>, ApiError> {
    let m = parse::parse(&body)?;
    let order = graph::order(&m)?;
    check_scopes(&caller, &m)?;
    let s = Services {
        state,
        apps,
        databases,
        caches,
        caller,
    };
    let existing = observe(&s, &m).await?;
    let (plan, _) = diff::plan(&s, &m, &order, &existing).await?;
    Ok(Json(plan))
}

/// Apply a manifest: create what is missing, update what differs, leave
/// the rest untouched (an unchanged manifest makes no update and no
/// deployment), in dependency order; an app waits for the databases and
/// caches it refers to to run. A failure part-way answers the failing
/// item's error with `item` (its key) and `applied` (the items applied
/// before it); applying again converges.
#[utoipa::path(post, path = "/manifest", tag = "manifest",
    security(("bearer" = ["manifest:write"])),
    request_body = ManifestBody,
    responses((status = 200, description = "what was done, item by item", body = ManifestPlan),
              (status = 400, description = "an invalid field (named by its path, `apps[1].env.DATABASE_URL`), or references that form a cycle", body = plateau_api::error::Problem),
              (status = 409, description = "a name taken outside the project, a field that cannot change, a plan limit, or a dependency that failed", body = plateau_api::error::Problem),
              (status = 502, description = "an image's registry did not answer", body = plateau_api::error::Problem),
              (status = 503, description = "a database or cache an app refers to did not run in time; apply again", body = plateau_api::error::Problem)))]
pub async fn apply_manifest(
    State(state): State<AppState>,
    Extension(apps): Extension<Apps>,
    Extension(databases): Databases,
    Extension(caches): Caches,
    caller: Caller,
    Body(body): Body<Value>,
) -> Result<Response, ApiError> {
    let m = parse::parse(&body)?;
    let order = graph::order(&m)?;
    check_scopes(&caller, &m)?;
    let s = Services {
        state,
        apps,
        databases,
        caches,
        caller,
    };
    let existing = observe(&s, &m).await?;
    let (plan, values) = diff::plan(&s, &m, &order, &existing).await?;
    match apply(&s, &m, existing, plan, values).await {
        Ok(done) => Ok(Json(done).into_response()),
        Err(stopped) => Ok(stopped_response(*stopped)),
    }
}

/// The scopes of what a manifest does, besides `manifest:write`: a token
/// cannot make through a manifest what it could not make itself (a new
/// project's `projects:write` is checked when it is made).
fn check_scopes(caller: &Caller, m: &Manifest) -> Result<(), ApiError> {
    let mut needed = Vec::new();
    if !m.apps.is_empty() || m.prune {
        needed.extend(["apps:write", "apps:deploy"]);
    }
    if !m.databases.is_empty() || m.prune {
        needed.push("databases:write");
    }
    if !m.redis.is_empty() {
        needed.push("cache:write");
    }
    match needed.into_iter().find(|s| !caller.scopes.allows(s)) {
        Some(missing) => Err(ApiError::MissingScope(missing.to_owned())),
        None => Ok(()),
    }
}

/// The failing item's problem, its fields and detail put under the
/// item's path, with `item` and `applied` added.
fn stopped_response(stopped: Stopped) -> Response {
    let Stopped {
        error,
        item,
        path,
        applied,
    } = stopped;
    let status = error.status();
    let mut problem = error.problem();
    for e in &mut problem.errors {
        e.field = format!("{path}.{}", e.field);
    }
    problem.detail = format!("{path} ({item}): {}", problem.detail);
    let mut body = serde_json::to_value(&problem).unwrap_or_else(|_| json!({}));
    body["item"] = json!(item);
    body["applied"] = json!(applied);
    (
        status,
        [(header::CONTENT_TYPE, plateau_api::error::PROBLEM_JSON)],
        body.to_string(),
    )
        .into_response()
}
