//! The organisation's cache snapshots, which outlive their caches (kept
//! for the retention period after a cache is deleted, see
//! [`crate::snapshots`]): list them, delete one, restore one into a new
//! cache or into an existing cache, replacing its keys.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::{Body, Validator};
use plateau_api::pagination::{Page, Pager};
use plateau_api::routes::{Pairs, page_and_filters};
use plateau_core::time;
use plateau_store::cache_snapshots as kept;
use plateau_store::caches::{self as db, Snapshot};
use plateau_store::events::NewEvent;
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use super::caches::{Settings, check_settings, provision};
use super::ops::SnapshotView;
use super::{CacheView, Service, find};
use crate::service::CacheService;
use crate::snapshots::SourceSettings;

fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("snapshot {id} does not exist"))
}

/// The caller's snapshot `id`, whatever became of its cache; another
/// organisation's answers 404.
async fn find_snapshot(app: &AppState, caller: &Caller, id: &str) -> Result<Snapshot, ApiError> {
    kept::get(app.db(), &caller.org_id, id)
        .await?
        .ok_or_else(|| not_found(id))
}

/// List the organisation's snapshots, of live and of deleted caches (those
/// with an `expiresAt`), oldest first.
#[utoipa::path(get, path = "/caches/snapshots", tag = "caches",
    security(("bearer" = ["cache:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "snapshots", body = Page<SnapshotView>)))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<SnapshotView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(
        app.cursors(),
        &page,
        "cache_snapshots_org",
        &caller.org_id,
        filters,
    )?;
    let listed = kept::list(app.db(), &caller.org_id, None, pager.keyset()).await?;
    Ok(Json(pager.finish(
        listed,
        |s| s.id.clone(),
        SnapshotView::from,
    )))
}

/// Delete a snapshot now (of a live or a deleted cache); its bytes leave
/// the organisation's storage.
#[utoipa::path(delete, path = "/caches/snapshots/{snapshotId}", tag = "caches",
    security(("bearer" = ["cache:write"])),
    params(("snapshotId" = String, Path, description = "snapshot id")),
    responses((status = 200, description = "the deleted snapshot", body = SnapshotView)))]
pub async fn delete(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(snapshot_id): Path<String>,
) -> Result<Json<SnapshotView>, ApiError> {
    let snapshot = find_snapshot(&app, &caller, &snapshot_id).await?;
    let now = time::now_ms();
    let event = NewEvent::audited(
        &caller.org_id,
        "cache.snapshot_deleted",
        "resources",
        "delete",
        &caller.actor(),
    )
    .resource("cache", &snapshot.cache_id)
    .data(json!({ "snapshotId": snapshot_id }));
    let mut tx = app.db().begin().await?;
    let removed = kept::remove(&mut tx, &caller.org_id, &snapshot_id, Some(&event), now).await?;
    tx.commit_last().await?;
    let removed = removed.ok_or_else(|| not_found(&snapshot_id))?;
    service.snapshots().delete(&removed.object_key).await?;
    Ok(Json(snapshot.into()))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RestoreSnapshot {
    /// The new cache's name, unique within the organisation.
    pub name: String,
    /// Settings of the new cache; each defaults to the source cache's.
    #[schema(minimum = 8)]
    pub memory_mb: Option<i64>,
    #[schema(value_type = Option<crate::spec::EvictionPolicy>)]
    pub eviction_policy: Option<String>,
    #[schema(minimum = 0)]
    pub replicas: Option<i64>,
    #[schema(value_type = Option<crate::spec::Persistence>)]
    pub persistence: Option<String>,
    pub tls: Option<bool>,
}

/// Makes a new cache from `snapshot`: settings from `input`, else the
/// source cache's as the snapshot recorded them (or as the cache is, for a
/// snapshot taken before they were recorded), else the defaults.
async fn restore_new(
    app: &AppState,
    service: &CacheService,
    caller: &Caller,
    snapshot: Snapshot,
    input: RestoreSnapshot,
) -> Result<CacheView, ApiError> {
    Validator::new().name("name", &input.name).finish()?;
    let mut source = SourceSettings::from_json(&snapshot.settings);
    if source.memory_mb.is_none()
        && let Some(cache) = db::get(app.db(), &caller.org_id, &snapshot.cache_id).await?
    {
        source = SourceSettings::of(&cache);
    }
    let memory_mb = input.memory_mb.or(source.memory_mb).unwrap_or(64);
    let replicas = input.replicas.or(source.replicas).unwrap_or(1);
    let policy = input.eviction_policy.or(source.eviction_policy);
    let persistence = input.persistence.or(source.persistence);
    let (eviction_policy, persistence) = check_settings(
        app,
        caller,
        memory_mb,
        policy.as_deref().unwrap_or("noeviction"),
        replicas,
        persistence.as_deref().unwrap_or("none"),
    )
    .await?;
    let settings = Settings {
        memory_mb,
        eviction_policy,
        replicas,
        persistence,
        tls: input.tls.or(source.tls).unwrap_or(true),
    };
    provision(
        app,
        service,
        caller,
        &input.name,
        settings,
        Some(snapshot.id),
    )
    .await
}

/// Restore a snapshot into a new cache (the source cache, if it still
/// exists, is untouched); counts against the plan's cache instances. The
/// answer comes before the new cache runs: it is `creating` until the host
/// has brought it up with the snapshot's data.
#[utoipa::path(post, path = "/caches/{id}/snapshots/{snapshotId}/restore", tag = "caches",
    security(("bearer" = ["cache:write"])),
    params(("id" = String, Path, description = "the id of the cache the snapshot was taken of (it may be deleted)"),
           ("snapshotId" = String, Path, description = "snapshot id")),
    request_body = RestoreSnapshot,
    responses((status = 201, description = "the new cache, `creating`", body = CacheView),
              (status = 409, description = "the name is taken, or the plan's cache instances are all used", body = plateau_api::error::Problem)))]
