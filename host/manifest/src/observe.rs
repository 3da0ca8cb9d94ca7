//! What exists of a manifest's items, matched by name: its project, the
//! organisation's databases and caches of that name, the project's apps
//! of that name; the project's apps and databases the manifest does not
//! name (what pruning would delete); and the attributes references read.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, State};
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_apps::Apps;
use plateau_cache::CacheService;
use plateau_databases::DatabaseService;
use plateau_kernel::Status;
use plateau_store::apps::App;
use plateau_store::caches::Cache;
use plateau_store::databases::{Database, branches};
use plateau_store::projects::{self, Project};
use plateau_store::query::Keyset;

use crate::graph::path_of;
use crate::model::{Key, Kind, Manifest};

/// The services a manifest drives, and who drives them.
#[derive(Clone)]
pub struct Services {
    pub state: AppState,
    pub apps: Apps,
    pub databases: Arc<DatabaseService>,
    pub caches: Arc<CacheService>,
    pub caller: Caller,
}

/// One item as it exists.
#[derive(Clone, Debug)]
pub enum Found {
    Database(Database),
    Redis(Cache),
    App(App),
}

impl Found {
    pub fn id(&self) -> &str {
        match self {
            Found::Database(d) => &d.id,
            Found::Redis(c) => &c.id,
            Found::App(a) => &a.id,
        }
    }
}

/// What exists, keyed like the manifest.
#[derive(Default)]
pub struct Existing {
    pub project: Option<Project>,
    pub items: BTreeMap<Key, Found>,
    /// The project's apps and databases the manifest does not name.
    pub unnamed: Vec<(Key, String)>,
}

/// Reads what exists of `m`'s items; a 409 naming the field of an item
/// whose name is taken by something the manifest cannot take over.
pub async fn observe(s: &Services, m: &Manifest) -> Result<Existing, ApiError> {
    let db = s.state.db();
    let org = &s.caller.org_id;
    let mut out = Existing {
        project: projects::by_name(db, org, &m.project).await?,
        ..Existing::default()
    };
    if let (Some(only), Some(p)) = (&s.caller.project_id, &out.project)
        && *only != p.id
    {
        return Err(ApiError::invalid(
            "project",
            format!("this token is limited to project {only}"),
        ));
    }
    let all = Keyset::default();
    let project_id = out.project.as_ref().map(|p| p.id.clone());
    let named = |kind: Kind, name: &str| Key {
        kind,
        name: name.to_owned(),
    };
    for d in plateau_store::databases::list(db, org, &all).await?.rows {
        let key = named(Kind::Database, &d.name);
        let wanted = m.databases.iter().any(|w| w.name == d.name);
        if wanted {
            if d.project_id != project_id || project_id.is_none() {
                return Err(taken(m, &key, &d.id, "another project"));
            }
            if Status::read(&d.status) == Status::Deleting {
                return Err(taken(m, &key, &d.id, "deletion"));
            }
            out.items.insert(key, Found::Database(d));
        } else if project_id.is_some()
            && d.project_id == project_id
            && branches::of(db, &d.id).await?.is_none()
        {
            out.unnamed.push((key, d.id));
        }
    }
    for c in plateau_store::caches::list(db, org, &all).await?.rows {
        let key = named(Kind::Redis, &c.name);
        if m.redis.iter().any(|w| w.name == c.name) {
            if Status::read(&c.status) == Status::Deleting {
                return Err(taken(m, &key, &c.id, "deletion"));
            }
            out.items.insert(key, Found::Redis(c));
        }
    }
    if let Some(pid) = &project_id {
        for a in plateau_store::apps::list(db, org, Some(pid), &all)
            .await?
            .rows
        {
            let key = named(Kind::App, &a.name);
            if !m.apps.iter().any(|w| w.name == a.name) {
                out.unnamed.push((key, a.id));
            } else if let Some(Found::App(first)) = out.items.get(&key) {
                return Err(ApiError::conflict(
                    "ambiguous_name",
                    format!(
                        "{}.name: project {} has two apps named {:?} ({} and {}); rename one",
                        path_of(m, &key),
                        m.project,
                        a.name,
                        first.id,
                        a.id
                    ),
                ));
            } else {
                out.items.insert(key, Found::App(a));
            }
        }
    }
    Ok(out)
}

fn taken(m: &Manifest, key: &Key, id: &str, why: &str) -> ApiError {
    let detail = match why {
        "deletion" => format!(
            "{}.name: {} {id} of that name is being deleted; apply again once it is gone",
            path_of(m, key),
            key.kind.singular()
        ),
        _ => format!(
            "{}.name: the name {:?} is taken by {} {id}, which is not in project {:?}; rename the item or move it",
            path_of(m, key),
            key.name,
            key.kind.singular(),
            m.project
        ),
    };
    ApiError::conflict("name_taken", detail)
}

/// The attributes references may read from `found`, `None` while it is
/// not running (a database or cache still being created).
pub async fn attributes(
    s: &Services,
    found: &Found,
) -> Result<Option<BTreeMap<String, String>>, ApiError> {
    let mut out = BTreeMap::new();
    match found {
        Found::App(a) => {
            out.insert("url".to_owned(), s.apps.url(&a.slug));
            out.insert("id".to_owned(), a.id.clone());
        }
        Found::Database(d) => {
            if !Status::read(&d.status).settled() {
                return Ok(None);
            }
            let axum::Json(c) = plateau_databases::api::clusters::connection(
                State(s.state.clone()),
                Extension(s.databases.clone()),
                s.caller.clone(),
                Path(d.id.clone()),
            )
            .await?;
            out.insert("uri".to_owned(), c.uri);
            out.insert("writeUri".to_owned(), c.write_uri);
            out.insert("host".to_owned(), c.host);
            out.insert("port".to_owned(), c.port.to_string());
            out.insert("database".to_owned(), c.database);
            out.insert("username".to_owned(), c.username);
            out.insert("password".to_owned(), c.password);
            out.insert("id".to_owned(), d.id.clone());
        }
        Found::Redis(r) => {
            if !Status::read(&r.status).settled() {
                return Ok(None);
            }
            let axum::Json(c) = plateau_cache::api::connection::connection(
                State(s.state.clone()),
                Extension(s.caches.clone()),
                s.caller.clone(),
                Path(r.id.clone()),
            )
            .await?;
            out.insert("uri".to_owned(), c.uri);
            out.insert("host".to_owned(), c.host);
            out.insert("port".to_owned(), c.port.to_string());
            out.insert("username".to_owned(), c.username);
            out.insert("password".to_owned(), c.password);
            out.insert("id".to_owned(), r.id.clone());
        }
    }
    Ok(Some(out))
}

/// Whether some app of `m` refers to `key`.
pub fn referenced(m: &Manifest, key: &Key) -> bool {
    m.apps
        .iter()
        .any(|a| a.env.values().flat_map(|t| t.refs()).any(|r| r.key == *key))
}

/// Adds `key`'s attributes to `values` (`databases.main.uri`).
pub fn remember(values: &mut crate::refs::Values, key: &Key, attributes: BTreeMap<String, String>) {
    for (attribute, value) in attributes {
        values.insert(format!("{key}.{attribute}"), value);
    }
}
