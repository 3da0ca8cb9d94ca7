//! The apps API (spec section 4.4), added to the core router as an
//! extension; handlers reach the service through `Extension<Apps>`.
//! Another organisation's app answers 404, as a missing one does.

pub mod analytics;
pub mod apps;
pub mod autoscale;
pub mod bots;
pub mod cdn;
pub mod deploy;
pub mod domains;
pub mod env;
pub mod filters;
pub mod github;
pub mod logs;
pub mod migrate;
mod preview_db;
pub mod previews;
pub mod rules;
pub mod settings;
pub mod upload;
mod views;
pub mod volumes;
pub mod waf;
pub mod waf_managed;

use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_store::apps::{self as db, App};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use views::{AppView, DeploymentView};

/// The routes of `/apps`.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(apps::list, apps::create))
        .routes(routes!(apps::get, apps::rename, apps::delete))
        .routes(routes!(apps::restore))
        .routes(routes!(deploy::list, deploy::create))
        .routes(routes!(deploy::rollback))
        .routes(routes!(deploy::pause))
        .routes(routes!(deploy::resume))
        .routes(routes!(settings::get_scale, settings::put_scale))
        .routes(routes!(settings::get_resources, settings::put_resources))
        .routes(routes!(autoscale::get, autoscale::put))
        .routes(routes!(env::list, env::set, env::delete))
        .routes(routes!(env::verify))
        .routes(routes!(logs::list))
        .routes(routes!(domains::list, domains::attach, domains::detach))
        .routes(routes!(domains::verify))
        .routes(routes!(upload::create))
        .routes(routes!(upload::put))
        .routes(routes!(volumes::list, volumes::create))
        .routes(routes!(volumes::delete))
        .routes(routes!(volumes::backups, volumes::back_up))
        .routes(routes!(volumes::restore))
        .routes(routes!(github::get, github::put))
        .routes(routes!(github::push))
        .routes(routes!(previews::list, previews::create))
        .routes(routes!(previews::get, previews::delete))
        .routes(routes!(rules::list, rules::create))
        .routes(routes!(rules::update, rules::delete))
        .routes(routes!(rules::get_scale_out, rules::put_scale_out))
        .routes(routes!(cdn::get, cdn::put))
        .routes(routes!(cdn::purge))
        .routes(routes!(analytics::get, analytics::put))
        .routes(routes!(filters::list, filters::upload))
        .routes(routes!(filters::admin_upload))
        .routes(routes!(filters::get, filters::put))
        .routes(routes!(waf::list, waf::create))
        .routes(routes!(waf::get, waf::update, waf::delete))
        .routes(routes!(waf::events))
        .routes(routes!(waf_managed::get, waf_managed::put))
        .routes(routes!(bots::get, bots::put, bots::delete))
        .routes(routes!(bots::events))
        .routes(routes!(migrate::migrate))
        .routes(routes!(migrate::runners_list))
        .routes(routes!(migrate::evacuate))
}

pub(crate) fn not_found(id: &str) -> ApiError {
    ApiError::not_found(format!("app {id} does not exist"))
}

/// The caller's app `id`, in the trash or not; 404 for another
/// organisation's app or, for a project-limited token, another project's.
pub(crate) async fn load(
    db: &plateau_store::Db,
    caller: &Caller,
    id: &str,
) -> Result<App, ApiError> {
    let app = db::get(db, &caller.org_id, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    visible(caller, &app, id)?;
    Ok(app)
}

/// [`load`] inside a write transaction, refusing an app in the trash
/// and a preview's app (changed only through its app's previews).
pub(crate) async fn load_live_in(
    tx: &mut plateau_store::Tx,
    caller: &Caller,
    id: &str,
) -> Result<App, ApiError> {
    let app = db::get_in(tx, &caller.org_id, id)
        .await?
        .ok_or_else(|| not_found(id))?;
    visible(caller, &app, id)?;
    if app.deleted_at.is_some() {
        return Err(ApiError::conflict(
            "app_in_trash",
            format!("app {id} is in the trash; restore it first"),
        ));
    }
    if let Some(p) = plateau_store::apps::previews::of_app_in(tx, &app.id).await? {
        return Err(ApiError::conflict(
            "preview_app",
            format!(
                "app {id} is preview {} of app {}; change it through /apps/{}/previews",
                p.id, p.parent_id, p.parent_id
            ),
        ));
    }
    Ok(app)
}

fn visible(caller: &Caller, app: &App, id: &str) -> Result<(), ApiError> {
    match &caller.project_id {
        Some(only) if *only != app.project_id => Err(not_found(id)),
        _ => Ok(()),
    }
}

/// The pull identity of a request: its organisation and token.
pub(crate) fn pull_as(caller: &Caller) -> crate::image::PullAs {
    crate::image::PullAs {
        org_id: caller.org_id.clone(),
        token_id: caller.token_id.clone(),
        user_id: Some(caller.user_id.clone()),
    }
}

/// Refuses a deployment of `image` that cannot work: a reference the
/// registry does not have for the organisation (422 naming `image`), or
/// a registry that does not answer (502), before anything is stored.
pub(crate) async fn check_image(
    apps: &crate::Apps,
    caller: &Caller,
    image: &str,
) -> Result<(), ApiError> {
    use crate::image::{Unavailable, check_exists};
    match check_exists(
        image,
        &pull_as(caller),
        &*apps.inner.registry,
        &apps.config().allowed_registries,
    )
    .await
    {
        Ok(()) => Ok(()),
        Err(Unavailable::Absent(message)) => Err(ApiError::invalid("image", message)),
        Err(Unavailable::Unreachable(detail)) => Err(ApiError::BadGateway {
            code: "registry_unreachable",
            detail,
        }),
    }
}
