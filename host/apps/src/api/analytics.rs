//! `/apps/{id}/analytics`: whether the app's edge reports its page views
//! (each GET answered with an HTML document) to the analytics plugin, for
//! web analytics without a script (`plateau_apps::analytics`). The
//! plugin's site for the app's host name (or the site tied to the app)
//! counts them. The agent follows the switch at once when it answers,
//! else when it next follows the app.

use axum::extract::Path;
use axum::{Extension, Json};
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_core::time;
use plateau_store::apps::analytics as db;
use plateau_store::events;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{load, load_live_in};
use crate::Apps;
use crate::pipeline::event;

#[derive(Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyticsSwitch {
    /// Whether the edge reports the app's page views.
    pub enabled: bool,
}

/// Whether the app's page views are reported.
#[utoipa::path(get, path = "/apps/{id}/analytics", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "the switch", body = AnalyticsSwitch)))]
pub async fn get(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<AnalyticsSwitch>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    Ok(Json(AnalyticsSwitch {
        enabled: db::enabled(apps.db(), &app.id).await?,
    }))
}

/// Turn the reporting of the app's page views on or off.
#[utoipa::path(put, path = "/apps/{id}/analytics", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = AnalyticsSwitch,
    responses((status = 200, description = "the switch", body = AnalyticsSwitch)))]
pub async fn put(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<AnalyticsSwitch>,
) -> Result<Json<AnalyticsSwitch>, ApiError> {
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    db::set_enabled(&mut tx, &app.id, input.enabled, now).await?;
    let e = event(&app, "app.analytics.updated", "update", &caller.actor())
        .data(json!({ "enabled": input.enabled }));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    apps.follow_on_agent(&app.id).await;
    Ok(Json(AnalyticsSwitch {
        enabled: input.enabled,
    }))
}