pub async fn restore(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path((id, snapshot_id)): Path<(String, String)>,
    Body(input): Body<RestoreSnapshot>,
) -> Result<(StatusCode, Json<CacheView>), ApiError> {
    let snapshot = find_snapshot(&app, &caller, &snapshot_id).await?;
    if snapshot.cache_id != id {
        return Err(ApiError::not_found(format!(
            "snapshot {snapshot_id} of cache {id} does not exist"
        )));
    }
    let view = restore_new(&app, &service, &caller, snapshot, input).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Restore any of the organisation's snapshots (of a live or a deleted
/// cache) into a new cache; counts against the plan's cache instances. The
/// new cache is `creating` until the host has brought it up.
#[utoipa::path(post, path = "/caches/snapshots/{snapshotId}/restore", tag = "caches",
    security(("bearer" = ["cache:write"])),
    params(("snapshotId" = String, Path, description = "snapshot id")),
    request_body = RestoreSnapshot,
    responses((status = 201, description = "the new cache, `creating`", body = CacheView),
              (status = 409, description = "the name is taken, or the plan's cache instances are all used", body = plateau_api::error::Problem)))]
pub async fn restore_any(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(snapshot_id): Path<String>,
    Body(input): Body<RestoreSnapshot>,
) -> Result<(StatusCode, Json<CacheView>), ApiError> {
    let snapshot = find_snapshot(&app, &caller, &snapshot_id).await?;
    let view = restore_new(&app, &service, &caller, snapshot, input).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RestoreInto {
    /// One of the organisation's snapshots, of this cache or another (a
    /// deleted one too).
    pub snapshot_id: String,
}

/// Replace the contents of this cache with a snapshot: every key is
/// removed, then every key of the snapshot written (replicas follow), with
/// its time to live. The cache keeps its settings, address and passwords;
/// clients see the data change while it runs. A snapshot that does not
/// fit in `memoryMb` fails part-way under `noeviction`.
#[utoipa::path(post, path = "/caches/{id}/restore", tag = "caches",
    security(("bearer" = ["cache:write"])),
    params(("id" = String, Path, description = "cache id")),
    request_body = RestoreInto,
    responses((status = 200, description = "the cache, its keys replaced", body = CacheView),
              (status = 400, description = "snapshotId names no snapshot of the organisation", body = plateau_api::error::Problem)))]
pub async fn restore_into(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<RestoreInto>,
) -> Result<Json<CacheView>, ApiError> {
    Validator::new()
        .check(
            !input.snapshot_id.is_empty(),
            "snapshotId",
            "must not be empty",
        )
        .finish()?;
    let cache = find(&app, &caller, &id).await?;
    // A body naming no snapshot of the organisation is bad input (400
    // naming the field), not a missing cache.
    let snapshot = find_snapshot(&app, &caller, &input.snapshot_id)
        .await
        .map_err(|e| match e {
            ApiError::NotFound(_) => ApiError::invalid(
                "snapshotId",
                format!("snapshot {} does not exist", input.snapshot_id),
            ),
            other => other,
        })?;
    let rdb = service.snapshots().get(&snapshot.object_key).await?;
    // Under the cache's lock: the reconciler changes nothing meanwhile.
    let _changes = service.exclusive(&cache.id).await?;
    let cache = find(&app, &caller, &id).await?;
    let placement = CacheService::placement(&cache)?;
    let credentials = service.credentials(&cache)?;
    service
        .provider()
        .restore(&placement, &credentials, rdb)
        .await?;
    let now = time::now_ms();
    let event = NewEvent::audited(
        &caller.org_id,
        "cache.snapshot_restored",
        "resources",
        "update",
        &caller.actor(),
    )
    .resource("cache", &id)
    .data(json!({ "snapshotId": snapshot.id, "sourceCacheId": snapshot.cache_id }));
    let mut tx = app.db().begin().await?;
    plateau_store::events::record(&mut tx, &event, now).await?;
    tx.commit_last().await?;
    Ok(Json(cache.try_into()?))
}
