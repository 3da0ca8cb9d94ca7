//! The platform operator's API under `/admin`, behind a session cookie
//! rather than a token. The operator's password comes from
//! `PLATEAU_ADMIN_PASSWORD`; without it, login is refused.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use plateau_core::secret::{self, SESSION_PREFIX};
use plateau_core::{Plan, Role, time};
use plateau_store::events::Actor;
use plateau_store::{orgs, provision, sessions};
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;
use utoipa::ToSchema;

use super::tokens::TokenView;
use super::{Pairs, page_and_filters};
use crate::auth::{ADMIN_COOKIE, AdminSession};
use crate::error::{ApiError, Problem};
use crate::json::{Body, Validator};
use crate::pagination::{Page, Pager};
use crate::state::AppState;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Login {
    pub password: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionView {
    pub expires_at: String,
}

/// Log in as the platform operator. Sets the `plateau_admin` cookie.
#[utoipa::path(post, path = "/admin/login", tag = "admin",
    security(()),
    request_body = Login,
    responses((status = 200, description = "logged in; the cookie is set", body = SessionView),
        (status = 401, description = "the password is wrong", body = Problem,
            content_type = "application/problem+json"),
        (status = 403, description = "admin login is off (no PLATEAU_ADMIN_PASSWORD)", body = Problem,
            content_type = "application/problem+json")))]
pub async fn login(
    State(app): State<AppState>,
    Body(input): Body<Login>,
) -> Result<Response, ApiError> {
    let Some(expected) = &app.config().admin_password else {
        return Err(ApiError::forbidden(
            "admin_disabled",
            "admin login is off: start the server with PLATEAU_ADMIN_PASSWORD set",
        ));
    };
    let matches: bool = secret::hash(&input.password)
        .as_bytes()
        .ct_eq(secret::hash(expected).as_bytes())
        .into();
    if !matches {
        return Err(ApiError::unauthenticated(
            "invalid_credentials",
            "the password is wrong",
        ));
    }
    let session = secret::generate(SESSION_PREFIX);
    let now = time::now_ms();
    let ttl = app.config().admin_session_ttl_secs;
    let expires_at = now + ttl * 1000;
    sessions::create(app.db(), &secret::hash(&session), now, expires_at).await?;
    let cookie = format!(
        "{ADMIN_COOKIE}={session}; Path={}/admin; HttpOnly; SameSite=Strict; Max-Age={ttl}",
        crate::API_PREFIX
    );
    let mut response = Json(SessionView {
        expires_at: time::to_rfc3339(expires_at),
    })
    .into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).map_err(|e| ApiError::Internal(e.to_string()))?,
    );
    Ok(response)
}

/// End the operator session.
#[utoipa::path(post, path = "/admin/logout", tag = "admin",
    security(("adminSession" = [])),
    responses((status = 204, description = "logged out")))]
