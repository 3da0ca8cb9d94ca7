//! An environment's versions: what each change did (never values), the
//! keys of one version, and rollback, which writes a version's keys again
//! as a new version (so it is itself undone by a rollback, and linked apps
//! are synced to it like any change).

use std::cmp::Reverse;

use plateau_sdk::{ApiError, Bucket, Params, Request, Response, paginate_sorted};

use crate::input::Rollback;
use crate::record::Version;
use crate::store::{self, Change, load_env};
use crate::views::{VersionDetail, VersionView};

/// `GET .../versions`: newest first.
pub fn list(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let (env, _) = load_env(&bucket, &params["project"], &params["env"])?;
    let views: Vec<VersionView> = bucket
        .list_all(&Version::prefix(&env.project, &env.name))?
        .into_iter()
        .map(|e| Ok(VersionView::from(&e.json::<Version>()?)))
        .collect::<Result<_, ApiError>>()?;
    let page = paginate_sorted("config-versions", views, &req.page_query()?, |v| {
        Reverse(v.version)
    })?;
    Ok(page.into_response())
}

fn number(params: &Params) -> Result<u64, ApiError> {
    params["version"]
        .parse()
        .map_err(|_| ApiError::validation("version", "must be a version number"))
}

/// `GET .../versions/{version}`: its keys, secrets without values.
pub fn get(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let (env, _) = load_env(&bucket, &params["project"], &params["env"])?;
    let n = number(params)?;
    if n == 0 || n > env.version {
        return Err(ApiError::not_found(format!(
            "environment {}/{} has no version {n}",
            env.project, env.name
        )));
    }
    let version = store::version_at(&bucket, &env, n)?;
    Ok(Response::ok(&VersionDetail::from(&version)))
}

/// `POST .../rollback`: the keys of `version` become a new version.
pub fn rollback(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    let input: Rollback = req.json()?;
    let bucket = Bucket::caller()?;
    let (env, raw) = load_env(&bucket, &params["project"], &params["env"])?;
    if input.version > env.version {
        return Err(ApiError::validation(
            "version",
            format!(
                "environment {}/{} is at version {}",
                env.project, env.name, env.version
            ),
        ));
    }
    let target = store::version_at(&bucket, &env, input.version)?;
    let current = store::current(&bucket, &env)?;
    let next = env.version + 1;
    let mut entries = target.entries.clone();
    let mut set = Vec::new();
    for (key, entry) in &mut entries {
        if current.entries.get(key) != Some(entry) {
            set.push(key.clone());
            entry.since = next;
        }
    }
    let removed = current
        .entries
        .keys()
        .filter(|k| !entries.contains_key(*k))
        .cloned()
        .collect();
    let version = store::commit(
        &bucket,
        &org,
        &env,
        &raw,
        Change {
            entries,
            set,
            removed,
            rollback_of: Some(input.version),
        },
        req.caller.actor.clone(),
    )?;
    Ok(Response::ok(&VersionView::from(&version)))
}
