//! The plan: each item of a manifest against what exists, field by field
//! (create, update, unchanged), and what the manifest does not name
//! (delete-if-pruned). Fields the services cannot change on an existing
//! resource are refused here, before anything is changed.

use std::collections::BTreeMap;

use plateau_api::error::ApiError;
use plateau_store::apps::{App, deployments};
use plateau_store::query::Keyset;
use serde_json::{Value, json};
use sha2::Digest;

use crate::graph::path_of;
use crate::model::{AppSpec, Key, Kind, Manifest};
use crate::observe::{Existing, Found, Services, attributes, referenced, remember};
use crate::refs::Values;
use crate::views::{Action, ManifestField, ManifestItem, ManifestPlan, ManifestProject};

/// The plan of `m` against `existing`, and the reference values known
/// now; a 409 naming every field that cannot change.
pub async fn plan(
    s: &Services,
    m: &Manifest,
    order: &[Key],
    existing: &Existing,
) -> Result<(ManifestPlan, Values), ApiError> {
    let mut values = Values::new();
    for (key, found) in &existing.items {
        if referenced(m, key)
            && let Some(attrs) = attributes(s, found).await?
        {
            remember(&mut values, key, attrs);
        }
    }
    let mut fixed = Vec::new();
    let mut items = Vec::new();
    for key in order {
        let found = existing.items.get(key);
        let path = path_of(m, key);
        let fields = match key.kind {
            Kind::Database => database_fields(m, key, found, &path, &mut fixed),
            Kind::Redis => redis_fields(m, key, found, &path, &mut fixed),
            Kind::App => {
                let spec = m.apps.iter().find(|a| a.name == key.name).expect("named");
                let app = match found {
                    Some(Found::App(a)) => Some(a),
                    _ => None,
                };
                app_fields(s, spec, app, &values, &path, &mut fixed).await?
            }
        };
        let action = match found {
            None => Action::Create,
            Some(_) if fields.iter().any(|f| f.action != Action::Unchanged) => Action::Update,
            Some(_) => Action::Unchanged,
        };
        items.push(ManifestItem {
            kind: key.kind.singular().to_owned(),
            name: key.name.clone(),
            key: key.to_string(),
            path: Some(path),
            id: found.map(|f| f.id().to_owned()),
            action,
            fields,
            deployment_id: None,
        });
    }
    if !fixed.is_empty() {
        return Err(ApiError::conflict(
            "immutable_field",
            format!(
                "these fields cannot change on an existing resource: {}; keep their values, or give the item another name to make a new one",
                fixed.join("; ")
            ),
        ));
    }
    for (key, id) in &existing.unnamed {
        items.push(ManifestItem {
            kind: key.kind.singular().to_owned(),
            name: key.name.clone(),
            key: key.to_string(),
            path: None,
            id: Some(id.clone()),
            action: Action::DeleteIfPruned,
            fields: Vec::new(),
            deployment_id: None,
        });
    }
    let mut view = ManifestPlan {
        project: ManifestProject {
            name: m.project.clone(),
            id: existing.project.as_ref().map(|p| p.id.clone()),
            action: if existing.project.is_some() {
                Action::Unchanged
            } else {
                Action::Create
            },
        },
        items,
        prune: m.prune,
        summary: Default::default(),
        changed: None,
    };
    view.summarize();
    Ok((view, values))
}

/// A field of an item: created with the item, or compared with what is.
fn field(
    name: &str,
    now: Option<Value>,
    wanted: Option<Value>,
    exists: bool,
) -> Option<ManifestField> {
    let wanted = wanted?;
    let action = match &now {
        _ if !exists => Action::Create,
        Some(now) if *now == wanted => Action::Unchanged,
        _ => Action::Update,
    };
    Some(ManifestField {
        field: name.to_owned(),
        action,
        from: now,
        to: Some(wanted),
        sensitive: false,
        known: true,
    })
}

/// Records `f` as a change that cannot be made, if it is one.
fn immutable(f: &Option<ManifestField>, path: &str, fixed: &mut Vec<String>) {
    if let Some(f) = f
        && f.action == Action::Update
    {
        fixed.push(format!(
            "{path}.{} ({} now, {} asked)",
            f.field,
            f.from.clone().unwrap_or(Value::Null),
            f.to.clone().unwrap_or(Value::Null)
        ));
    }
}

fn database_fields(
    m: &Manifest,
    key: &Key,
    found: Option<&Found>,
    path: &str,
    fixed: &mut Vec<String>,
) -> Vec<ManifestField> {
    let spec = m
        .databases
        .iter()
        .find(|d| d.name == key.name)
        .expect("named");
    let d = match found {
        Some(Found::Database(d)) => Some(d),
        _ => None,
    };
    let exists = d.is_some();
    let now = |f: fn(&plateau_store::databases::Database) -> Value| d.map(f);
    let fields = [
        (
            field(
                "version",
                now(|d| json!(d.version)),
                spec.version.as_ref().map(|v| json!(v)),
                exists,
            ),
            true,
        ),
        (
            field(
                "replicas",
                now(|d| json!(d.replicas)),
                spec.replicas.map(|v| json!(v)),
                exists,
            ),
            true,
        ),
        (
            field(
                "memoryMb",
                now(|d| json!(d.memory_mb)),
                spec.memory_mb.map(|v| json!(v)),
                exists,
            ),
            true,
        ),
        (
            field(
                "cpus",
                now(|d| json!(d.cpus)),
                spec.cpus.map(|v| json!(v)),
                exists,
            ),
            true,
        ),
        (
            field(
                "diskGb",
                now(|d| json!(d.disk_gb)),
                spec.disk_gb.map(|v| json!(v)),
                exists,
            ),
            true,
        ),
        (
            field(
                "backupRetentionDays",
                now(|d| json!(d.backup_retention_days)),
                spec.backup_retention_days.map(|v| json!(v)),
                exists,
            ),
            false,
        ),
    ];
    let mut out = Vec::new();
    for (f, fixed_once_made) in fields {
        if fixed_once_made {
            immutable(&f, path, fixed);
        }
        out.extend(f);
    }
    out
}

