//! The clusters themselves: list, create (under the plan's ceiling), read,
//! change settings or rotate the password, delete. Each records what the
//! user asked for and answers at once; the host's reconciler
//! (`crate::reconciler`) makes it so.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::{Body, Validator};
use plateau_api::pagination::{Page, Pager};
use plateau_api::routes::{Pairs, page_and_filters};
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_kernel::Status;
use plateau_store::caches::{self as db, Cache};
use plateau_store::events::{self, NewEvent};
use plateau_store::managed::{self, Table};
use plateau_store::plans;
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use super::{CacheView, Service, find};
use crate::service::{CacheService, Which};
use crate::spec::{EvictionPolicy, Persistence};

/// The smallest `memoryMb`: Redis needs about a megabyte for itself.
pub const MIN_MEMORY_MB: i64 = 8;

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateCache {
    /// Unique within the organisation, 1 to 100 characters.
    pub name: String,
    /// `maxmemory` in MiB; 64 by default, at most the plan's ceiling.
    #[schema(minimum = 8)]
    pub memory_mb: Option<i64>,
    /// noeviction (default), allkeys-lru, allkeys-lfu, allkeys-random or volatile-lru.
    #[schema(value_type = Option<crate::spec::EvictionPolicy>)]
    pub eviction_policy: Option<String>,
    /// Replicas of the leader; 1 by default, at most the plan's ceiling.
    #[schema(minimum = 0)]
    pub replicas: Option<i64>,
    /// none (default), rdb or aof.
    #[schema(value_type = Option<crate::spec::Persistence>)]
    pub persistence: Option<String>,
    /// TLS on every connection; on by default.
    pub tls: Option<bool>,
}

/// Checked settings of a new or changed cluster.
pub struct Settings {
    pub memory_mb: i64,
    pub eviction_policy: EvictionPolicy,
    pub replicas: i64,
    pub persistence: Persistence,
    pub tls: bool,
}

/// Checks `memoryMb`, `evictionPolicy`, `replicas` and `persistence`
/// against their grammar and the plan's ceilings.
pub async fn check_settings(
    app: &AppState,
    caller: &Caller,
    memory_mb: i64,
    eviction_policy: &str,
    replicas: i64,
    persistence: &str,
) -> Result<(EvictionPolicy, Persistence), ApiError> {
    let limits = db::plan_limits(app.db(), &caller.plan)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("no cache limits for plan {}", caller.plan)))?;
    let policy = eviction_policy.parse::<EvictionPolicy>();
    let mode = persistence.parse::<Persistence>();
    let mut v = Validator::new();
    v.check(
        memory_mb >= MIN_MEMORY_MB,
        "memoryMb",
        format!("must be at least {MIN_MEMORY_MB}"),
    )
    .check(replicas >= 0, "replicas", "must be at least 0");
    if let Err(m) = &policy {
        v.check(false, "evictionPolicy", m.clone());
    }
    if let Err(m) = &mode {
        v.check(false, "persistence", m.clone());
    }
    v.finish()?;
    // Within the grammar, a setting past the plan's ceiling is a plan
    // limit (409), as the number of caches is.
    if memory_mb > limits.max_memory_mb || replicas > limits.max_replicas {
        return Err(ApiError::conflict(
            "plan_limit_reached",
            format!(
                "the {} plan allows at most {} MB and {} replicas per cache; lower the setting or move to a larger plan",
                caller.plan, limits.max_memory_mb, limits.max_replicas
            ),
        ));
    }
    Ok((policy.expect("checked"), mode.expect("checked")))
}

/// Refuses a new cluster beyond the plan's cache instances.
pub fn over_plan(caller: &Caller, limit: i64) -> ApiError {
    ApiError::conflict(
        "plan_limit_reached",
        format!(
            "the {} plan allows {limit} cache instance{}; delete one or move to a larger plan",
            caller.plan,
            if limit == 1 { "" } else { "s" }
        ),
    )
}

