//! The one way an environment changes: a new version holding all its
//! keys, written with a compare-and-swap on the environment's record,
//! with its event and a sync job for every app linked to it. Also the
//! reads of projects, environments and versions, with their 404s.

use std::collections::BTreeMap;

use plateau_sdk::jobs::{self, NewJob};
use plateau_sdk::{ApiError, Bucket, Namespace, NewEvent, clock};
use serde_json::json;

use crate::input::{MAX_KEYS, MAX_TOTAL};
use crate::record::{Entry, Environment, KEEP_VERSIONS, Link, Project, Version};
use crate::refs;

pub fn project_not_found(name: &str) -> ApiError {
    ApiError::not_found(format!(
        "config project {name} does not exist: list them with GET /config/projects"
    ))
}

pub fn env_not_found(project: &str, name: &str) -> ApiError {
    ApiError::not_found(format!(
        "project {project} has no environment {name}: list them with GET /config/projects/{project}/environments"
    ))
}

pub fn load_project(bucket: &Bucket, name: &str) -> Result<Project, ApiError> {
    bucket
        .get(&Project::key(name))?
        .ok_or_else(|| project_not_found(name))
}

/// The environment and its stored bytes (for the compare-and-swap).
pub fn load_env(
    bucket: &Bucket,
    project: &str,
    name: &str,
) -> Result<(Environment, Vec<u8>), ApiError> {
    let raw = bucket
        .get_raw(&Environment::key(project, name))?
        .ok_or_else(|| {
            if bucket
                .get_raw(&Project::key(project))
                .ok()
                .flatten()
                .is_none()
            {
                project_not_found(project)
            } else {
                env_not_found(project, name)
            }
        })?;
    let env = serde_json::from_slice(&raw)
        .map_err(|e| ApiError::internal(format!("environment {project}/{name}: {e}")))?;
    Ok((env, raw))
}

/// Version `n` of the environment; 0 is empty.
pub fn version_at(bucket: &Bucket, env: &Environment, n: u64) -> Result<Version, ApiError> {
    if n == 0 {
        return Ok(Version::empty());
    }
    bucket
        .get(&Version::key(&env.project, &env.name, n))?
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "environment {}/{} has no version {n}: the newest {KEEP_VERSIONS} are kept, list them with GET .../versions",
                env.project, env.name
            ))
        })
}

/// The environment's current keys.
pub fn current(bucket: &Bucket, env: &Environment) -> Result<Version, ApiError> {
    version_at(bucket, env, env.version)
}

/// What a change makes: the keys of the new version and what it did.
pub struct Change {
    pub entries: BTreeMap<String, Entry>,
    pub set: Vec<String>,
    pub removed: Vec<String>,
    pub rollback_of: Option<u64>,
}

fn check(entries: &BTreeMap<String, Entry>) -> Result<(), ApiError> {
    if entries.len() > MAX_KEYS {
        return Err(ApiError::validation(
            "set",
            format!("an environment has at most {MAX_KEYS} keys"),
        ));
    }
    let total: usize = entries
        .iter()
        .map(|(k, e)| {
            k.len()
                + e.value.as_ref().map_or(0, String::len)
                + e.sealed.as_ref().map_or(0, |s| s.len() / 2)
        })
        .sum();
    if total > MAX_TOTAL {
        return Err(ApiError::validation(
            "set",
            format!("an environment holds at most {MAX_TOTAL} bytes of keys and values"),
        ));
    }
    let graph = entries
        .iter()
        .map(|(k, e)| (k.clone(), e.refs.clone()))
        .collect();
    refs::check(&graph).map_err(|e| ApiError::validation(e.key(), e.message()))
}

/// Writes `change` as the environment's next version; 409 when another
/// change won the race. Returns the new version.
pub fn commit(
    bucket: &Bucket,
    org: &str,
    env: &Environment,
    env_raw: &[u8],
    change: Change,
    actor: Option<String>,
) -> Result<Version, ApiError> {
    check(&change.entries)?;
    let now = clock::now_rfc3339();
    let version = Version {
        version: env.version + 1,
        entries: change.entries,
        set: change.set,
        removed: change.removed,
        rollback_of: change.rollback_of,
        actor,
        created_at: now.clone(),
    };
    let mut next = env.clone();
    next.version = version.version;
    next.updated_at = now;
    let next_raw = serde_json::to_vec(&next)
        .map_err(|e| ApiError::internal(format!("environment does not serialize: {e}")))?;
    let key = Environment::key(&env.project, &env.name);
    if !bucket.compare_and_swap(&key, Some(env_raw), Some(&next_raw))? {
        return Err(ApiError::conflict(format!(
            "environment {}/{} changed concurrently: read it again and retry",
            env.project, env.name
        )));
    }
    bucket.set(
        &Version::key(&env.project, &env.name, version.version),
        &version,
    )?;
    if version.version > KEEP_VERSIONS {
        let old = version.version - KEEP_VERSIONS;
        bucket.delete(&Version::key(&env.project, &env.name, old))?;
    }
    let (event_type, action) = match version.rollback_of {
        Some(_) => ("config.environment.rolled_back", "rollback"),
        None => ("config.environment.changed", "update"),
    };
    NewEvent::new(event_type, action)
        .resource(
            "config_environment",
            format!("{}/{}", env.project, env.name),
        )
        .data(&json!({
            "project": env.project,
            "environment": env.name,
            "version": version.version,
            "set": version.set,
            "removed": version.removed,
            "rollbackOf": version.rollback_of,
        }))
        .audit()
        .emit()?;
    sync_linked(bucket, org, &env.project, &env.name)?;
    Ok(version)
}

/// Schedules a sync of every app linked to the environment.
pub fn sync_linked(bucket: &Bucket, org: &str, project: &str, env: &str) -> Result<(), ApiError> {
    let prefix = Link::index_prefix(project, env);
    for entry in bucket.list_all(&prefix)? {
        let app = entry.key.trim_start_matches(&prefix);
        schedule_sync(org, app)?;
    }
    Ok(())
}

/// A sync of `app` as soon as the change commits (job `sync:{app}`, one
/// per app: a second change before it runs replaces it).
pub fn schedule_sync(org: &str, app: &str) -> Result<(), ApiError> {
    jobs::schedule(
        NewJob::at(format!("sync:{app}"), clock::now_millis())
            .namespace(Namespace::Organization(org.to_owned()))
            .payload(app),
    )?;
    Ok(())
}
