//! `/tokens` (spec section 4.1): list (masked), mint, revoke.
//!
//! A minted token never exceeds its creator: its scopes are a subset of the
//! creator's, it expires no later than the creator, and its spend ceiling
//! is no higher than what the creator has left. Without
//! `expiresInSeconds` a token lives [`DEFAULT_TOKEN_TTL_SECS`] (90 days).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_core::id::new_id;
use plateau_core::secret::{self, TOKEN_PREFIX};
use plateau_core::{Scopes, time};
use plateau_store::Db;
use plateau_store::events::{self, Actor, NewEvent};
use plateau_store::tokens::{self, Token};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{Pairs, page_and_filters};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::{Body, Validator};
use crate::openapi::ScopeName;
use crate::pagination::{Page, Pager};
use crate::state::{AppState, DEFAULT_TOKEN_TTL_SECS};

/// A token as lists show it: never the secret.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenView {
    pub id: String,
    pub name: String,
    /// The prefix and last four characters: `plt_…Xk3d`.
    pub masked_token: String,
    pub scopes: Vec<String>,
    pub project_id: Option<String>,
    pub max_cost_cents: Option<i64>,
    pub spent_cents: i64,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    /// active, expired or revoked.
    pub status: String,
    /// The connect grant that minted it, for ephemeral tokens.
    pub grant_id: Option<String>,
    pub purpose: Option<String>,
    pub created_at: String,
}

impl TokenView {
    pub fn from_row(t: Token, now: i64) -> Self {
        let status = if t.revoked_at.is_some() {
            "revoked"
        } else if t.expires_at.is_some_and(|at| at <= now) {
            "expired"
        } else {
            "active"
        };
        TokenView {
            id: t.id,
            name: t.name,
            masked_token: t.secret_hint,
            scopes: Scopes::from_stored(&t.scopes).names(),
            project_id: t.project_id,
            max_cost_cents: t.max_cost_cents,
            spent_cents: t.spent_cents,
            expires_at: t.expires_at.map(time::to_rfc3339),
            revoked_at: t.revoked_at.map(time::to_rfc3339),
            status: status.to_owned(),
            grant_id: t.grant_id,
            purpose: t.purpose,
            created_at: time::to_rfc3339(t.created_at),
        }
    }
}

/// A token just minted: the only time its secret is shown.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedToken {
    /// The secret. Store it now: it is never shown again.
    pub token: String,
    #[serde(flatten)]
    pub view: TokenView,
}

#[derive(Deserialize, ToSchema, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateToken {
    /// Defaults to `api token`.
    #[schema(schema_with = crate::openapi::optional_name_schema, required = false)]
    pub name: Option<String>,
    /// Defaults to the caller's scopes; may not exceed them.
    #[schema(value_type = Option<Vec<ScopeName>>, min_items = 1)]
    pub scopes: Option<Vec<String>>,
    /// Defaults to 90 days; capped by the caller's own expiry.
    #[schema(minimum = 1)]
    pub expires_in_seconds: Option<i64>,
    /// Spend ceiling in cents; capped by what the caller has left.
    #[schema(minimum = 0)]
    pub max_cost_cents: Option<i64>,
}

/// List the organisation's tokens (owners and admins) or the caller's own
/// (members), masked.
#[utoipa::path(get, path = "/tokens", tag = "tokens",
    security(("bearer" = ["tokens:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "tokens, masked", body = Page<TokenView>)))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<TokenView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(app.cursors(), &page, "tokens", &caller.org_id, filters)?;
    let only_user = (!caller.role.is_manager()).then_some(caller.user_id.as_str());
    let listed = tokens::list(app.db(), &caller.org_id, only_user, pager.keyset()).await?;
    let now = time::now_ms();
    Ok(Json(pager.finish(
        listed,
        |t| t.id.clone(),
        |t| TokenView::from_row(t, now),
    )))
}

/// Mint a token. Returns the secret once. Every field is optional (spec
/// 4.1), so a bare POST mints a token like the caller's.
#[utoipa::path(post, path = "/tokens", tag = "tokens",
    security(("bearer" = ["tokens:write"])),
    request_body = Option<CreateToken>,
    responses((status = 201, description = "the new token, with its secret", body = CreatedToken)))]
pub async fn create(
    State(app): State<AppState>,
    caller: Caller,
    Body(input): Body<CreateToken>,
) -> Result<(StatusCode, Json<CreatedToken>), ApiError> {
    let name = input.name.unwrap_or_else(|| "api token".to_owned());
    let mut v = Validator::new();
    v.name("name", &name);
    if let Some(secs) = input.expires_in_seconds {
        v.check(
            secs > 0,
            "expiresInSeconds",
            "must be a positive number of seconds",
        );
    }
    if let Some(cents) = input.max_cost_cents {
        v.check(cents >= 0, "maxCostCents", "must not be negative");
    }
    v.finish()?;
    let scopes = match input.scopes {
        Some(names) => parse_scopes(&app, "scopes", &names)?,
        None => caller.scopes.clone(),
    };
    let request = MintRequest {
        name,
        scopes,
        ttl_secs: input.expires_in_seconds.unwrap_or(DEFAULT_TOKEN_TTL_SECS),
        max_cost_cents: input.max_cost_cents,
        project_id: caller.project_id.clone(),
        grant_id: None,
        purpose: None,
    };
    let created = mint(app.db(), &Ceiling::of(&caller), request, &caller.actor()).await?;
    Ok((StatusCode::CREATED, Json(created)))
}

