//! The connect credential broker (spec section 4.2).
//!
//! A grant is a ceiling (scopes, lifetime, spend, optionally one project)
//! with its own secret (`pltc_...`), which is accepted only as the bearer
//! of `POST /connect/token`. That endpoint mints ephemeral tokens inside
//! the ceiling: scopes outside the grant are refused (403), the lifetime
//! and spend are clamped to the grant's maxima. A paused grant mints
//! nothing; a deleted grant's secret is refused for good.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_core::id::new_id;
use plateau_core::secret::{self, GRANT_PREFIX};
use plateau_core::{Scopes, time};
use plateau_store::events::{self, Actor, NewEvent};
use plateau_store::grants::{self, Grant};
use plateau_store::projects;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::tokens::{Ceiling, CreatedToken, MintRequest, mint, parse_scopes};
use super::{Pairs, page_and_filters};
use crate::auth::{Caller, GrantCaller};
use crate::error::ApiError;
use crate::json::{Body, Validator};
use crate::openapi::ScopeName;
use crate::pagination::{Page, Pager};
use crate::state::AppState;

/// Lifetime ceiling of a grant that does not set `maxTtlSeconds`: one hour.
pub const DEFAULT_MAX_TTL_SECS: i64 = 3600;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GrantView {
    pub id: String,
    pub name: String,
    pub allowed_scopes: Vec<String>,
    pub max_ttl_seconds: i64,
    pub max_cost_cents: Option<i64>,
    pub project_id: Option<String>,
    /// False while paused.
    pub enabled: bool,
    /// The prefix and last four characters of the secret.
    pub masked_secret: String,
    pub created_at: String,
    pub updated_at: String,
}

