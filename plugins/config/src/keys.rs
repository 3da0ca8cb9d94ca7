//! The keys of an environment: list (secrets' values never shown), read
//! one (a secret, or a value containing one, only with `config:secrets`,
//! and every such read recorded as an audited `config.secret.read`), the
//! resolved values of all keys (`config:secrets`, audited), and changes,
//! each a new version.

use plateau_sdk::{
    ApiError, Bucket, Namespace, NewEvent, Params, Request, Response, paginate_sorted,
};
use serde_json::json;

use crate::input::{KeyValue, KeysChange, SetKey};
use crate::record::{Entry, Environment};
use crate::refs;
use crate::resolve;
use crate::store::{self, Change, load_env};
use crate::views::{KeyRead, KeyView, Values, VersionView};

/// The scope that reads secrets' values.
pub const SECRETS_SCOPE: &str = "config:secrets";

fn key_not_found(env: &Environment, key: &str) -> ApiError {
    ApiError::not_found(format!(
        "environment {}/{} has no key {key}",
        env.project, env.name
    ))
}

/// Records that `secrets` of the environment were read.
fn audit_read(env: &Environment, version: u64, secrets: &[String]) -> Result<(), ApiError> {
    if secrets.is_empty() {
        return Ok(());
    }
    NewEvent::new("config.secret.read", "read")
        .resource(
            "config_environment",
            format!("{}/{}", env.project, env.name),
        )
        .data(&json!({
            "project": env.project,
            "environment": env.name,
            "version": version,
            "keys": secrets,
        }))
        .audit()
        .emit()?;
    Ok(())
}

/// `GET .../keys`: every key, secrets without their values.
pub fn list(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let (env, _) = load_env(&bucket, &params["project"], &params["env"])?;
    let version = store::current(&bucket, &env)?;
    let page = paginate_sorted(
        "config-keys",
        KeyView::all(&version),
        &req.page_query()?,
        |k| k.key.clone(),
    )?;
    Ok(page.into_response())
}

/// `GET .../keys/{key}`: its value as written and resolved. A key whose
/// value holds a secret's needs `config:secrets`, and the read is audited.
pub fn get(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let (env, _) = load_env(&bucket, &params["project"], &params["env"])?;
    let version = store::current(&bucket, &env)?;
    let key = &params["key"];
    let entry = version
        .entries
        .get(key)
        .ok_or_else(|| key_not_found(&env, key))?;
    let secrets = resolve::secrets_of(&version, key);
    if !secrets.is_empty() {
        req.caller.require_scope(SECRETS_SCOPE)?;
    }
    let (value, computed) = resolve::one(&Namespace::Caller, &version, key)?;
    audit_read(&env, version.version, &secrets)?;
    Ok(Response::ok(&KeyRead {
        key: key.to_owned(),
        secret: entry.secret,
        value,
        computed,
        references: entry.refs.clone(),
        environment_version: version.version,
    }))
}

/// `GET .../values`: every key resolved (`config:secrets`; audited).
pub fn values(_req: &Request, params: &Params) -> Result<Response, ApiError> {
    let bucket = Bucket::caller()?;
    let (env, _) = load_env(&bucket, &params["project"], &params["env"])?;
    let version = store::current(&bucket, &env)?;
    let values = resolve::all(&Namespace::Caller, &version)?;
    let secrets: Vec<String> = version
        .entries
        .iter()
        .filter(|(_, e)| e.secret)
        .map(|(k, _)| k.clone())
        .collect();
    audit_read(&env, version.version, &secrets)?;
    Ok(Response::ok(&Values {
        project: env.project,
        environment: env.name,
        version: version.version,
        values,
    }))
}

/// Applies `change` to the current keys and commits the next version.
fn apply(req: &Request, params: &Params, change: KeysChange) -> Result<Response, ApiError> {
    let org = req.caller.organization()?.to_owned();
    change.check()?;
    let bucket = Bucket::caller()?;
    let (env, raw) = load_env(&bucket, &params["project"], &params["env"])?;
    let current = store::current(&bucket, &env)?;
    let next = env.version + 1;
    let mut entries = current.entries.clone();
    for name in &change.remove {
        if entries.remove(name).is_none() {
            return Err(key_not_found(&env, name));
        }
    }
    let ns = Namespace::Caller;
    for SetKey { key, value, secret } in &change.set {
        let secret = secret.unwrap_or_else(|| entries.get(key).is_some_and(|e| e.secret));
        let refs = refs::references(value);
        let entry = if secret {
            Entry {
                secret,
                value: None,
                sealed: Some(resolve::seal(&ns, value)?),
                refs,
                since: next,
            }
        } else {
            Entry {
                secret,
                value: Some(value.clone()),
                sealed: None,
                refs,
                since: next,
            }
        };
        entries.insert(key.clone(), entry);
    }
    let version = store::commit(
        &bucket,
        &org,
        &env,
        &raw,
        Change {
            entries,
            set: change.set.iter().map(|s| s.key.clone()).collect(),
            removed: change.remove.clone(),
            rollback_of: None,
        },
        req.caller.actor.clone(),
    )?;
    Ok(Response::ok(&VersionView::from(&version)))
}

/// `PATCH .../keys`: sets and removes keys as one new version.
pub fn patch(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let change: KeysChange = req.json()?;
    apply(req, params, change)
}

/// `PUT .../keys/{key}`: sets one key.
pub fn put(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let input: KeyValue = req.json()?;
    let change = KeysChange {
        set: vec![SetKey {
            key: params["key"].to_owned(),
            value: input.value,
            secret: input.secret,
        }],
        remove: Vec::new(),
    };
    apply(req, params, change)
}

/// `DELETE .../keys/{key}`: removes one key (refused while another key
/// refers to it).
pub fn delete(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let change = KeysChange {
        set: Vec::new(),
        remove: vec![params["key"].to_owned()],
    };
    apply(req, params, change)
}