/// Records a new cluster in `creating` (the plan's ceiling is checked
/// again in the transaction that adds it); the host's reconciler creates
/// it, from the snapshot `seed` when given.
pub async fn provision(
    app: &AppState,
    service: &CacheService,
    caller: &Caller,
    name: &str,
    settings: Settings,
    seed: Option<String>,
) -> Result<CacheView, ApiError> {
    plateau_api::cost::check_new_resource(app.db(), caller, None, "creating a cache").await?;
    let limit = plans::get(app.db(), &caller.plan)
        .await?
        .map(|p| p.cache_instances)
        .unwrap_or(0);
    if db::count(app.db(), &caller.org_id).await? >= limit {
        return Err(over_plan(caller, limit));
    }
    let id = new_id("cch");
    let password = CacheService::generate_password();
    let admin_password = CacheService::generate_password();
    let now = time::now_ms();
    let cache = Cache {
        id: id.clone(),
        org_id: caller.org_id.clone(),
        name: name.trim().to_owned(),
        status: Status::Creating.as_str().to_owned(),
        status_detail: None,
        generation: 1,
        memory_mb: settings.memory_mb,
        eviction_policy: settings.eviction_policy.as_str().to_owned(),
        replicas: settings.replicas,
        persistence: settings.persistence.as_str().to_owned(),
        tls: i64::from(settings.tls),
        host_id: service.host_id().to_owned(),
        placement: String::new(),
        password_sealed: service.seal(&caller.org_id, &id, Which::Customer, &password)?,
        admin_password_sealed: service.seal(&caller.org_id, &id, Which::Admin, &admin_password)?,
        password_rotated_at: now,
        source_snapshot_id: seed.clone(),
        created_at: now,
        updated_at: now,
    };
    let kind = if seed.is_some() {
        "cache.restored"
    } else {
        "cache.created"
    };
    let event = NewEvent::audited(&caller.org_id, kind, "resources", "create", &caller.actor())
        .resource("cache", &id)
        .data(json!({
            "name": cache.name,
            "memoryMb": cache.memory_mb,
            "evictionPolicy": cache.eviction_policy,
            "replicas": cache.replicas,
            "persistence": cache.persistence,
            "tls": settings.tls,
            "snapshotId": seed,
        }));
    let mut tx = app.db().begin().await?;
    if db::count_for_update(&mut tx, &caller.org_id).await? >= limit {
        return Err(over_plan(caller, limit));
    }
    if let Err(e) = db::insert(&mut tx, &cache, &event, now).await {
        return Err(if e.is_unique_violation() {
            ApiError::conflict(
                "name_taken",
                format!(
                    "a cache named {:?} already exists; choose another name",
                    cache.name
                ),
            )
        } else {
            e.into()
        });
    }
    tx.commit_last().await?;
    cache.try_into()
}

/// List the organisation's caches, oldest first.
#[utoipa::path(get, path = "/caches", tag = "caches",
    security(("bearer" = ["cache:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "caches", body = Page<CacheView>)))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<CacheView>>, ApiError> {
    let (page, filters) = page_and_filters(&pairs);
    let pager = Pager::new(app.cursors(), &page, "caches", &caller.org_id, filters)?;
    let listed = db::list(app.db(), &caller.org_id, pager.keyset()).await?;
    let page = pager.finish(listed, |c| c.id.clone(), CacheView::try_from);
    Ok(Json(Page {
        items: page.items.into_iter().collect::<Result<_, _>>()?,
        next_cursor: page.next_cursor,
        total: page.total,
    }))
}

/// Create a cache: a Redis 7 leader, its replicas and three sentinels.
/// The answer comes before the cluster runs: the cache is `creating` until
/// the host has brought it up, then `running` (or `failed`, with the
/// reason in `statusDetail`); poll `GET /caches/{id}` until it runs. A
/// cache with replicas also gets a stable endpoint, the `uri` of its
/// connection, that always leads to the current leader; its leader takes
/// writes only while a replica keeps up (within 2 s), which bounds what a
/// failover can lose (see the connection's description, and
/// `WAIT <replicas>`).
#[utoipa::path(post, path = "/caches", tag = "caches",
    security(("bearer" = ["cache:write"])),
    request_body = CreateCache,
    responses((status = 201, description = "the new cache, `creating`", body = CacheView),
              (status = 409, description = "the name is taken, or the plan's cache instances are all used", body = plateau_api::error::Problem)))]
pub async fn create(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Body(input): Body<CreateCache>,
) -> Result<(StatusCode, Json<CacheView>), ApiError> {
    Validator::new().name("name", &input.name).finish()?;
    let memory_mb = input.memory_mb.unwrap_or(64);
    let replicas = input.replicas.unwrap_or(1);
    let (eviction_policy, persistence) = check_settings(
        &app,
        &caller,
        memory_mb,
        input.eviction_policy.as_deref().unwrap_or("noeviction"),
        replicas,
        input.persistence.as_deref().unwrap_or("none"),
    )
    .await?;
    let settings = Settings {
        memory_mb,
        eviction_policy,
        replicas,
        persistence,
        tls: input.tls.unwrap_or(true),
    };
    let view = provision(&app, &service, &caller, &input.name, settings, None).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// One cache.
#[utoipa::path(get, path = "/caches/{id}", tag = "caches",
    security(("bearer" = ["cache:read"])),
    params(("id" = String, Path, description = "cache id")),
    responses((status = 200, description = "the cache", body = CacheView)))]
