//! Authentication and authorization, done once for every route before its
//! handler runs (spec section 5).
//!
//! Each operation declares who may call it in its `#[utoipa::path]`
//! `security` attribute; [`RouteTable::from_openapi`] reads those
//! declarations back, so the OpenAPI document and the enforcement can never
//! disagree. The middleware then:
//! - lets public routes through;
//! - checks the admin session cookie on admin routes (a valid token there
//!   is refused with 403: it never stands in for the operator);
//! - checks a connect-grant secret on `POST /connect/token`;
//! - otherwise checks the bearer token (401 when missing, malformed,
//!   unknown, expired or revoked) and the route's scope (403 naming it),
//!   and hands the handler a [`Caller`].

use std::collections::HashMap;
use std::net::SocketAddr;

use axum::extract::{ConnectInfo, FromRequestParts, MatchedPath, Request, State};
use axum::http::request::Parts;
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use plateau_core::secret::{self, GRANT_PREFIX, SESSION_PREFIX, TOKEN_PREFIX};
use plateau_core::{Role, Scopes, time};
use plateau_store::events::Actor;
use plateau_store::grants::Grant;
use plateau_store::{grants, sessions, tokens};

use crate::error::ApiError;
use crate::state::AppState;

/// Name of the admin session cookie.
pub const ADMIN_COOKIE: &str = "plateau_admin";

/// Who may call an operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Requirement {
    /// Anyone, without credentials.
    Public,
    /// Any valid API token.
    Token,
    /// An API token carrying this scope.
    Scope(String),
    /// The platform operator's session cookie.
    Admin,
    /// A connect-grant secret as bearer.
    Grant,
}

/// Operation to requirement, read from the OpenAPI document.
#[derive(Clone, Debug, Default)]
pub struct RouteTable {
    routes: HashMap<(Method, String), Requirement>,
}

impl RouteTable {
    /// Reads each operation's `security`. An operation without one is a
    /// programming error and fails start-up.
    pub fn from_openapi(doc: &utoipa::openapi::OpenApi) -> Result<Self, String> {
        let mut routes = HashMap::new();
        let json = serde_json::to_value(&doc.paths).map_err(|e| e.to_string())?;
        let paths = json.as_object().cloned().unwrap_or_default();
        for (path, item) in paths {
            for (method, op) in item.as_object().into_iter().flatten() {
                let Ok(method) = method.to_ascii_uppercase().parse::<Method>() else {
                    continue;
                };
                let requirement = requirement_of(&op["security"])
                    .ok_or_else(|| format!("{method} {path} declares no security requirement"))?;
                routes.insert((method, path.clone()), requirement);
            }
        }
        Ok(RouteTable { routes })
    }

    pub fn get(&self, method: &Method, path: &str) -> Option<&Requirement> {
        self.routes.get(&(method.clone(), path.to_owned()))
    }

    pub fn has_path(&self, path: &str) -> bool {
        self.routes.keys().any(|(_, p)| p == path)
    }

    pub fn insert(&mut self, method: Method, path: String, requirement: Requirement) {
        self.routes.insert((method, path), requirement);
    }
}

fn requirement_of(security: &serde_json::Value) -> Option<Requirement> {
    let first = security.as_array()?.first()?.as_object()?;
    let Some((scheme, scopes)) = first.iter().next() else {
        return Some(Requirement::Public);
    };
    let scope = scopes
        .as_array()
        .and_then(|s| s.first())
        .and_then(|s| s.as_str());
    Some(match (scheme.as_str(), scope) {
        ("bearer", Some(scope)) => Requirement::Scope(scope.to_owned()),
        ("bearer", None) => Requirement::Token,
        ("adminSession", _) => Requirement::Admin,
        ("connectGrant", _) => Requirement::Grant,
        _ => return None,
    })
}

/// An authenticated API token and what it may do.
#[derive(Clone, Debug)]
pub struct Caller {
    pub token_id: String,
    pub org_id: String,
    pub org_name: String,
    pub plan: String,
    pub user_id: String,
    pub user_name: String,
    pub user_email: Option<String>,
    pub role: Role,
    pub scopes: Scopes,
    /// Set for tokens limited to one project.
    pub project_id: Option<String>,
    pub max_cost_cents: Option<i64>,
    pub spent_cents: i64,
    pub expires_at: Option<i64>,
    pub ip: Option<String>,
}

