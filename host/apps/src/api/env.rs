//! `/apps/{id}/env`: names only on read; values sealed with the host key
//! and never returned; a change redeploys the live component. `verify`
//! compares a SHA-256 digest with the value the running replicas have.

use std::collections::BTreeMap;

use axum::extract::Path;
use axum::{Extension, Json};
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_api::routes::{Pairs, param};
use plateau_core::time;
use plateau_store::apps::App;
use plateau_store::apps::env::{self as db, EnvVar};
use plateau_store::events;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::{DeploymentView, load, load_live_in};
use crate::Apps;
use crate::env::{self, Invalid, MAX_VARS, TARGETS};
use crate::pipeline::{self, event};

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvVarView {
    pub key: String,
    pub target: String,
    pub updated_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct EnvList {
    pub items: Vec<EnvVarView>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SetEnv {
    pub key: Option<String>,
    pub value: Option<String>,
    /// all (default), production or preview.
    pub target: Option<String>,
    /// Many at once: an object of names to values, or dotenv text.
    #[schema(value_type = Object)]
    pub env: Option<Value>,
}

#[derive(Serialize, ToSchema)]
pub struct InvalidEntry {
    /// The name, or `line N` of dotenv text.
    pub entry: String,
    pub message: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvChange {
    /// Names saved (or removed).
    pub keys: Vec<String>,
    /// Entries refused; the others were saved.
    pub invalid: Vec<InvalidEntry>,
    /// The redeployment the change started, if the app has a live one.
    pub deployment: Option<DeploymentView>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Verified {
    pub key: String,
    /// Whether the running replicas' value has the expected digest.
    pub matches: bool,
    pub deployment_id: String,
}

/// The app's variables: names and targets, never values.
#[utoipa::path(get, path = "/apps/{id}/env", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "names only", body = EnvList)))]
pub async fn list(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<EnvList>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let items = db::list(apps.db(), &app.id)
        .await?
        .into_iter()
        .map(|v| EnvVarView {
            key: v.name,
            target: v.target,
            updated_at: time::to_rfc3339(v.updated_at),
        })
        .collect();
    Ok(Json(EnvList { items }))
}

/// Set one variable (`key`, `value`) or many (`env`); invalid entries are
/// reported and the rest saved; the live deployment is redeployed.
#[utoipa::path(post, path = "/apps/{id}/env", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = SetEnv,
    responses((status = 200, description = "what was saved and refused", body = EnvChange)))]
pub async fn set(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<SetEnv>,
) -> Result<Json<EnvChange>, ApiError> {
    let target = input.target.clone().unwrap_or_else(|| "all".to_owned());
    if !TARGETS.contains(&target.as_str()) {
        return Err(ApiError::invalid(
            "target",
            "must be all, production or preview",
        ));
    }
    let (vars, invalid) = entries(&input)?;
    if vars.is_empty() {
        return Err(match invalid.first() {
            Some(first) => ApiError::invalid("env", format!("{}: {}", first.entry, first.message)),
            None => ApiError::invalid("key", "send key and value, or env"),
        });
    }
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    let existing = db::list(apps.db(), &app.id).await?.len();
    if existing + vars.len() > MAX_VARS {
        return Err(ApiError::invalid(
            "env",
            format!("an app has at most {MAX_VARS} variables"),
        ));
    }
    let mut keys = Vec::new();
    for (name, value) in vars {
        let sealed =
            env::seal(apps.sealer(), &app.id, &name, &value).map_err(ApiError::Internal)?;
        let var = EnvVar {
            name: name.clone(),
            sealed,
            target: target.clone(),
            updated_at: now,
        };
        db::put(&mut tx, &app.id, &var).await?;
        keys.push(name);
    }
    let e = event(&app, "app.env.changed", "update", &caller.actor())
        .data(json!({ "set": keys, "target": target }));
    events::record(&mut tx, &e, now).await?;
    let deployment = redeploy(&apps, &mut tx, &app, &caller).await?;
    tx.commit_last().await?;
    if let Some(d) = &deployment {
        apps.spawn_pipeline(app.id.clone(), d.id.clone(), None);
    }
    Ok(Json(EnvChange {
        keys,
        invalid: invalid
            .into_iter()
            .map(|i| InvalidEntry {
                entry: i.entry,
                message: i.message,
            })
            .collect(),
        deployment: deployment.map(Into::into),
    }))
}

/// Remove a variable (`?key=NAME`) and redeploy.
#[utoipa::path(delete, path = "/apps/{id}/env", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id"),
           ("key" = String, Query, description = "the variable's name")),
    responses((status = 200, description = "the removed name", body = EnvChange)))]