/// Revoke a token. It stops working at once, on every host.
#[utoipa::path(delete, path = "/tokens/{id}", tag = "tokens",
    security(("bearer" = ["tokens:write"])),
    params(("id" = String, Path, description = "token id")),
    responses((status = 200, description = "the revoked token", body = TokenView)))]
pub async fn revoke(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<TokenView>, ApiError> {
    let not_found = || ApiError::not_found(format!("token {id} does not exist"));
    let mut tx = app.db().begin().await?;
    let token = tokens::get(&mut tx, &caller.org_id, &id)
        .await?
        .ok_or_else(not_found)?;
    if !caller.role.is_manager() && token.user_id != caller.user_id {
        return Err(not_found());
    }
    let now = time::now_ms();
    if tokens::revoke(&mut tx, &caller.org_id, &id, now).await? {
        let event = NewEvent::audited(
            &caller.org_id,
            "token.revoked",
            "tokens",
            "revoke",
            &caller.actor(),
        )
        .resource("token", &id)
        .data(json!({ "name": token.name }));
        events::record(&mut tx, &event, now).await?;
    }
    let token = tokens::get(&mut tx, &caller.org_id, &id)
        .await?
        .ok_or_else(not_found)?;
    tx.commit().await?;
    app.token_cache().evict_token(&id);
    Ok(Json(TokenView::from_row(token, now)))
}

/// Checks requested scope names: well formed and known.
pub fn parse_scopes(app: &AppState, field: &str, names: &[String]) -> Result<Scopes, ApiError> {
    let mut v = Validator::new();
    v.check(!names.is_empty(), field, "must name at least one scope");
    for (i, name) in names.iter().enumerate() {
        v.check(
            name == plateau_core::scope::ALL || app.is_known_scope(name),
            format!("{field}[{i}]"),
            format!("unknown scope {name:?}"),
        );
    }
    v.finish()?;
    Ok(Scopes::from_names(names.iter().cloned()))
}

/// What to mint, before the creator's ceilings apply.
pub struct MintRequest {
    pub name: String,
    pub scopes: Scopes,
    pub ttl_secs: i64,
    pub max_cost_cents: Option<i64>,
    pub project_id: Option<String>,
    pub grant_id: Option<String>,
    pub purpose: Option<String>,
}

/// What a new token may not exceed: its creator (a token or a grant).
pub struct Ceiling {
    pub org_id: String,
    /// The user the new token acts for.
    pub user_id: String,
    /// The creating token, if a token created it.
    pub parent_id: Option<String>,
    pub scopes: Scopes,
    pub expires_at: Option<i64>,
    /// Spend the creator has left, if it has a ceiling.
    pub remaining_cents: Option<i64>,
}

impl Ceiling {
    pub fn of(caller: &Caller) -> Ceiling {
        Ceiling {
            org_id: caller.org_id.clone(),
            user_id: caller.user_id.clone(),
            parent_id: Some(caller.token_id.clone()),
            scopes: caller.scopes.clone(),
            expires_at: caller.expires_at,
            remaining_cents: caller
                .max_cost_cents
                .map(|max| (max - caller.spent_cents).max(0)),
        }
    }
}

/// Mints a token under `ceiling`: scopes beyond it are refused, the expiry
/// and spend ceiling are clamped to it.
pub async fn mint(
    db: &Db,
    ceiling: &Ceiling,
    request: MintRequest,
    actor: &Actor,
) -> Result<CreatedToken, ApiError> {
    if let Some(missing) = ceiling.scopes.first_missing(&request.scopes) {
        return Err(ApiError::forbidden(
            "scope_exceeds_caller",
            format!("a new token cannot carry {missing}: the creating token does not have it"),
        ));
    }
    let now = time::now_ms();
    let mut expires_at = now.saturating_add(request.ttl_secs.saturating_mul(1000));
    if let Some(limit) = ceiling.expires_at {
        expires_at = expires_at.min(limit);
    }
    let remaining = ceiling.remaining_cents;
    let max_cost_cents = match (request.max_cost_cents, remaining) {
        (Some(asked), Some(left)) => Some(asked.min(left)),
        (None, left) => left,
        (asked, None) => asked,
    };
    let secret = secret::generate(TOKEN_PREFIX);
    let token = Token {
        id: new_id("tok"),
        org_id: ceiling.org_id.clone(),
        user_id: ceiling.user_id.clone(),
        name: request.name,
        secret_hint: secret::mask(&secret, TOKEN_PREFIX),
        scopes: request.scopes.to_stored(),
        project_id: request.project_id,
        max_cost_cents,
        spent_cents: 0,
        expires_at: Some(expires_at),
        revoked_at: None,
        parent_id: ceiling.parent_id.clone(),
        grant_id: request.grant_id,
        purpose: request.purpose,
        created_at: now,
    };
    let mut tx = db.begin().await?;
    tokens::insert(&mut tx, &token, &secret::hash(&secret)).await?;
    let data = json!({
        "name": token.name,
        "scopes": request.scopes.names(),
        "projectId": token.project_id,
        "grantId": token.grant_id,
        "expiresAt": time::to_rfc3339(expires_at),
    });
    let event = NewEvent::audited(&token.org_id, "token.created", "tokens", "create", actor)
        .resource("token", &token.id)
        .data(data);
    events::record(&mut tx, &event, now).await?;
    tx.commit_last().await?;
    Ok(CreatedToken {
        token: secret,
        view: TokenView::from_row(token, now),
    })
}
