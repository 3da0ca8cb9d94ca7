//! The services' own operations, called in-process as their endpoints
//! would be (the caller's organisation, plan, role and actor), so a
//! manifest passes the same checks and records the same events as the
//! calls it stands for.

use std::collections::BTreeMap;

use axum::Extension;
use axum::extract::{Path, State};
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_store::apps::App;
use plateau_store::caches::Cache;
use plateau_store::databases::Database;
use serde_json::{Map, Value};

use crate::model::{AppSpec, DatabaseSpec, RedisSpec};
use crate::observe::Services;

pub async fn create_database(
    s: &Services,
    spec: &DatabaseSpec,
    project_id: &str,
) -> Result<Database, ApiError> {
    let input = plateau_databases::api::clusters::CreateDatabase {
        name: spec.name.clone(),
        version: spec.version.clone(),
        replicas: spec.replicas,
        memory_mb: spec.memory_mb,
        cpus: spec.cpus,
        disk_gb: spec.disk_gb,
        project_id: Some(project_id.to_owned()),
    };
    let (_, axum::Json(view)) = plateau_databases::api::clusters::create(
        State(s.state.clone()),
        Extension(s.databases.clone()),
        s.caller.clone(),
        Body(input),
    )
    .await?;
    stored_database(s, &view.id).await
}

async fn stored_database(s: &Services, id: &str) -> Result<Database, ApiError> {
    plateau_store::databases::get(s.state.db(), &s.caller.org_id, id)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("database {id} vanished")))
}

pub async fn set_retention(s: &Services, id: &str, days: Value) -> Result<(), ApiError> {
    let mut body = Map::new();
    body.insert("backupRetentionDays".to_owned(), days);
    let _changed = plateau_databases::api::clusters::update(
        State(s.state.clone()),
        Extension(s.databases.clone()),
        s.caller.clone(),
        Path(id.to_owned()),
        Body(body),
    )
    .await?;
    Ok(())
}

pub async fn create_cache(s: &Services, spec: &RedisSpec) -> Result<Cache, ApiError> {
    let input = plateau_cache::api::caches::CreateCache {
        name: spec.name.clone(),
        memory_mb: spec.memory_mb,
        eviction_policy: spec.eviction_policy.clone(),
        replicas: spec.replicas,
        persistence: spec.persistence.clone(),
        tls: spec.tls,
    };
    let (_, axum::Json(view)) = plateau_cache::api::caches::create(
        State(s.state.clone()),
        Extension(s.caches.clone()),
        s.caller.clone(),
        Body(input),
    )
    .await?;
    plateau_store::caches::get(s.state.db(), &s.caller.org_id, &view.id)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("cache {} vanished", view.id)))
}

pub async fn update_cache(s: &Services, id: &str, spec: &RedisSpec) -> Result<(), ApiError> {
    let input = plateau_cache::api::caches::UpdateCache {
        memory_mb: spec.memory_mb,
        eviction_policy: spec.eviction_policy.clone(),
        replicas: spec.replicas,
        persistence: spec.persistence.clone(),
        rotate_password: false,
    };
    let _changed = plateau_cache::api::caches::update(
        State(s.state.clone()),
        Extension(s.caches.clone()),
        s.caller.clone(),
        Path(id.to_owned()),
        Body(input),
    )
    .await?;
    Ok(())
}

/// A new app, without an image: its variables are set before its first
/// deployment, so that deployment is its only one.
pub async fn create_app(s: &Services, spec: &AppSpec, project_id: &str) -> Result<App, ApiError> {
    let input = plateau_apps::api::apps::CreateApp {
        name: spec.name.clone(),
        source_type: Some("image".to_owned()),
        image: None,
        repo: None,
        branch: None,
        port: spec.port,
        project_id: Some(project_id.to_owned()),
        health_check_path: spec.health_check_path.clone(),
    };
    let (_, axum::Json(view)) =
        plateau_apps::api::apps::create(Extension(s.apps.clone()), s.caller.clone(), Body(input))
            .await?;
    plateau_store::apps::get(s.state.db(), &s.caller.org_id, &view.id)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("app {} vanished", view.id)))
}

/// Sets `vars` at once (one redeployment of a live app, as the endpoint
/// does); a variable the service refuses fails the item.
pub async fn set_env(
    s: &Services,
    id: &str,
    vars: BTreeMap<String, String>,
) -> Result<(), ApiError> {
    let env: Map<String, Value> = vars
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let input = plateau_apps::api::env::SetEnv {
        key: None,
        value: None,
        target: Some("all".to_owned()),
        env: Some(Value::Object(env)),
    };
    let axum::Json(change) = plateau_apps::api::env::set(
        Extension(s.apps.clone()),
        s.caller.clone(),
        Path(id.to_owned()),
        Body(input),
    )
    .await?;
    if let Some(first) = change.invalid.first() {
        return Err(ApiError::invalid(
            format!("env.{}", first.entry),
            first.message.clone(),
        ));
    }
    Ok(())
}

/// A deployment of `image`; its id.
pub async fn deploy(s: &Services, id: &str, image: &str) -> Result<String, ApiError> {
    let input = plateau_apps::api::deploy::Deploy {
        image: Some(image.to_owned()),
        ..Default::default()
    };
    let (_, axum::Json(d)) = plateau_apps::api::deploy::create(
        Extension(s.apps.clone()),
        s.caller.clone(),
        Path(id.to_owned()),
        Body(input),
    )
    .await?;
    Ok(d.id)
}