fn redis_fields(
    m: &Manifest,
    key: &Key,
    found: Option<&Found>,
    path: &str,
    fixed: &mut Vec<String>,
) -> Vec<ManifestField> {
    let spec = m.redis.iter().find(|r| r.name == key.name).expect("named");
    let c = match found {
        Some(Found::Redis(c)) => Some(c),
        _ => None,
    };
    let exists = c.is_some();
    let now = |f: fn(&plateau_store::caches::Cache) -> Value| c.map(f);
    let tls = field(
        "tls",
        now(|c| json!(c.tls != 0)),
        spec.tls.map(|v| json!(v)),
        exists,
    );
    immutable(&tls, path, fixed);
    [
        field(
            "memoryMb",
            now(|c| json!(c.memory_mb)),
            spec.memory_mb.map(|v| json!(v)),
            exists,
        ),
        field(
            "evictionPolicy",
            now(|c| json!(c.eviction_policy)),
            spec.eviction_policy.as_ref().map(|v| json!(v)),
            exists,
        ),
        field(
            "replicas",
            now(|c| json!(c.replicas)),
            spec.replicas.map(|v| json!(v)),
            exists,
        ),
        field(
            "persistence",
            now(|c| json!(c.persistence)),
            spec.persistence.as_ref().map(|v| json!(v)),
            exists,
        ),
        tls,
    ]
    .into_iter()
    .flatten()
    .collect()
}

async fn app_fields(
    s: &Services,
    spec: &AppSpec,
    app: Option<&App>,
    values: &Values,
    path: &str,
    fixed: &mut Vec<String>,
) -> Result<Vec<ManifestField>, ApiError> {
    let exists = app.is_some();
    let image = match app {
        Some(a) => deployed_image(s, a).await?.map(|i| json!(i)),
        None => None,
    };
    let mut out: Vec<ManifestField> = Vec::new();
    out.extend(field("image", image, Some(json!(spec.image)), exists));
    let port = field(
        "port",
        app.map(|a| json!(a.port)),
        spec.port.map(|v| json!(v)),
        exists,
    );
    let health = field(
        "healthCheckPath",
        app.map(|a| json!(a.health_check_path)),
        spec.health_check_path.as_ref().map(|v| json!(v)),
        exists,
    );
    immutable(&port, path, fixed);
    immutable(&health, path, fixed);
    out.extend(port);
    out.extend(health);
    let digests = match app {
        Some(a) => s
            .apps
            .env_digests(&a.id)
            .await
            .map_err(ApiError::Internal)?,
        None => BTreeMap::new(),
    };
    for (name, template) in &spec.env {
        let value = template.resolve(values);
        let action = match (digests.get(name), &value) {
            (None, _) => Action::Create,
            (Some((target, digest)), Some(v)) if target == "all" && *digest == sha256(v) => {
                Action::Unchanged
            }
            (Some(_), _) => Action::Update,
        };
        out.push(ManifestField {
            field: format!("env.{name}"),
            action,
            from: None,
            to: None,
            sensitive: true,
            known: value.is_some(),
        });
    }
    Ok(out)
}

/// The variables of `spec` whose value (resolved with `values`) differs
/// from the app's, with their values; an error if one cannot be resolved.
pub async fn env_changes(
    s: &Services,
    app_id: Option<&str>,
    spec: &AppSpec,
    values: &Values,
) -> Result<BTreeMap<String, String>, ApiError> {
    let digests = match app_id {
        Some(id) => s.apps.env_digests(id).await.map_err(ApiError::Internal)?,
        None => BTreeMap::new(),
    };
    let mut out = BTreeMap::new();
    for (name, template) in &spec.env {
        let value = template.resolve(values).ok_or_else(|| {
            ApiError::Internal(format!("env.{name}: a reference was not resolved"))
        })?;
        let same = digests
            .get(name)
            .is_some_and(|(target, digest)| target == "all" && *digest == sha256(&value));
        if !same {
            out.insert(name.clone(), value);
        }
    }
    Ok(out)
}

/// The image an app runs or is being deployed with: that of its newest
/// deployment that did not fail, else the app's own.
pub async fn deployed_image(s: &Services, app: &App) -> Result<Option<String>, ApiError> {
    let recent = Keyset {
        after: None,
        limit: Some(20),
    };
    let listed = deployments::list(s.state.db(), &app.id, &recent).await?;
    Ok(listed
        .rows
        .into_iter()
        .find(|d| d.status != "failed")
        .and_then(|d| d.image)
        .or_else(|| app.image.clone()))
}

pub fn sha256(value: &str) -> String {
    hex::encode(sha2::Sha256::digest(value.as_bytes()))
}