pub async fn get(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<CacheView>, ApiError> {
    Ok(Json(find(&app, &caller, &id).await?.try_into()?))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UpdateCache {
    #[schema(minimum = 8)]
    pub memory_mb: Option<i64>,
    #[schema(value_type = Option<crate::spec::EvictionPolicy>)]
    pub eviction_policy: Option<String>,
    #[schema(minimum = 0)]
    pub replicas: Option<i64>,
    #[schema(value_type = Option<crate::spec::Persistence>)]
    pub persistence: Option<String>,
    /// A new password for the cache's user; the old one stops working.
    #[serde(default)]
    pub rotate_password: bool,
}

/// Change a cache's settings, or rotate its password. The answer comes
/// before the change is made: the cache is `updating` until the host has
/// applied it (memory, eviction and persistence at once; replicas added or
/// removed; the new password everywhere), then `running`.
#[utoipa::path(patch, path = "/caches/{id}", tag = "caches",
    security(("bearer" = ["cache:write"])),
    params(("id" = String, Path, description = "cache id")),
    request_body = UpdateCache,
    responses((status = 200, description = "the cache, `updating` if anything changed", body = CacheView),
              (status = 409, description = "the cache is being deleted", body = plateau_api::error::Problem)))]
pub async fn update(
    State(app): State<AppState>,
    service: Service,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<UpdateCache>,
) -> Result<Json<CacheView>, ApiError> {
    let cache = find(&app, &caller, &id).await?;
    super::refuse_deleting(&cache)?;
    let memory_mb = input.memory_mb.unwrap_or(cache.memory_mb);
    let replicas = input.replicas.unwrap_or(cache.replicas);
    let policy = input
        .eviction_policy
        .as_deref()
        .unwrap_or(&cache.eviction_policy);
    let persistence = input.persistence.as_deref().unwrap_or(&cache.persistence);
    let (eviction_policy, persistence) =
        check_settings(&app, &caller, memory_mb, policy, replicas, persistence).await?;
    let changed = memory_mb != cache.memory_mb
        || replicas != cache.replicas
        || eviction_policy.as_str() != cache.eviction_policy
        || persistence.as_str() != cache.persistence;
    let sealed = if input.rotate_password {
        let password = CacheService::generate_password();
        Some(service.seal(&caller.org_id, &id, Which::Customer, &password)?)
    } else {
        None
    };
    let now = time::now_ms();
    let mut tx = app.db().begin().await?;
    if changed {
        let settings = db::Settings {
            memory_mb,
            eviction_policy: eviction_policy.as_str().to_owned(),
            replicas,
            persistence: persistence.as_str().to_owned(),
        };
        let event = NewEvent::audited(
            &caller.org_id,
            "cache.updated",
            "resources",
            "update",
            &caller.actor(),
        )
        .resource("cache", &id)
        .data(json!({
            "memoryMb": memory_mb,
            "evictionPolicy": eviction_policy.as_str(),
            "replicas": replicas,
            "persistence": persistence.as_str(),
        }));
        db::update_settings(&mut tx, &caller.org_id, &id, &settings, &event, now).await?;
    }
    if let Some(sealed) = &sealed {
        let event = NewEvent::audited(
            &caller.org_id,
            "cache.password_rotated",
            "resources",
            "rotate",
            &caller.actor(),
        )
        .resource("cache", &id);
        db::set_password(&mut tx, &caller.org_id, &id, sealed, &event, now).await?;
    }
    if changed || sealed.is_some() {
        let status = Status::Updating.as_str();
        managed::request(&mut tx, Table::Caches, &caller.org_id, &id, status, now).await?;
    }
    let changed_cache = db::get_for_update(&mut tx, &caller.org_id, &id)
        .await?
        .ok_or_else(|| super::not_found(&id))?;
    tx.commit_last().await?;
    Ok(Json(changed_cache.try_into()?))
}

/// Delete a cache: its processes stop and its data is removed. The answer
/// comes first, with the cache `deleting`; it is gone (404) once the host
/// has removed it. Its snapshots are kept for the retention period (7 days
/// unless the host says otherwise; `expiresAt` in `GET /caches/snapshots`),
/// counted against the organisation's storage, and can be restored into
/// another cache.
#[utoipa::path(delete, path = "/caches/{id}", tag = "caches",
    security(("bearer" = ["cache:write"])),
    params(("id" = String, Path, description = "cache id")),
    responses((status = 202, description = "the cache, `deleting`", body = CacheView)))]
pub async fn delete(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<CacheView>), ApiError> {
    let cache = find(&app, &caller, &id).await?;
    let now = time::now_ms();
    let event = NewEvent::audited(
        &caller.org_id,
        "cache.deleted",
        "resources",
        "delete",
        &caller.actor(),
    )
    .resource("cache", &id)
    .data(json!({ "name": cache.name }));
    let mut tx = app.db().begin().await?;
    let status = Status::Deleting.as_str();
    managed::request(&mut tx, Table::Caches, &caller.org_id, &id, status, now).await?;
    events::record(&mut tx, &event, now).await?;
    let deleting = db::get_for_update(&mut tx, &caller.org_id, &id)
        .await?
        .ok_or_else(|| super::not_found(&id))?;
    tx.commit_last().await?;
    Ok((StatusCode::ACCEPTED, Json(deleting.try_into()?)))
}