impl Caller {
    pub fn actor(&self) -> Actor {
        Actor {
            kind: "token".to_owned(),
            id: Some(self.token_id.clone()),
            user_id: Some(self.user_id.clone()),
            ip: self.ip.clone(),
        }
    }

    /// Refuses callers that are not owners or admins.
    pub fn require_manager(&self, what: &str) -> Result<(), ApiError> {
        if self.role.is_manager() {
            Ok(())
        } else {
            Err(ApiError::forbidden(
                "role_required",
                format!("{what} is limited to owners and admins of the organisation"),
            ))
        }
    }
}

/// A verified connect grant (on `POST /connect/token`).
#[derive(Clone, Debug)]
pub struct GrantCaller {
    pub grant: Grant,
    pub ip: Option<String>,
}

/// A verified operator session; the hash of its secret identifies it.
#[derive(Clone, Debug)]
pub struct AdminSession {
    pub id_hash: String,
    pub ip: Option<String>,
}

/// Who a request authenticated as, for scoping idempotency keys.
#[derive(Clone, Debug)]
pub struct Principal(pub String);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts.extensions.get::<Caller>().cloned().ok_or_else(|| {
            ApiError::unauthenticated("unauthenticated", "send Authorization: Bearer <token>")
        })
    }
}

impl<S: Send + Sync> FromRequestParts<S> for GrantCaller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<GrantCaller>()
            .cloned()
            .ok_or_else(|| {
                ApiError::unauthenticated(
                    "unauthenticated",
                    "send Authorization: Bearer <grant secret>",
                )
            })
    }
}

impl<S: Send + Sync> FromRequestParts<S> for AdminSession {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<AdminSession>()
            .cloned()
            .ok_or_else(admin_required)
    }
}

/// The refusal of a request without the operator's session: 403 when it
/// carries a valid API token (an authenticated caller without the right:
/// no token opens the operator's routes, whatever its scopes), 401
/// otherwise.
async fn not_admin(app: &AppState, bearer: Option<String>) -> ApiError {
    if let Some(secret) = bearer
        && authenticate_token(app, &secret, None).await.is_ok()
    {
        return ApiError::forbidden(
            "admin_session_required",
            "this operation takes the platform operator's session (POST /api/v1/admin/login); an API token is not accepted, whatever its scopes",
        );
    }
    admin_required()
}

fn admin_required() -> ApiError {
    ApiError::unauthenticated(
        "admin_session_required",
        "log in with POST /api/v1/admin/login and send the plateau_admin cookie",
    )
}

/// The client address of a request.
pub fn client_ip(req: &Request) -> Option<String> {
    req.extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip().to_string())
}

/// The middleware. `table` maps operations to requirements; `prefix` is
/// where the API is nested (`/api/v1`).
pub async fn authenticate(
    State((app, table)): State<(AppState, std::sync::Arc<RouteTable>)>,
    mut req: Request,
    next: Next,
) -> Response {
    let path = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().trim_start_matches(crate::API_PREFIX).to_owned());
    let Some(path) = path else {
        return next.run(req).await;
    };
    // HEAD is served by the GET handler, under the GET rule.
    let method = if req.method() == Method::HEAD {
        Method::GET
    } else {
        req.method().clone()
    };
    let Some(requirement) = table.get(&method, &path).cloned() else {
        if table.has_path(&path) {
            // A method the path does not serve: the router answers 405.
            return next.run(req).await;
        }
        // Every route is in the table; a miss is a bug, and fails closed.
        return ApiError::Internal(format!(
            "no security requirement for {} {}",
            req.method(),
            req.uri().path()
        ))
        .into_response();
    };
    match check(&app, &requirement, &mut req).await {
        Ok(()) => next.run(req).await,
        Err(e) => e.into_response(),
    }
}

