//! Edge filters through the API: `/edge-filters` (the components an
//! organisation may enable: the operator's, from `/admin/edge-filters`,
//! and its own) and `/apps/{id}/filters` (which of them the app runs, in
//! order, each failing open or closed). A change reaches the agent's edge
//! at once: the agent is asked to follow the app, loads what is new and
//! swaps the app's chain whole.

use std::sync::Arc;

use axum::extract::{Path, Request};
use axum::http::StatusCode;
use axum::{Extension, Json};
use plateau_api::auth::{AdminSession, Caller};
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_plugin_host::PluginHost;
use plateau_store::apps::filters::{self as db, FilterRow, MAX_APP_FILTERS};
use plateau_store::events::{self, Actor};
use serde::{Deserialize, Serialize};
use serde_json::json;
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use super::{load, load_live_in};
use crate::Apps;
use crate::filter_stats::FilterStats;
use crate::filters::{FIREWALL, filter_limits};
use crate::pipeline::event;

/// The largest edge-filter component, in bytes.
pub const MAX_FILTER_BYTES: usize = 16 << 20;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EdgeFilterView {
    pub id: String,
    /// As the filter describes itself.
    pub name: String,
    pub version: String,
    /// `sha256:<hex>` of the component.
    pub digest: String,
    /// `operator` (every organisation may enable it) or `organization`.
    pub owner: String,
    /// Whether the edge also calls it on the answer's head.
    pub response_phase: bool,
    pub created_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct EdgeFilterList {
    pub items: Vec<EdgeFilterView>,
}

#[derive(Deserialize, Serialize, ToSchema, Clone)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppFilterSpec {
    /// An edge filter's id, from `GET /edge-filters`.
    pub filter_id: String,
    /// `open` (a failure passes the request on, the default) or `closed`
    /// (a failure answers 503 `filter_failed`).
    pub fail_mode: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AppFilters {
    /// In the order the edge runs them (after the firewall rules), at
    /// most 10.
    pub filters: Vec<AppFilterSpec>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppFilterView {
    pub filter_id: String,
    pub name: String,
    pub version: String,
    pub fail_mode: String,
    pub response_phase: bool,
    /// What it did on the edge since the app's chain was last set (a
    /// change of its filters or firewall rules, or the agent's start);
    /// none when the agent did not answer.
    pub stats: Option<FilterStats>,
}

#[derive(Serialize, ToSchema)]
pub struct AppFiltersView {
    pub filters: Vec<AppFilterView>,
    /// What the app's firewall rules (`/waf/rules`, run before the
    /// filters) did, counted as a filter's; none when it has none enabled
    /// or the agent did not answer.
    pub firewall: Option<FilterStats>,
}

fn view(row: FilterRow) -> EdgeFilterView {
    EdgeFilterView {
        owner: if row.org_id.is_some() {
            "organization"
        } else {
            "operator"
        }
        .to_owned(),
        id: row.id,
        name: row.name,
        version: row.version,
        digest: row.digest,
        response_phase: row.response_phase == 1,
        created_at: time::to_rfc3339(row.created_at),
    }
}

/// The edge filters the organisation may enable: the operator's and its
/// own, oldest first.
#[utoipa::path(get, path = "/edge-filters", tag = "apps",
    security(("bearer" = ["apps:read"])),
    responses((status = 200, description = "the filters", body = EdgeFilterList)))]
pub async fn list(
    Extension(apps): Extension<Apps>,
    caller: Caller,
) -> Result<Json<EdgeFilterList>, ApiError> {
    let rows = db::visible(apps.db(), Some(&caller.org_id)).await?;
    Ok(Json(EdgeFilterList {
        items: rows.into_iter().map(view).collect(),
    }))
}

/// Upload one of the organisation's own edge filters: a component of
/// `plateau:edge-filter/edge@0.1.0` (`application/wasm` body). It must
/// load and describe itself; only the organisation's apps may run it.
#[utoipa::path(post, path = "/edge-filters", tag = "apps",
    security(("bearer" = ["apps:write"])),
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "the component's bytes (`application/wasm`), whatever the content type says"),
    responses((status = 201, description = "the stored filter", body = EdgeFilterView),
              (status = 400, description = "not an edge filter; the problem says why", body = plateau_api::error::Problem),
              (status = 413, description = "a component over 16 MiB", body = plateau_api::error::Problem)))]
pub async fn upload(
    Extension(apps): Extension<Apps>,
    Extension(host): Extension<Arc<PluginHost>>,
    caller: Caller,
    req: Request,
) -> Result<(StatusCode, Json<EdgeFilterView>), ApiError> {
    let org = caller.org_id.clone();
    store(&apps, &host, Some(org), req, &caller.actor()).await
}

/// Upload an edge filter every organisation may enable (the operator's).
#[utoipa::path(post, path = "/admin/edge-filters", tag = "admin",
    security(("adminSession" = [])),
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "the component's bytes (`application/wasm`), whatever the content type says"),
    responses((status = 201, description = "the stored filter", body = EdgeFilterView),
              (status = 400, description = "not an edge filter; the problem says why", body = plateau_api::error::Problem),
              (status = 413, description = "a component over 16 MiB", body = plateau_api::error::Problem)))]
