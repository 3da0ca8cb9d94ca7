//! `/apps/{id}/cdn` and `/apps/{id}/cdn/purge`: the app's edge CDN (a
//! shared HTTP cache of its GET and HEAD answers, `plateau_edge::cdn`),
//! switched on and off, its counters, and purges by path prefix. The
//! database records the switch and each purge; the agent follows them at
//! once when it answers, else when it next follows the app.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::{Extension, Json};
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_core::time;
use plateau_store::apps::cdn as db;
use plateau_store::events;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{load, load_live_in};
use crate::Apps;
use crate::cdn::CdnStats;
use crate::pipeline::event;

/// The longest path prefix a purge takes.
const MAX_PREFIX: usize = 1024;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CdnSwitch {
    /// Whether the edge caches the app's GET and HEAD answers.
    pub enabled: bool,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CdnView {
    pub enabled: bool,
    /// What the CDN did since the agent started; none when the agent did
    /// not answer.
    pub stats: Option<CdnStats>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PurgeRequest {
    /// The responses to drop: those whose path (as the app sees it, after
    /// rewrites) starts with it; `/` drops them all (the default).
    pub prefix: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PurgeView {
    pub prefix: String,
    /// The purge's number among the app's purges.
    pub seq: i64,
}

/// The app's CDN: on or off, and its counters.
#[utoipa::path(get, path = "/apps/{id}/cdn", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "the CDN", body = CdnView)))]
pub async fn get(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<CdnView>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let row = db::get(apps.db(), &app.id).await?;
    let stats = match apps.agent() {
        Some(agent) => agent.cdn_stats(&app.id).await.unwrap_or_else(|e| {
            tracing::info!(app = %app.id, error = %e, "cdn: no counters from the agent");
            None
        }),
        None => None,
    };
    Ok(Json(CdnView {
        enabled: row.enabled == 1,
        stats,
    }))
}

/// Turn the app's CDN on or off; off drops what it stored.
#[utoipa::path(put, path = "/apps/{id}/cdn", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = CdnSwitch,
    responses((status = 200, description = "the CDN", body = CdnView)))]
pub async fn put(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<CdnSwitch>,
) -> Result<Json<CdnView>, ApiError> {
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    db::set_enabled(&mut tx, &app.id, input.enabled, now).await?;
    let e = event(&app, "app.cdn.updated", "update", &caller.actor())
        .data(json!({ "enabled": input.enabled }));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    apps.follow_on_agent(&app.id).await;
    get(Extension(apps), caller, Path(id)).await
}

/// Drop the app's cached responses under a path prefix, on every host.
#[utoipa::path(post, path = "/apps/{id}/cdn/purge", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = PurgeRequest,
    responses((status = 202, description = "the purge, recorded and sent to the edge", body = PurgeView),
              (status = 400, description = "a prefix that is no path", body = plateau_api::error::Problem)))]
pub async fn purge(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<PurgeRequest>,
) -> Result<(StatusCode, Json<PurgeView>), ApiError> {
    let prefix = input.prefix.unwrap_or_else(|| "/".to_owned());
    check_prefix(&prefix)?;
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    let seq = db::add_purge(&mut tx, &app.id, &prefix, now).await?;
    let e = event(&app, "app.cdn.purged", "update", &caller.actor())
        .data(json!({ "prefix": prefix, "seq": seq }));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    apps.follow_on_agent(&app.id).await;
    Ok((StatusCode::ACCEPTED, Json(PurgeView { prefix, seq })))
}

/// A prefix is an absolute path: it starts with `/` and holds visible
/// ASCII only (what a request target holds).
fn check_prefix(prefix: &str) -> Result<(), ApiError> {
    if !prefix.starts_with('/') {
        return Err(ApiError::invalid("prefix", "must start with /"));
    }
    if prefix.len() > MAX_PREFIX {
        return Err(ApiError::invalid(
            "prefix",
            format!("must be at most {MAX_PREFIX} bytes"),
        ));
    }
    if let Some(at) = prefix.bytes().position(|b| !b.is_ascii_graphic()) {
        return Err(ApiError::invalid(
            "prefix",
            format!(
                "column {}: a path holds visible ASCII only (percent-encode the rest)",
                at + 1
            ),
        ));
    }
    Ok(())
}