impl From<Grant> for GrantView {
    fn from(g: Grant) -> Self {
        GrantView {
            id: g.id,
            name: g.name,
            allowed_scopes: Scopes::from_stored(&g.allowed_scopes).names(),
            max_ttl_seconds: g.max_ttl_seconds,
            max_cost_cents: g.max_cost_cents,
            project_id: g.project_id,
            enabled: g.enabled != 0,
            masked_secret: g.secret_hint,
            created_at: time::to_rfc3339(g.created_at),
            updated_at: time::to_rfc3339(g.updated_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedGrant {
    /// The grant secret. Store it now: it is never shown again.
    pub secret: String,
    #[serde(flatten)]
    pub grant: GrantView,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateGrant {
    #[schema(schema_with = crate::openapi::name_schema)]
    pub name: String,
    /// The ceiling of minted tokens' scopes; within the caller's scopes.
    #[schema(value_type = Vec<ScopeName>, min_items = 1)]
    pub allowed_scopes: Vec<String>,
    /// Longest lifetime of a minted token; default 3600.
    #[schema(minimum = 1)]
    pub max_ttl_seconds: Option<i64>,
    #[schema(minimum = 0)]
    pub max_cost_cents: Option<i64>,
    /// Limit minted tokens to this project.
    pub project_id: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateGrant {
    /// False pauses the grant: it mints nothing until enabled again.
    pub enabled: Option<bool>,
    #[schema(schema_with = crate::openapi::optional_name_schema, required = false)]
    pub name: Option<String>,
    #[schema(value_type = Option<Vec<ScopeName>>, min_items = 1)]
    pub allowed_scopes: Option<Vec<String>>,
    #[schema(minimum = 1)]
    pub max_ttl_seconds: Option<i64>,
    #[schema(minimum = 0)]
    pub max_cost_cents: Option<i64>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenRequest {
    /// Must be a subset of the grant's allowedScopes.
    #[schema(value_type = Vec<ScopeName>, min_items = 1)]
    pub scopes: Vec<String>,
    /// Clamped to the grant's maxTtlSeconds, which is also the default.
    #[schema(minimum = 1)]
    pub ttl_seconds: Option<i64>,
    /// Recorded with the token and in the audit log.
    #[schema(max_length = 200)]
    pub purpose: Option<String>,
    /// Clamped to the grant's maxCostCents.
    #[schema(minimum = 0)]
    pub max_cost_cents: Option<i64>,
}

fn check_limits(v: &mut Validator, ttl: Option<i64>, cost: Option<i64>) {
    if let Some(ttl) = ttl {
        v.check(
            ttl > 0,
            "maxTtlSeconds",
            "must be a positive number of seconds",
        );
    }
    if let Some(cost) = cost {
        v.check(cost >= 0, "maxCostCents", "must not be negative");
    }
}

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("connect grant {id} does not exist"))
}

/// List live grants.
#[utoipa::path(get, path = "/connect/grants", tag = "connect",
    security(("bearer" = ["connect:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "grants", body = Page<GrantView>)))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<GrantView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(
        app.cursors(),
        &page,
        "connect-grants",
        &caller.org_id,
        filters,
    )?;
    let listed = grants::list(app.db(), &caller.org_id, pager.keyset()).await?;
    Ok(Json(pager.finish(
        listed,
        |g| g.id.clone(),
        GrantView::from,
    )))
}

/// Create a grant. Returns its secret once.
#[utoipa::path(post, path = "/connect/grants", tag = "connect",
    security(("bearer" = ["connect:write"])),
    request_body = CreateGrant,
    responses((status = 201, description = "the grant, with its secret", body = CreatedGrant)))]
pub async fn create(
    State(app): State<AppState>,
    caller: Caller,
    Body(input): Body<CreateGrant>,
) -> Result<(StatusCode, Json<CreatedGrant>), ApiError> {
    let mut v = Validator::new();
    v.name("name", &input.name);
    check_limits(&mut v, input.max_ttl_seconds, input.max_cost_cents);
    v.finish()?;
    let scopes = parse_scopes(&app, "allowedScopes", &input.allowed_scopes)?;
    if let Some(missing) = caller.scopes.first_missing(&scopes) {
        return Err(ApiError::forbidden(
            "scope_exceeds_caller",
            format!("a grant cannot allow {missing}: the creating token does not have it"),
        ));
    }
    let project_id = input.project_id.or_else(|| caller.project_id.clone());
    if let Some(project) = &project_id {
        let allowed = caller
            .project_id
            .as_ref()
            .is_none_or(|only| only == project);
        if !allowed
            || projects::get(app.db(), &caller.org_id, project)
                .await?
                .is_none()
        {
            return Err(ApiError::invalid(
                "projectId",
                format!("project {project} does not exist"),
            ));
        }
    }
    let now = time::now_ms();
    let secret = secret::generate(GRANT_PREFIX);
    let grant = Grant {
        id: new_id("cgr"),
        org_id: caller.org_id.clone(),
        user_id: caller.user_id.clone(),
        name: input.name,
        allowed_scopes: scopes.to_stored(),
        max_ttl_seconds: input.max_ttl_seconds.unwrap_or(DEFAULT_MAX_TTL_SECS),
        max_cost_cents: input.max_cost_cents,
        project_id,
        enabled: 1,
        secret_hint: secret::mask(&secret, GRANT_PREFIX),
        created_at: now,
        updated_at: now,
        deleted_at: None,
    };
    let mut tx = app.db().begin().await?;
    grants::insert(&mut tx, &grant, &secret::hash(&secret)).await?;
    let event = NewEvent::audited(&caller.org_id, "connect_grant.created", "integrations", "create", &caller.actor())
        .resource("connect_grant", &grant.id)
        .data(json!({ "name": grant.name, "allowedScopes": scopes.names(), "projectId": grant.project_id }));
    events::record(&mut tx, &event, now).await?;
    tx.commit_last().await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedGrant {
            secret,
            grant: grant.into(),
        }),
    ))
}

/// Change or pause a grant.
#[utoipa::path(patch, path = "/connect/grants/{id}", tag = "connect",
    security(("bearer" = ["connect:write"])),
    params(("id" = String, Path, description = "grant id")),
    request_body = Option<UpdateGrant>,
    responses((status = 200, description = "the grant after the change", body = GrantView)))]
pub async fn update(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<UpdateGrant>,
) -> Result<Json<GrantView>, ApiError> {
    let mut v = Validator::new();
    if let Some(name) = &input.name {
        v.name("name", name);
    }
    check_limits(&mut v, input.max_ttl_seconds, input.max_cost_cents);
    v.finish()?;
    let scopes = match &input.allowed_scopes {
        Some(names) => {
            let scopes = parse_scopes(&app, "allowedScopes", names)?;
            if let Some(missing) = caller.scopes.first_missing(&scopes) {
                return Err(ApiError::forbidden(
                    "scope_exceeds_caller",
                    format!("a grant cannot allow {missing}: the updating token does not have it"),
                ));
            }
            Some(scopes)
        }
        None => None,
    };
    let mut tx = app.db().begin().await?;
    let mut grant = grants::get(&mut tx, &caller.org_id, &id)
        .await?
        .ok_or_else(|| not_found(&id))?;
    if let Some(name) = input.name {
        grant.name = name;
    }
    if let Some(scopes) = &scopes {
        grant.allowed_scopes = scopes.to_stored();
    }
    if let Some(ttl) = input.max_ttl_seconds {
        grant.max_ttl_seconds = ttl;
    }
    if input.max_cost_cents.is_some() {
        grant.max_cost_cents = input.max_cost_cents;
    }
    if let Some(enabled) = input.enabled {
        grant.enabled = i64::from(enabled);
    }
    let now = time::now_ms();
    grant.updated_at = now;
    grants::update(&mut tx, &grant).await?;
    let kind = match input.enabled {
        Some(false) => "connect_grant.paused",
        Some(true) => "connect_grant.resumed",
        None => "connect_grant.updated",
    };
    let event = NewEvent::audited(
        &caller.org_id,
        kind,
        "integrations",
        "update",
        &caller.actor(),
    )
    .resource("connect_grant", &grant.id)
    .data(json!({ "name": grant.name, "enabled": grant.enabled != 0,
                      "allowedScopes": Scopes::from_stored(&grant.allowed_scopes).names() }));
    events::record(&mut tx, &event, now).await?;
    tx.commit_last().await?;
    Ok(Json(grant.into()))
}

