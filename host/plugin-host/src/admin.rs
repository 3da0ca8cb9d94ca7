//! The operator's plugin management under `/admin/plugins` (admin
//! session): list plugins and their versions, load a version from an
//! uploaded component or an OCI reference, switch to a stored version,
//! roll back, and read the platform's plugin audit events.
//!
//! Pulling by reference makes this host fetch from an address the request
//! names; only the admin session may ask for it.

use std::sync::Arc;

use axum::extract::{Path, Query, Request, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use plateau_api::AppState;
use plateau_api::auth::AdminSession;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_api::pagination::{Page, Pager};
use plateau_api::routes::events::EventView;
use plateau_api::routes::page_and_filters;
use plateau_core::time;
use plateau_store::events::{self, Actor, Filter};
use plateau_store::plugins::{self as db, VersionInfo};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::host::{HostError, PLATFORM_ORG, PluginHost};
use crate::oci::{OciSource, PullError};

/// Largest component, uploaded or pulled.
pub const MAX_COMPONENT_BYTES: usize = 64 << 20;

/// Largest JSON body naming a reference.
const MAX_REFERENCE_BODY: usize = 64 << 10;

pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list))
        .routes(routes!(upload))
        .routes(routes!(switch))
        .routes(routes!(rollback))
        .routes(routes!(platform_events))
}

impl From<HostError> for ApiError {
    fn from(e: HostError) -> Self {
        match e {
            HostError::Invalid(m) => ApiError::bad_request("plugin_rejected", m),
            HostError::NotFound(m) => ApiError::not_found(m),
            HostError::Runtime(e) => ApiError::bad_request("plugin_rejected", e.to_string()),
            HostError::Store(e) => e.into(),
            HostError::Pull(e) => pull_error(e),
        }
    }
}

/// A failed pull: 4xx for what the operator can fix in the request or the
/// artifact, 502 when the registry cannot be reached or fails.
fn pull_error(e: PullError) -> ApiError {
    let detail = e.to_string();
    let unprocessable = |code| ApiError::Unprocessable {
        code,
        detail: detail.clone(),
    };
    match e {
        PullError::InvalidReference(_) => ApiError::invalid("reference", detail),
        PullError::Unknown { .. } => unprocessable("oci_reference_unknown"),
        PullError::Denied { .. } => unprocessable("oci_registry_denied"),
        PullError::NotAPlugin(_) => unprocessable("oci_not_a_plugin"),
        PullError::DigestMismatch { .. } => unprocessable("oci_digest_mismatch"),
        PullError::TooLarge { .. } => unprocessable("oci_artifact_too_large"),
        PullError::Unreachable { .. } => ApiError::BadGateway {
            code: "oci_registry_unreachable",
            detail,
        },
        PullError::Registry(_) => ApiError::BadGateway {
            code: "oci_registry_failed",
            detail,
        },
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VersionView {
    pub digest: String,
    pub version: String,
    pub wit_version: String,
    /// upload, builtin, or the OCI reference it came from.
    pub source: String,
    pub loaded_at: String,
    #[schema(value_type = Object)]
    pub description: serde_json::Value,
}

impl From<VersionInfo> for VersionView {
    fn from(v: VersionInfo) -> Self {
        VersionView {
            digest: v.digest,
            version: v.version,
            wit_version: v.wit_version,
            source: v.source,
            loaded_at: time::to_rfc3339(v.loaded_at),
            description: serde_json::from_str(&v.description).unwrap_or_default(),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginView {
    pub name: String,
    /// The digest serving on this host.
    pub active_digest: String,
    pub active_version: String,
    pub previous_digest: Option<String>,
    pub generation: i64,
    pub versions: Vec<VersionView>,
}

async fn view(host: &PluginHost, name: &str) -> Result<PluginView, ApiError> {
    let active = db::active(host.app().db())
        .await?
        .into_iter()
        .find(|a| a.name == name)
        .ok_or_else(|| ApiError::not_found(format!("plugin {name} does not exist")))?;
    let versions: Vec<VersionView> = db::versions(host.app().db(), name)
        .await?
        .into_iter()
        .map(VersionView::from)
        .collect();
    let active_version = versions
        .iter()
        .find(|v| v.digest == active.active_digest)
        .map(|v| v.version.clone())
        .unwrap_or_default();
    Ok(PluginView {
        name: active.name,
        active_digest: active.active_digest,
        active_version,
        previous_digest: active.previous_digest,
        generation: active.generation,
        versions,
    })
}

fn is_json(req: &Request) -> bool {
    req.headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(plateau_contract::is_json_content_type)
}

fn actor(session: &AdminSession) -> Actor {
    Actor::admin(session.ip.clone())
}

/// Every plugin, its active version and its stored versions.
#[utoipa::path(get, path = "/admin/plugins", tag = "admin",
    security(("adminSession" = [])),
    responses((status = 200, description = "plugins", body = Page<PluginView>)))]
pub async fn list(
    Extension(host): Extension<Arc<PluginHost>>,
    _session: AdminSession,
) -> Result<Json<Page<PluginView>>, ApiError> {
    let mut items = Vec::new();
    for active in db::active(host.app().db()).await? {
        items.push(view(&host, &active.name).await?);
    }
    Ok(Json(Page {
        total: items.len() as i64,
        items,
        next_cursor: None,
    }))
}

#[derive(Deserialize, utoipa::IntoParams)]
pub struct UploadQuery {
    /// Also make the new version serve (default false).
    pub activate: Option<bool>,
}

/// A plugin artifact to pull from an OCI registry.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoadReference {
    /// `registry/repository:tag` or `registry/repository@sha256:...`
    /// (an `oci://` prefix is allowed). A digest pins the manifest.
    pub reference: String,
    /// Also make the new version serve (default: the `activate` query
    /// parameter, else false).
    pub activate: Option<bool>,
    /// The registry's user name (default `plateau`, with a password).
    pub username: Option<String>,
    /// The registry's password or token; used for this pull, never stored.
    pub password: Option<String>,
    /// Allow plain HTTP to this registry (default false: HTTPS only).
    #[serde(default)]
    pub insecure: bool,
}

/// Load a version of plugin `name`, from a component (`application/wasm`
/// body) or from a Wasm OCI artifact in a registry (`application/json`
/// body naming its reference). Either way it must compile, import only
/// granted capabilities of a supported WIT version, and describe itself
/// as `name`.
#[utoipa::path(post, path = "/admin/plugins/{name}/versions", tag = "admin",
    security(("adminSession" = [])),
    params(("name" = String, Path, description = "plugin name"), UploadQuery),
    request_body(content(
        (Vec<u8> = "application/wasm"),
        (LoadReference = "application/json"),
    )),
    responses((status = 201, description = "the stored version", body = VersionView),
              (status = 400, description = "the component was refused; the problem says why", body = plateau_api::error::Problem),
              (status = 422, description = "the reference could not be pulled as a plugin: unknown, denied, not a Wasm artifact, or a digest mismatch", body = plateau_api::error::Problem),
              (status = 502, description = "the registry could not be reached or failed", body = plateau_api::error::Problem)))]