pub async fn admin_upload(
    Extension(apps): Extension<Apps>,
    Extension(host): Extension<Arc<PluginHost>>,
    session: AdminSession,
    req: Request,
) -> Result<(StatusCode, Json<EdgeFilterView>), ApiError> {
    store(&apps, &host, None, req, &Actor::admin(session.ip.clone())).await
}

async fn store(
    apps: &Apps,
    host: &PluginHost,
    org_id: Option<String>,
    req: Request,
    actor: &Actor,
) -> Result<(StatusCode, Json<EdgeFilterView>), ApiError> {
    let wasm = axum::body::to_bytes(req.into_body(), MAX_FILTER_BYTES)
        .await
        .map_err(|_| {
            ApiError::PayloadTooLarge(format!("a component is at most {MAX_FILTER_BYTES} bytes"))
        })?;
    if wasm.is_empty() {
        return Err(ApiError::invalid(
            "body",
            "send the component's bytes (application/wasm)",
        ));
    }
    let filter = host
        .runtime()
        .load_edge_filter(&wasm, filter_limits())
        .await
        .map_err(|e| ApiError::invalid("body", e.to_string()))?;
    let now = time::now_ms();
    let row = FilterRow {
        id: new_id("efl"),
        org_id: org_id.clone(),
        name: filter.info().name.clone(),
        version: filter.info().version.clone(),
        digest: format!("sha256:{}", hex::encode(Sha256::digest(&wasm))),
        response_phase: i64::from(filter.info().response_phase),
        created_at: now,
    };
    let mut tx = apps.db().begin().await?;
    db::insert(&mut tx, &row, &wasm).await?;
    if let Some(org) = &org_id {
        let e = events::NewEvent::audited(org, "edge_filter.created", "settings", "create", actor)
            .resource("edge_filter", &row.id)
            .data(json!({ "name": row.name, "version": row.version }));
        events::record(&mut tx, &e, now).await?;
    }
    tx.commit_last().await?;
    Ok((StatusCode::CREATED, Json(view(row))))
}

/// The filters the app runs, in order.
#[utoipa::path(get, path = "/apps/{id}/filters", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "the app's filters", body = AppFiltersView)))]
pub async fn get(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<AppFiltersView>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let rows = db::of_app(apps.db(), &app.id).await?;
    let counted = match apps.agent() {
        Some(agent) => agent.filter_stats(&app.id).await.unwrap_or_else(|e| {
            tracing::info!(app = %app.id, error = %e, "filters: no counters from the agent");
            None
        }),
        None => None,
    };
    // A filter the chain does not list yet has done nothing there.
    let stats_of = |id: &str| {
        counted.as_ref().map(|all| {
            all.iter()
                .find(|c| c.id == id)
                .map(|c| c.stats.clone())
                .unwrap_or_default()
        })
    };
    let firewall = counted
        .as_ref()
        .and_then(|all| all.iter().find(|c| c.id == FIREWALL))
        .map(|c| c.stats.clone());
    Ok(Json(AppFiltersView {
        filters: rows
            .into_iter()
            .map(|r| AppFilterView {
                stats: stats_of(&r.filter_id),
                filter_id: r.filter_id,
                name: r.name,
                version: r.version,
                fail_mode: r.fail_mode,
                response_phase: r.response_phase == 1,
            })
            .collect(),
        firewall,
    }))
}

/// Set the filters the app runs, in order, replacing the list; the edge
/// swaps to them at once, without failing a request.
#[utoipa::path(put, path = "/apps/{id}/filters", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = AppFilters,
    responses((status = 200, description = "the app's filters", body = AppFiltersView),
              (status = 400, description = "an unknown filter or fail mode; the problem names the field", body = plateau_api::error::Problem)))]
pub async fn put(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<AppFilters>,
) -> Result<Json<AppFiltersView>, ApiError> {
    if input.filters.len() > MAX_APP_FILTERS {
        return Err(ApiError::invalid(
            "filters",
            format!("an app runs at most {MAX_APP_FILTERS} filters"),
        ));
    }
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    let mut chosen = Vec::with_capacity(input.filters.len());
    for (i, spec) in input.filters.iter().enumerate() {
        let fail_mode = spec.fail_mode.clone().unwrap_or_else(|| "open".to_owned());
        if fail_mode != "open" && fail_mode != "closed" {
            return Err(ApiError::invalid(
                format!("filters[{i}].failMode"),
                "must be open or closed",
            ));
        }
        if chosen
            .iter()
            .any(|(f, _): &(String, String)| *f == spec.filter_id)
        {
            return Err(ApiError::invalid(
                format!("filters[{i}].filterId"),
                "a filter is listed once",
            ));
        }
        let Some(row) = db::get_visible_in(&mut tx, &app.org_id, &spec.filter_id).await? else {
            return Err(ApiError::invalid(
                format!("filters[{i}].filterId"),
                format!(
                    "no edge filter {} is available to this organisation",
                    spec.filter_id
                ),
            ));
        };
        chosen.push((row.id, fail_mode));
    }
    db::set_of_app(&mut tx, &app.id, &chosen, now).await?;
    let e = event(&app, "app.filters.updated", "update", &caller.actor())
        .data(json!({ "filters": input.filters }));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    apps.follow_on_agent(&app.id).await;
    get(Extension(apps), caller, Path(id)).await
}