/// Delete a grant: its secret is refused from now on.
#[utoipa::path(delete, path = "/connect/grants/{id}", tag = "connect",
    security(("bearer" = ["connect:write"])),
    params(("id" = String, Path, description = "grant id")),
    responses((status = 200, description = "the deleted grant", body = GrantView)))]
pub async fn delete(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<GrantView>, ApiError> {
    let mut tx = app.db().begin().await?;
    let grant = grants::get(&mut tx, &caller.org_id, &id)
        .await?
        .ok_or_else(|| not_found(&id))?;
    let now = time::now_ms();
    grants::mark_deleted(&mut tx, &caller.org_id, &id, now).await?;
    let event = NewEvent::audited(
        &caller.org_id,
        "connect_grant.deleted",
        "integrations",
        "delete",
        &caller.actor(),
    )
    .resource("connect_grant", &id)
    .data(json!({ "name": grant.name }));
    events::record(&mut tx, &event, now).await?;
    tx.commit_last().await?;
    Ok(Json(grant.into()))
}

/// Mint an ephemeral token within the grant's ceiling. The bearer is the
/// grant secret, not an API token.
#[utoipa::path(post, path = "/connect/token", tag = "connect",
    security(("connectGrant" = [])),
    request_body = TokenRequest,
    responses((status = 201, description = "the ephemeral token, with its secret", body = CreatedToken)))]
pub async fn token(
    State(app): State<AppState>,
    GrantCaller { grant, ip }: GrantCaller,
    Body(input): Body<TokenRequest>,
) -> Result<(StatusCode, Json<CreatedToken>), ApiError> {
    if grant.enabled == 0 {
        return Err(ApiError::forbidden(
            "grant_paused",
            "this connect grant is paused; enable it with PATCH /connect/grants/{id}",
        ));
    }
    let mut v = Validator::new();
    if let Some(ttl) = input.ttl_seconds {
        v.check(
            ttl > 0,
            "ttlSeconds",
            "must be a positive number of seconds",
        );
    }
    if let Some(cost) = input.max_cost_cents {
        v.check(cost >= 0, "maxCostCents", "must not be negative");
    }
    if let Some(purpose) = &input.purpose {
        v.check(
            purpose.chars().count() <= 200,
            "purpose",
            "must be at most 200 characters",
        );
    }
    v.finish()?;
    let requested = parse_scopes(&app, "scopes", &input.scopes)?;
    let ceiling = Scopes::from_stored(&grant.allowed_scopes);
    if let Some(missing) = ceiling.first_missing(&requested) {
        return Err(ApiError::forbidden(
            "scope_outside_grant",
            format!("the grant does not allow {missing}; request a subset of its allowedScopes"),
        ));
    }
    // Minted tokens act for the user who created the grant, under the grant.
    let ceiling = Ceiling {
        org_id: grant.org_id.clone(),
        user_id: grant.user_id.clone(),
        parent_id: None,
        scopes: ceiling,
        expires_at: None,
        remaining_cents: grant.max_cost_cents,
    };
    let ttl = input
        .ttl_seconds
        .unwrap_or(grant.max_ttl_seconds)
        .min(grant.max_ttl_seconds);
    let request = MintRequest {
        name: format!("{} (ephemeral)", grant.name),
        scopes: requested,
        ttl_secs: ttl,
        max_cost_cents: input.max_cost_cents,
        project_id: grant.project_id.clone(),
        grant_id: Some(grant.id.clone()),
        purpose: input.purpose,
    };
    let actor = Actor {
        kind: "grant".to_owned(),
        id: Some(grant.id.clone()),
        user_id: Some(grant.user_id.clone()),
        ip,
    };
    let created = mint(app.db(), &ceiling, request, &actor).await?;
    Ok((StatusCode::CREATED, Json(created)))
}