/// Checks `requirement` for `req`, adding the verified [`Caller`],
/// [`GrantCaller`] or [`AdminSession`] and the [`Principal`] to its
/// extensions. Plugin routes use it too.
pub async fn check(
    app: &AppState,
    requirement: &Requirement,
    req: &mut Request,
) -> Result<(), ApiError> {
    let ip = client_ip(req);
    match requirement {
        Requirement::Public => Ok(()),
        Requirement::Admin => {
            let Some(session) = admin_cookie(req) else {
                return Err(not_admin(app, bearer(req).ok()).await);
            };
            let id_hash = secret::hash(&session);
            if !sessions::is_valid(app.db(), &id_hash, time::now_ms()).await? {
                return Err(admin_required());
            }
            req.extensions_mut()
                .insert(Principal(format!("admin:{id_hash}")));
            req.extensions_mut().insert(AdminSession { id_hash, ip });
            Ok(())
        }
        Requirement::Grant => {
            let secret = bearer(req)?;
            if !secret::is_well_formed(&secret, GRANT_PREFIX) {
                return Err(ApiError::unauthenticated(
                    "token_invalid",
                    "this endpoint takes a connect-grant secret (pltc_...) as bearer",
                ));
            }
            let grant = grants::find_by_secret_hash(app.db(), &secret::hash(&secret))
                .await?
                .filter(|g| g.deleted_at.is_none())
                .ok_or_else(|| {
                    ApiError::unauthenticated(
                        "token_invalid",
                        "the grant secret is unknown or revoked",
                    )
                })?;
            req.extensions_mut()
                .insert(Principal(format!("grant:{}", grant.id)));
            req.extensions_mut().insert(GrantCaller { grant, ip });
            Ok(())
        }
        Requirement::Token | Requirement::Scope(_) => {
            let caller = authenticate_token(app, &bearer(req)?, ip).await?;
            if let Requirement::Scope(scope) = requirement
                && !caller.scopes.allows(scope)
            {
                return Err(ApiError::MissingScope(scope.clone()));
            }
            req.extensions_mut()
                .insert(Principal(format!("token:{}", caller.token_id)));
            req.extensions_mut().insert(caller);
            Ok(())
        }
    }
}

fn bearer(req: &Request) -> Result<String, ApiError> {
    let value = req
        .headers()
        .get(header::AUTHORIZATION)
        .ok_or_else(|| {
            ApiError::unauthenticated("unauthenticated", "send Authorization: Bearer <token>")
        })?
        .to_str()
        .map_err(|_| malformed())?;
    let (scheme, token) = value.trim().split_once(' ').ok_or_else(malformed)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(malformed());
    }
    Ok(token.trim().to_owned())
}

fn malformed() -> ApiError {
    ApiError::unauthenticated(
        "token_invalid",
        "the Authorization header must be: Bearer plt_<token>",
    )
}

/// Verifies an API token secret.
pub async fn authenticate_token(
    app: &AppState,
    secret: &str,
    ip: Option<String>,
) -> Result<Caller, ApiError> {
    if secret.starts_with(GRANT_PREFIX) {
        return Err(ApiError::unauthenticated(
            "token_invalid",
            "connect-grant secrets are accepted only on POST /connect/token",
        ));
    }
    if !secret::is_well_formed(secret, TOKEN_PREFIX) {
        return Err(malformed());
    }
    let hash = secret::hash(secret);
    let now = time::now_ms();
    if let Some(mut caller) = app.token_cache().get(&hash)
        && caller.expires_at.is_none_or(|at| at > now)
    {
        caller.ip = ip;
        return Ok(caller);
    }
    let found = tokens::find_by_secret_hash(app.db(), &hash)
        .await?
        .ok_or_else(|| ApiError::unauthenticated("token_invalid", "the token is not valid"))?;
    let token = found.token;
    if token.revoked_at.is_some() {
        return Err(ApiError::unauthenticated(
            "token_revoked",
            "the token was revoked",
        ));
    }
    if token.expires_at.is_some_and(|at| at <= now) {
        return Err(ApiError::unauthenticated(
            "token_expired",
            "the token has expired",
        ));
    }
    let role = found
        .role
        .parse::<Role>()
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let caller = Caller {
        token_id: token.id,
        org_id: token.org_id,
        org_name: found.org_name,
        plan: found.plan,
        user_id: token.user_id,
        user_name: found.user_name,
        user_email: found.user_email,
        role,
        // The token's scopes that its user's role allows (plateau_core::role).
        scopes: role.restrict(
            &Scopes::from_stored(&token.scopes),
            app.known_scopes().keys().map(String::as_str),
        ),
        project_id: token.project_id,
        max_cost_cents: token.max_cost_cents,
        spent_cents: token.spent_cents,
        expires_at: token.expires_at,
        ip,
    };
    app.token_cache().insert(hash, caller.clone());
    Ok(caller)
}

fn admin_cookie(req: &Request) -> Option<String> {
    req.headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == ADMIN_COOKIE)
        .map(|(_, value)| value.to_owned())
        .filter(|v| secret::is_well_formed(v, SESSION_PREFIX))
}