pub async fn delete(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    pairs: Pairs,
) -> Result<Json<EnvChange>, ApiError> {
    let key = param(&pairs, "key")
        .ok_or_else(|| ApiError::invalid("key", "name the variable with ?key=NAME"))?
        .to_owned();
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    if !db::delete(&mut tx, &app.id, &key).await? {
        return Err(ApiError::not_found(format!(
            "app {id} has no variable {key}"
        )));
    }
    let e =
        event(&app, "app.env.changed", "update", &caller.actor()).data(json!({ "removed": [key] }));
    events::record(&mut tx, &e, now).await?;
    let deployment = redeploy(&apps, &mut tx, &app, &caller).await?;
    tx.commit_last().await?;
    if let Some(d) = &deployment {
        apps.spawn_pipeline(app.id.clone(), d.id.clone(), None);
    }
    Ok(Json(EnvChange {
        keys: vec![key],
        invalid: Vec::new(),
        deployment: deployment.map(Into::into),
    }))
}

/// Whether the running replicas' value of `key` has the SHA-256 digest
/// `expected` (hex), without revealing the value.
#[utoipa::path(get, path = "/apps/{id}/env/verify", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id"),
           ("key" = String, Query, description = "the variable's name"),
           ("expected" = String, Query, pattern = "^[0-9a-fA-F]{64}$", description = "SHA-256 of the value, hex")),
    responses((status = 200, description = "the comparison", body = Verified),
              (status = 409, description = "the app is not running on this host", body = plateau_api::error::Problem)))]
pub async fn verify(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    pairs: Pairs,
) -> Result<Json<Verified>, ApiError> {
    let key = param(&pairs, "key").ok_or_else(|| ApiError::invalid("key", "send ?key=NAME"))?;
    let expected = param(&pairs, "expected")
        .ok_or_else(|| ApiError::invalid("expected", "send the SHA-256 of the value in hex"))?;
    let expected = expected
        .strip_prefix("sha256:")
        .unwrap_or(expected)
        .to_ascii_lowercase();
    if expected.len() != 64 || !expected.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(ApiError::invalid(
            "expected",
            "must be 64 hex digits (SHA-256)",
        ));
    }
    let app = load(apps.db(), &caller, &id).await?;
    let not_running = || {
        ApiError::conflict(
            "app_not_running",
            format!("app {id} has no running replicas to compare with; deploy or resume it"),
        )
    };
    let agent = apps.agent().ok_or_else(not_running)?;
    let running = agent
        .env_digest(&app.id, key)
        .await
        .map_err(|e| ApiError::Unavailable(format!("the host's agent: {e}")))?
        .ok_or_else(not_running)?;
    let matches = running.sha256.is_some_and(|a| {
        a.bytes()
            .zip(expected.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
    });
    Ok(Json(Verified {
        key: key.to_owned(),
        matches,
        deployment_id: running.deployment_id,
    }))
}

/// The variables of a request and the entries refused.
/// The variables to save, and the entries refused.
type Entries = (Vec<(String, String)>, Vec<Invalid>);

fn entries(input: &SetEnv) -> Result<Entries, ApiError> {
    let mut vars = BTreeMap::new();
    let mut invalid = Vec::new();
    match (&input.key, &input.value) {
        (Some(key), Some(value)) => match env::check(key, value) {
            None => {
                vars.insert(key.clone(), value.clone());
            }
            Some(message) => return Err(ApiError::invalid("key", message)),
        },
        (Some(_), None) => return Err(ApiError::invalid("value", "send the value with the key")),
        (None, Some(_)) => return Err(ApiError::invalid("key", "send the key with the value")),
        (None, None) => {}
    }
    match &input.env {
        None => {}
        Some(Value::Object(map)) => {
            for (name, value) in map {
                let Some(value) = value.as_str() else {
                    invalid.push(Invalid {
                        entry: name.clone(),
                        message: format!("the value of {name} must be a string"),
                    });
                    continue;
                };
                match env::check(name, value) {
                    None => {
                        vars.insert(name.clone(), value.to_owned());
                    }
                    Some(message) => invalid.push(Invalid {
                        entry: name.clone(),
                        message,
                    }),
                }
            }
        }
        Some(Value::String(text)) => {
            let (parsed, bad) = env::parse_dotenv(text);
            vars.extend(parsed);
            invalid.extend(bad);
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "env",
                "must be an object of names to values, or dotenv text",
            ));
        }
    }
    Ok((vars.into_iter().collect(), invalid))
}

/// A redeployment of the live component, when the app has one.
async fn redeploy(
    _apps: &Apps,
    tx: &mut plateau_store::Tx,
    app: &App,
    caller: &Caller,
) -> Result<Option<plateau_store::apps::deployments::Deployment>, ApiError> {
    Ok(pipeline::redeploy_env(tx, app, &caller.actor()).await?)
}