pub async fn logout(
    State(app): State<AppState>,
    session: AdminSession,
) -> Result<Response, ApiError> {
    sessions::delete(app.db(), &session.id_hash).await?;
    let mut headers = HeaderMap::new();
    let expired = format!(
        "{ADMIN_COOKIE}=; Path={}/admin; HttpOnly; SameSite=Strict; Max-Age=0",
        crate::API_PREFIX
    );
    if let Ok(v) = HeaderValue::from_str(&expired) {
        headers.insert(header::SET_COOKIE, v);
    }
    Ok((StatusCode::NO_CONTENT, headers).into_response())
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrganizationView {
    pub id: String,
    pub name: String,
    pub plan: String,
    pub created_at: String,
}

impl From<orgs::Organization> for OrganizationView {
    fn from(o: orgs::Organization) -> Self {
        OrganizationView {
            id: o.id,
            name: o.name,
            plan: o.plan,
            created_at: time::to_rfc3339(o.created_at),
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateOrganization {
    pub name: String,
    /// free, starter, pro or scale; default free.
    pub plan: Option<String>,
    /// The referral code the new organisation came through (`ref` on the
    /// landing page a referral link leads to): credits the organisation
    /// it belongs to (see `GET /rewards/referral`).
    #[schema(pattern = "^[a-z0-9]{12}$")]
    pub referral_code: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedOrganization {
    pub organization: OrganizationView,
    pub default_project_id: String,
    pub owner: CreatedMember,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedMember {
    pub user_id: String,
    pub name: String,
    pub role: String,
    /// The member's first token. Shown once.
    pub token: String,
    pub token_details: TokenView,
}

impl From<provision::NewMember> for CreatedMember {
    fn from(m: provision::NewMember) -> Self {
        let now = time::now_ms();
        CreatedMember {
            user_id: m.user.id,
            name: m.user.name,
            role: m.role.to_string(),
            token: m.secret,
            token_details: TokenView::from_row(m.token, now),
        }
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AddMember {
    pub name: String,
    pub email: Option<String>,
    /// owner, admin, member, billing or viewer.
    pub role: String,
}

fn admin_actor(session: &AdminSession) -> Actor {
    Actor::admin(session.ip.clone())
}

/// Every organisation on the platform.
#[utoipa::path(get, path = "/admin/organizations", tag = "admin",
    security(("adminSession" = [])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "organisations", body = Page<OrganizationView>)))]
pub async fn list_orgs(
    State(app): State<AppState>,
    _session: AdminSession,
    pairs: Pairs,
) -> Result<Json<Page<OrganizationView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(app.cursors(), &page, "organizations", "admin", filters)?;
    let listed = orgs::list(app.db(), pager.keyset()).await?;
    Ok(Json(pager.finish(
        listed,
        |o| o.id.clone(),
        OrganizationView::from,
    )))
}

/// Create an organisation with its owner; returns the owner token once.
/// With `referralCode`, the sign-up is credited to the organisation the
/// code belongs to, in the same transaction.
#[utoipa::path(post, path = "/admin/organizations", tag = "admin",
    security(("adminSession" = [])),
    request_body = CreateOrganization,
    responses((status = 201, description = "the organisation and its owner token", body = CreatedOrganization)))]
pub async fn create_org(
    State(app): State<AppState>,
    session: AdminSession,
    Body(input): Body<CreateOrganization>,
) -> Result<(StatusCode, Json<CreatedOrganization>), ApiError> {
    Validator::new().name("name", &input.name).finish()?;
    let plan = match input.plan.as_deref() {
        None => Plan::Free,
        Some(p) => p
            .parse::<Plan>()
            .map_err(|e| ApiError::invalid("plan", e.to_string()))?,
    };
    let actor = admin_actor(&session);
    let mut tx = app.db().begin().await?;
    let created =
        provision::create_organization_in(&mut tx, input.name.trim(), plan, None, &actor).await?;
    if let Some(code) = &input.referral_code {
        super::rewards::credit_signup(&mut tx, code, &created.org.id, &actor, time::now_ms())
            .await?;
    }
    tx.commit_last().await?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedOrganization {
            organization: created.org.into(),
            default_project_id: created.default_project.id,
            owner: created.owner.into(),
        }),
    ))
}

/// Add a member to an organisation; returns their first token once.
#[utoipa::path(post, path = "/admin/organizations/{id}/members", tag = "admin",
    security(("adminSession" = [])),
    params(("id" = String, Path, description = "organisation id")),
    request_body = AddMember,
    responses((status = 201, description = "the member and their token", body = CreatedMember)))]
pub async fn add_member(
    State(app): State<AppState>,
    session: AdminSession,
    Path(id): Path<String>,
    Body(input): Body<AddMember>,
) -> Result<(StatusCode, Json<CreatedMember>), ApiError> {
    let mut v = Validator::new();
    v.name("name", &input.name);
    if let Some(email) = &input.email {
        v.check(
            email.contains('@') && email.len() <= 254,
            "email",
            "must be an email address",
        );
    }
    v.finish()?;
    let role = input
        .role
        .parse::<Role>()
        .map_err(|e| ApiError::invalid("role", e.to_string()))?;
    orgs::get(app.db(), &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("organization {id} does not exist")))?;
    let member = provision::add_member(
        app.db(),
        &id,
        input.name.trim(),
        input.email,
        role,
        &admin_actor(&session),
    )
    .await?;
    Ok((StatusCode::CREATED, Json(member.into())))
}
