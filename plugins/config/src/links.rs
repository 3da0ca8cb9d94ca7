//! Apps linked to an environment: an app gets the environment's resolved
//! values as variables (the host's `app-env` capability seals them and
//! redeploys the app when they change), and every change of the
//! environment syncs them again.
//!
//! A link, an unlink and every change schedule the job `sync:{app}`,
//! committed with the change; the job reads the link and the environment
//! as they are when it runs and sets the app's layer under the revision
//! `seq << 32 | version`, which the host applies only when it is newer
//! than the last it applied, so syncs that race or run twice converge on
//! the newest. A sync that fails for want of the host is retried by the
//! scheduler; one whose app is gone records why on the link.

use plateau_sdk::app_env::{self, AppEnvError, Owner};
use plateau_sdk::jobs::Job;
use plateau_sdk::{
    ApiError, Bucket, Namespace, NewEvent, Params, Request, Response, clock, log, paginate_kv_with,
};
use serde_json::json;

use crate::record::Link;
use crate::resolve;
use crate::store::{self, load_env};
use crate::views::LinkView;

/// Linking changes an app's environment: it needs the apps' scope too.
pub const APPS_SCOPE: &str = "apps:write";

fn not_linked(project: &str, env: &str, app: &str) -> ApiError {
    ApiError::not_found(format!(
        "app {app} is not linked to environment {project}/{env}"
    ))
}

/// Writes `link` over the bytes read; 409 when a concurrent request
/// changed it first.
fn swap(bucket: &Bucket, app: &str, read: Option<&[u8]>, link: &Link) -> Result<(), ApiError> {
    let next = serde_json::to_vec(link)
        .map_err(|e| ApiError::internal(format!("a link does not serialize: {e}")))?;
    if !bucket.compare_and_swap(&Link::key(app), read, Some(&next))? {
        return Err(ApiError::conflict(format!(
            "the link of app {app} changed concurrently: retry the request"
        )));
    }
    Ok(())
}

/// `PUT .../environments/{env}/apps/{app}`: links the app (moving it from
/// another environment); 200 with the link, synced in the background.
pub fn link(req: &Request, params: &Params) -> Result<Response, ApiError> {
    req.caller.require_scope(APPS_SCOPE)?;
    let org = req.caller.organization()?.to_owned();
    let (project, name, app_id) = (&params["project"], &params["env"], &params["app"]);
    let bucket = Bucket::caller()?;
    let (env, _) = load_env(&bucket, project, name)?;
    let app = app_env::get(&Owner::Caller, app_id)?;
    let previous_raw = bucket.get_raw(&Link::key(&app.id))?;
    let previous: Option<Link> = match &previous_raw {
        Some(raw) => Some(
            serde_json::from_slice(raw)
                .map_err(|e| ApiError::internal(format!("the link of app {}: {e}", app.id)))?,
        ),
        None => None,
    };
    if let Some(p) = &previous
        && let (Some(pp), Some(pe)) = (&p.project, &p.environment)
    {
        if pp == project && pe == name {
            let view =
                LinkView::of(p).ok_or_else(|| ApiError::internal("a link without environment"))?;
            return Ok(Response::ok(&view));
        }
        bucket.delete(&Link::index(pp, pe, &app.id))?;
    }
    let link = Link {
        app_id: app.id.clone(),
        app_name: app.name.clone(),
        project: Some(env.project.clone()),
        environment: Some(env.name.clone()),
        seq: previous.as_ref().map_or(1, |p| p.seq + 1),
        linked_at: clock::now_rfc3339(),
        synced_version: None,
        synced_at: None,
        deployment: None,
        last_error: None,
    };
    swap(&bucket, &app.id, previous_raw.as_deref(), &link)?;
    bucket.set_raw(&Link::index(project, name, &app.id), b"")?;
    store::schedule_sync(&org, &app.id)?;
    NewEvent::new("config.app.linked", "update")
        .resource("app", &app.id)
        .data(&json!({ "project": project, "environment": name, "appId": app.id }))
        .audit()
        .emit()?;
    let view =
        LinkView::of(&link).ok_or_else(|| ApiError::internal("a link without environment"))?;
    Ok(Response::ok(&view))
}

