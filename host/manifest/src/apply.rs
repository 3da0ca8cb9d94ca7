//! Apply: the plan made so, item by item in dependency order, through the
//! services' own operations (the same checks, plan limits and events as
//! their endpoints). What is unchanged is not touched: no update, no
//! deployment. A failure stops the apply and reports which items were
//! applied; applying again converges, since items are matched by name.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::{Extension, Json};
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_kernel::Status;
use plateau_store::events::{self, NewEvent};
use serde_json::{Value, json};

use crate::diff::env_changes;
use crate::model::{Key, Kind, Manifest};
use crate::observe::{Existing, Found, Services, attributes, referenced, remember};
use crate::refs::Values;
use crate::views::{Action, ManifestItem, ManifestPlan};

/// How long an apply waits for a database or cache that an app refers
/// to to run (its connection string exists only then).
pub const READY_TIMEOUT: Duration = Duration::from_secs(600);

/// An apply that stopped: the error, and the items applied before it.
pub struct Stopped {
    pub error: ApiError,
    /// The item's key (`apps.web`), or `project`.
    pub item: String,
    /// Where the item is in the manifest (`apps[1]`), or `project`.
    pub path: String,
    pub applied: Vec<ManifestItem>,
}

/// Applies `plan` (made by `diff::plan` from `existing`); the plan with
/// ids and deployments filled in, and `changed`.
pub async fn apply(
    s: &Services,
    m: &Manifest,
    existing: Existing,
    mut plan: ManifestPlan,
    mut values: Values,
) -> Result<ManifestPlan, Box<Stopped>> {
    let mut applied: Vec<ManifestItem> = Vec::new();
    let stop = |error: ApiError, item: &ManifestItem, applied: &[ManifestItem]| {
        Box::new(Stopped {
            error,
            item: item.key.clone(),
            path: item.path.clone().unwrap_or_else(|| item.key.clone()),
            applied: applied.to_vec(),
        })
    };
    let project_item = ManifestItem {
        kind: "project".to_owned(),
        name: m.project.clone(),
        key: "project".to_owned(),
        path: Some("project".to_owned()),
        id: None,
        action: plan.project.action,
        fields: Vec::new(),
        deployment_id: None,
    };
    let project_id = match &existing.project {
        Some(p) => p.id.clone(),
        None => create_project(s, &m.project)
            .await
            .map_err(|e| stop(e, &project_item, &applied))?,
    };
    plan.project.id = Some(project_id.clone());
    let mut changed = existing.project.is_none();
    let mut found = existing.items;
    for item in plan.items.iter_mut() {
        if item.action == Action::DeleteIfPruned {
            continue;
        }
        let key = Key {
            kind: match item.kind.as_str() {
                "database" => Kind::Database,
                "redis" => Kind::Redis,
                _ => Kind::App,
            },
            name: item.name.clone(),
        };
        let outcome = apply_item(s, m, &key, item, &project_id, &mut found, &mut values).await;
        match outcome {
            Ok(touched) => {
                changed |= touched;
                applied.push(item.clone());
            }
            Err(e) => return Err(stop(e, &*item, &applied)),
        }
    }
    if m.prune {
        for item in plan.items.iter_mut() {
            if item.action != Action::DeleteIfPruned {
                continue;
            }
            let id = item.id.clone().unwrap_or_default();
            if let Err(e) = prune(s, &item.kind, &id).await {
                return Err(stop(e, &*item, &applied));
            }
            changed = true;
            applied.push(item.clone());
        }
    }
    if changed {
        record(s, &project_id, &plan)
            .await
            .map_err(|e| stop(e, &project_item, &applied))?;
    }
    plan.changed = Some(changed);
    Ok(plan)
}

