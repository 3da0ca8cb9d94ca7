//! What a cluster offers besides its settings: snapshots (BGSAVE into the
//! object store), metrics from INFO, and the logs of its processes. The
//! organisation's snapshots and restores are in `snapshots`.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::pagination::{Page, Pager};
use plateau_api::routes::{Pairs, page_and_filters, param};
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_store::caches::{self as db, Snapshot};
use plateau_store::events::NewEvent;
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

use super::{Service, find};
use crate::service::CacheService;
use crate::snapshots::{SnapshotStore, SourceSettings};
use crate::spec::{LogLine, Metrics};

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotView {
    pub id: String,
    /// The cache it was taken of (which may be deleted since).
    pub cache_id: String,
    /// That cache's name when the snapshot was taken.
    pub cache_name: String,
    pub size_bytes: i64,
    pub created_at: String,
    /// When the snapshot is removed: set when its cache is deleted (it is
    /// kept for the retention period, counted against the organisation's
    /// storage), `null` while the cache exists.
    pub expires_at: Option<String>,
}

impl From<Snapshot> for SnapshotView {
    fn from(s: Snapshot) -> Self {
        SnapshotView {
            id: s.id,
            cache_id: s.cache_id,
            cache_name: s.cache_name,
            size_bytes: s.size_bytes,
            created_at: time::to_rfc3339(s.created_at),
            expires_at: s.expires_at.map(time::to_rfc3339),
        }
    }
}

/// List a cache's snapshots, oldest first.
#[utoipa::path(get, path = "/caches/{id}/snapshots", tag = "caches",
    security(("bearer" = ["cache:read"])),
    params(("id" = String, Path, description = "cache id"),
           ("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "snapshots", body = Page<SnapshotView>),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn list_snapshots(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    pairs: Pairs,
) -> Result<Json<Page<SnapshotView>>, ApiError> {
    find(&app, &caller, &id).await?;
    let (page, filters) = page_and_filters(&pairs);
    let filters = format!("cache={id}&{filters}");
    let pager = Pager::new(
        app.cursors(),
        &page,
        "cache_snapshots",
        &caller.org_id,
        filters,
    )?;
    let listed =
        plateau_store::cache_snapshots::list(app.db(), &caller.org_id, Some(&id), pager.keyset())
            .await?;
    Ok(Json(pager.finish(
        listed,
        |s| s.id.clone(),
        SnapshotView::from,
    )))
}

/// Take a snapshot: the leader writes an RDB (BGSAVE), kept in the object
/// store.
#[utoipa::path(post, path = "/caches/{id}/snapshots", tag = "caches",
    security(("bearer" = ["cache:write"])),
    params(("id" = String, Path, description = "cache id")),
    responses((status = 201, description = "the snapshot", body = SnapshotView)))]
pub async fn create_snapshot(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<SnapshotView>), ApiError> {
    let cache = find(&app, &caller, &id).await?;
    let placement = CacheService::placement(&cache)?;
    let credentials = service.credentials(&cache)?;
    let rdb = service
        .provider()
        .snapshot(&placement, &credentials)
        .await?;
    let snapshot_id = new_id("csn");
    let key = SnapshotStore::key(&caller.org_id, &id, &snapshot_id);
    let size = rdb.len() as i64;
    service.snapshots().put(&key, rdb).await?;
    let now = time::now_ms();
    let snapshot = Snapshot {
        id: snapshot_id.clone(),
        org_id: caller.org_id.clone(),
        cache_id: id.clone(),
        cache_name: cache.name.clone(),
        settings: SourceSettings::of(&cache).to_json(),
        object_key: key,
        size_bytes: size,
        created_at: now,
        expires_at: None,
    };
    let event = NewEvent::audited(
        &caller.org_id,
        "cache.snapshot_created",
        "resources",
        "create",
        &caller.actor(),
    )
    .resource("cache", &id)
    .data(json!({ "snapshotId": snapshot_id, "sizeBytes": size }));
    let mut tx = app.db().begin().await?;
    db::insert_snapshot(&mut tx, &snapshot, &event, now).await?;
    tx.commit_last().await?;
    Ok((StatusCode::CREATED, Json(snapshot.into())))
}

/// Figures of the current leader, from INFO.
#[utoipa::path(get, path = "/caches/{id}/metrics", tag = "caches",
    security(("bearer" = ["cache:read"])),
    params(("id" = String, Path, description = "cache id")),
    responses((status = 200, description = "metrics", body = Metrics),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn metrics(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Metrics>, ApiError> {
    let cache = find(&app, &caller, &id).await?;
    let placement = CacheService::placement(&cache)?;
    let credentials = service.credentials(&cache)?;
    Ok(Json(
        service.provider().metrics(&placement, &credentials).await?,
    ))
}

#[derive(Serialize, ToSchema)]
pub struct Logs {
    pub items: Vec<LogLine>,
}

/// The last lines of each process's log (`lines`, 1 to 1000, default 100).
#[utoipa::path(get, path = "/caches/{id}/logs", tag = "caches",
    security(("bearer" = ["cache:read"])),
    params(("id" = String, Path, description = "cache id"),
           ("lines" = Option<u32>, Query, minimum = 1, maximum = 1000, description = "lines per process, 1 to 1000; 100 by default")),
    responses((status = 200, description = "log lines, by process", body = Logs),
              (status = 409, description = "not ready: the resource is still being created", body = plateau_api::error::Problem)))]
pub async fn logs(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
    pairs: Pairs,
) -> Result<Json<Logs>, ApiError> {
    let cache = find(&app, &caller, &id).await?;
    let lines = match param(&pairs, "lines") {
        None => 100,
        Some(raw) => raw
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| ApiError::invalid("lines", "must be between 1 and 1000"))?,
    };
    let placement = CacheService::placement(&cache)?;
    Ok(Json(Logs {
        items: service.provider().logs(&placement, lines).await?,
    }))
}