/// `DELETE .../environments/{env}/apps/{app}`: 204; the app loses the
/// environment's values and is redeployed without them.
pub fn unlink(req: &Request, params: &Params) -> Result<Response, ApiError> {
    req.caller.require_scope(APPS_SCOPE)?;
    let org = req.caller.organization()?.to_owned();
    let (project, name, app_id) = (&params["project"], &params["env"], &params["app"]);
    let bucket = Bucket::caller()?;
    load_env(&bucket, project, name)?;
    let raw = bucket
        .get_raw(&Link::key(app_id))?
        .ok_or_else(|| not_linked(project, name, app_id))?;
    let mut link: Link = serde_json::from_slice(&raw)
        .map_err(|e| ApiError::internal(format!("the link of app {app_id}: {e}")))?;
    if link.project.as_deref() != Some(project) || link.environment.as_deref() != Some(name) {
        return Err(not_linked(project, name, app_id));
    }
    link.project = None;
    link.environment = None;
    link.seq += 1;
    link.synced_version = None;
    link.synced_at = None;
    link.deployment = None;
    link.last_error = None;
    swap(&bucket, app_id, Some(&raw), &link)?;
    bucket.delete(&Link::index(project, name, app_id))?;
    store::schedule_sync(&org, app_id)?;
    NewEvent::new("config.app.unlinked", "update")
        .resource("app", app_id)
        .data(&json!({ "project": project, "environment": name, "appId": app_id }))
        .audit()
        .emit()?;
    Ok(Response::no_content())
}

/// `GET .../environments/{env}/apps`: the linked apps and their syncs.
pub fn list(req: &Request, params: &Params) -> Result<Response, ApiError> {
    let (project, name) = (&params["project"], &params["env"]);
    let bucket = Bucket::caller()?;
    load_env(&bucket, project, name)?;
    let prefix = Link::index_prefix(project, name);
    let page = paginate_kv_with(&bucket, &prefix, &req.page_query()?, |entry| {
        let app = entry.key.trim_start_matches(&prefix);
        let link: Link = bucket
            .get(&Link::key(app))?
            .ok_or_else(|| ApiError::internal(format!("the link of app {app} is missing")))?;
        LinkView::of(&link).ok_or_else(|| ApiError::internal("a link without environment"))
    })?;
    Ok(page.into_response())
}

/// Job `sync:{app}`: sets the app's layer to the linked environment's
/// resolved values (none once unlinked).
pub fn sync(job: &Job) -> Result<(), String> {
    let Some(org) = job.organization_id.clone() else {
        log::warn(&format!("sync job {} has no organisation", job.key));
        return Ok(());
    };
    let ns = Namespace::Organization(org.clone());
    let bucket = Bucket::organization(org.clone()).map_err(|e| e.to_string())?;
    let app = job.payload.as_str();
    let Some(raw) = bucket.get_raw(&Link::key(app)).map_err(|e| e.to_string())? else {
        return Ok(());
    };
    let mut link: Link = serde_json::from_slice(&raw).map_err(|e| e.to_string())?;
    let (version, source, vars) = match (&link.project, &link.environment) {
        (Some(project), Some(name)) => {
            let (env, _) = load_env(&bucket, project, name).map_err(|e| e.detail().to_owned())?;
            let current = store::current(&bucket, &env).map_err(|e| e.detail().to_owned())?;
            let values = resolve::all(&ns, &current).map_err(|e| e.detail().to_owned())?;
            (
                env.version,
                env.source(),
                values.into_iter().collect::<Vec<_>>(),
            )
        }
        _ => (0, "config".to_owned(), Vec::new()),
    };
    let revision = link.revision(version);
    match app_env::set(&Owner::Organization(org), app, revision, &source, &vars) {
        Ok(outcome) => {
            if !outcome.applied {
                return Ok(());
            }
            link.synced_version = link.environment.as_ref().map(|_| version);
            link.synced_at = Some(clock::now_rfc3339());
            link.deployment = outcome.deployment.or(link.deployment);
            link.last_error = None;
        }
        Err(AppEnvError::NotFound(why)) | Err(AppEnvError::Invalid(why)) => {
            link.last_error = Some(why);
        }
        Err(e) => return Err(e.to_string()),
    }
    // Only over the link this sync read: a link or unlink since then
    // scheduled a sync of its own, and is never undone here.
    if link.environment.is_some() {
        let next = serde_json::to_vec(&link).map_err(|e| e.to_string())?;
        bucket
            .compare_and_swap(&Link::key(app), Some(&raw), Some(&next))
            .map_err(|e| e.to_string())?;
    }
    Ok(())
}