pub async fn upload(
    Extension(host): Extension<Arc<PluginHost>>,
    session: AdminSession,
    Path(name): Path<String>,
    Query(q): Query<UploadQuery>,
    req: Request,
) -> Result<(StatusCode, Json<VersionView>), ApiError> {
    if is_json(&req) {
        let body = plateau_api::json::read_body(req.into_body(), MAX_REFERENCE_BODY).await?;
        let input: LoadReference = plateau_api::json::parse(&body)?;
        let source = OciSource {
            reference: input.reference,
            username: input.username,
            password: input.password,
            insecure: input.insecure,
        };
        let activate = input.activate.or(q.activate).unwrap_or(false);
        let info = host
            .load_reference(&name, &source, activate, &actor(&session))
            .await?;
        return Ok((StatusCode::CREATED, Json(info.into())));
    }
    let wasm = axum::body::to_bytes(req.into_body(), MAX_COMPONENT_BYTES)
        .await
        .map_err(|_| {
            ApiError::PayloadTooLarge(format!(
                "a component is at most {MAX_COMPONENT_BYTES} bytes"
            ))
        })?;
    if wasm.is_empty() {
        return Err(ApiError::invalid(
            "body",
            "send the component's bytes (application/wasm)",
        ));
    }
    let info = host
        .load(
            &name,
            &wasm,
            "upload",
            q.activate.unwrap_or(false),
            &actor(&session),
        )
        .await?;
    Ok((StatusCode::CREATED, Json(info.into())))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SwitchTo {
    /// A stored version's digest (`sha256:...`).
    pub digest: String,
}

/// Make a stored version serve. Requests in flight finish on the old one.
#[utoipa::path(post, path = "/admin/plugins/{name}/switch", tag = "admin",
    security(("adminSession" = [])),
    params(("name" = String, Path, description = "plugin name")),
    request_body = SwitchTo,
    responses((status = 200, description = "the plugin after the switch", body = PluginView)))]
pub async fn switch(
    Extension(host): Extension<Arc<PluginHost>>,
    session: AdminSession,
    Path(name): Path<String>,
    Body(input): Body<SwitchTo>,
) -> Result<Json<PluginView>, ApiError> {
    host.switch(&name, &input.digest, &actor(&session)).await?;
    Ok(Json(view(&host, &name).await?))
}

/// Make the previous version serve again.
#[utoipa::path(post, path = "/admin/plugins/{name}/rollback", tag = "admin",
    security(("adminSession" = [])),
    params(("name" = String, Path, description = "plugin name")),
    responses((status = 200, description = "the plugin after the rollback", body = PluginView)))]
pub async fn rollback(
    Extension(host): Extension<Arc<PluginHost>>,
    session: AdminSession,
    Path(name): Path<String>,
) -> Result<Json<PluginView>, ApiError> {
    host.rollback(&name, &actor(&session)).await?;
    Ok(Json(view(&host, &name).await?))
}

/// The platform's own audit events: plugin loads, switches and rollbacks.
#[utoipa::path(get, path = "/admin/events", tag = "admin",
    security(("adminSession" = [])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "platform events, newest first", body = Page<EventView>)))]
pub async fn platform_events(
    State(app): State<AppState>,
    _session: AdminSession,
    pairs: plateau_api::routes::Pairs,
) -> Result<Json<Page<EventView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(
        app.cursors(),
        &page,
        "platform-events",
        PLATFORM_ORG,
        filters,
    )?;
    let listed = events::list(app.db(), PLATFORM_ORG, &Filter::default(), pager.keyset()).await?;
    Ok(Json(pager.finish(
        listed,
        |e| e.id.clone(),
        EventView::from,
    )))
}