/// One item; whether anything was changed.
async fn apply_item(
    s: &Services,
    m: &Manifest,
    key: &Key,
    item: &mut ManifestItem,
    project_id: &str,
    found: &mut BTreeMap<Key, Found>,
    values: &mut Values,
) -> Result<bool, ApiError> {
    let changed_fields = |item: &ManifestItem| {
        item.fields
            .iter()
            .filter(|f| f.action != Action::Unchanged)
            .map(|f| (f.field.clone(), f.to.clone()))
            .collect::<BTreeMap<String, Option<Value>>>()
    };
    let mut touched = false;
    match key.kind {
        Kind::Database => {
            let spec = m
                .databases
                .iter()
                .find(|d| d.name == key.name)
                .expect("named");
            if !found.contains_key(key) {
                let d = crate::services::create_database(s, spec, project_id).await?;
                item.id = Some(d.id.clone());
                found.insert(key.clone(), Found::Database(d));
                touched = true;
            } else if let Some(Some(days)) = changed_fields(item).get("backupRetentionDays") {
                crate::services::set_retention(s, item.id.as_deref().unwrap_or(""), days.clone())
                    .await?;
                touched = true;
            }
            if let Some(days) = spec.backup_retention_days
                && item.action == Action::Create
                && days != 7
            {
                crate::services::set_retention(s, item.id.as_deref().unwrap_or(""), json!(days))
                    .await?;
            }
        }
        Kind::Redis => {
            let spec = m.redis.iter().find(|r| r.name == key.name).expect("named");
            if !found.contains_key(key) {
                let c = crate::services::create_cache(s, spec).await?;
                item.id = Some(c.id.clone());
                found.insert(key.clone(), Found::Redis(c));
                touched = true;
            } else if item.action == Action::Update {
                crate::services::update_cache(s, item.id.as_deref().unwrap_or(""), spec).await?;
                touched = true;
            }
        }
        Kind::App => {
            let spec = m.apps.iter().find(|a| a.name == key.name).expect("named");
            let existing_id = found.get(key).map(|f| f.id().to_owned());
            let app = match &existing_id {
                Some(_) => None,
                None => Some(crate::services::create_app(s, spec, project_id).await?),
            };
            if let Some(app) = app {
                item.id = Some(app.id.clone());
                found.insert(key.clone(), Found::App(app));
                touched = true;
            }
            let id = item.id.clone().unwrap_or_default();
            let env = env_changes(s, existing_id.as_deref(), spec, values).await?;
            if !env.is_empty() {
                crate::services::set_env(s, &id, env).await?;
                touched = true;
            }
            let image_changed = existing_id.is_none()
                || item
                    .fields
                    .iter()
                    .any(|f| f.field == "image" && f.action == Action::Update);
            if image_changed {
                item.deployment_id = Some(crate::services::deploy(s, &id, &spec.image).await?);
                touched = true;
            }
        }
    }
    if referenced(m, key) {
        let ready = wait_ready(s, key, found).await?;
        if let Some(attrs) = attributes(s, &ready).await? {
            remember(values, key, attrs);
        }
    }
    Ok(touched)
}

/// `key` once it runs (a database or cache), read again from the store;
/// a 503 if it does not within [`READY_TIMEOUT`], a 409 if it failed.
async fn wait_ready(
    s: &Services,
    key: &Key,
    found: &BTreeMap<Key, Found>,
) -> Result<Found, ApiError> {
    let Some(current) = found.get(key).cloned() else {
        return Err(ApiError::Internal(format!("{key} was not made")));
    };
    let started = tokio::time::Instant::now();
    let db = s.state.db();
    let org = &s.caller.org_id;
    loop {
        let now = match &current {
            Found::App(_) => return Ok(current),
            Found::Database(d) => plateau_store::databases::get(db, org, &d.id)
                .await?
                .map(|d| {
                    (
                        Status::read(&d.status),
                        d.status_detail.clone(),
                        Found::Database(d),
                    )
                }),
            Found::Redis(c) => plateau_store::caches::get(db, org, &c.id).await?.map(|c| {
                (
                    Status::read(&c.status),
                    c.status_detail.clone(),
                    Found::Redis(c),
                )
            }),
        };
        let Some((status, detail, latest)) = now else {
            return Err(ApiError::conflict(
                "dependency_gone",
                format!("{key} was deleted while the manifest was applied"),
            ));
        };
        if status.settled() {
            return Ok(latest);
        }
        if status == Status::Failed {
            return Err(ApiError::conflict(
                "dependency_failed",
                format!(
                    "{key} failed: {}; fix or delete it, then apply again",
                    detail.unwrap_or_default()
                ),
            ));
        }
        if started.elapsed() > READY_TIMEOUT {
            return Err(ApiError::Unavailable(format!(
                "{key} is still {status} after {} s; apply again once it runs",
                READY_TIMEOUT.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn create_project(s: &Services, name: &str) -> Result<String, ApiError> {
    if !s.caller.scopes.allows("projects:write") {
        return Err(ApiError::MissingScope("projects:write".to_owned()));
    }
    let (_, Json(p)) = plateau_api::routes::projects::create(
        State(s.state.clone()),
        s.caller.clone(),
        Body(
            serde_json::from_value(json!({ "name": name }))
                .map_err(|e| ApiError::Internal(e.to_string()))?,
        ),
    )
    .await?;
    Ok(p.id)
}

async fn prune(s: &Services, kind: &str, id: &str) -> Result<(), ApiError> {
    match kind {
        "app" => {
            let _changed = plateau_apps::api::apps::delete(
                Extension(s.apps.clone()),
                s.caller.clone(),
                Path(id.to_owned()),
            )
            .await?;
        }
        _ => {
            let _changed = plateau_databases::api::clusters::delete(
                State(s.state.clone()),
                Extension(s.databases.clone()),
                s.caller.clone(),
                Path(id.to_owned()),
            )
            .await?;
        }
    }
    Ok(())
}

/// The `manifest.applied` event, in the `resources` category, with what
/// the apply did.
async fn record(s: &Services, project_id: &str, plan: &ManifestPlan) -> Result<(), ApiError> {
    let now = plateau_core::time::now_ms();
    let e = NewEvent::audited(
        &s.caller.org_id,
        "manifest.applied",
        "resources",
        "apply",
        &s.caller.actor(),
    )
    .resource("project", project_id)
    .data(json!({
        "project": plan.project.name,
        "items": plan.items.iter().map(|i| json!({
            "key": i.key, "id": i.id, "action": i.action,
        })).collect::<Vec<_>>(),
        "prune": plan.prune,
    }));
    let mut tx = s.state.db().begin().await?;
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    Ok(())
}
