//! `/waf/managed`: the organisation's switch for the managed rule set
//! (`plateau_waf_expr::managed`: SQL injection, cross-site scripting,
//! path traversal, scanner user agents, protocol anomalies), and the action
//! its matches take. It runs on every app of the organisation after the
//! organisation's own rules, so a `skip` rule exempts requests from it.

use axum::{Extension, Json};
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_core::time;
use plateau_store::events::{self, NewEvent};
use plateau_store::waf as db;
use plateau_waf_expr::managed::MANAGED_RULES;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use crate::Apps;
use crate::waf::WafAction;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ManagedSwitch {
    pub enabled: bool,
    /// `log` (the default: see what it would block first), `block` or
    /// `challenge`.
    pub action: Option<String>,
}

#[derive(Serialize, ToSchema)]
pub struct ManagedRuleView {
    /// The `ruleId` of its events.
    pub id: String,
    pub category: String,
    pub description: String,
    pub expression: String,
}

#[derive(Serialize, ToSchema)]
pub struct ManagedView {
    pub enabled: bool,
    pub action: String,
    /// The rules of the set, in the order they run.
    pub rules: Vec<ManagedRuleView>,
}

fn view(enabled: bool, action: String) -> ManagedView {
    ManagedView {
        enabled,
        action,
        rules: MANAGED_RULES
            .iter()
            .map(|r| ManagedRuleView {
                id: r.id.to_owned(),
                category: r.category.to_owned(),
                description: r.description.to_owned(),
                expression: r.expression.to_owned(),
            })
            .collect(),
    }
}

/// Whether the managed rule set runs on the organisation's apps, and its
/// rules.
#[utoipa::path(get, path = "/waf/managed", tag = "waf",
    security(("bearer" = ["waf:read"])),
    responses((status = 200, description = "the switch and the rules", body = ManagedView)))]
pub async fn get(
    Extension(apps): Extension<Apps>,
    caller: Caller,
) -> Result<Json<ManagedView>, ApiError> {
    let (enabled, action) = match db::managed(apps.db(), &caller.org_id).await? {
        Some((enabled, action, _)) => (enabled, action),
        None => (false, "log".to_owned()),
    };
    Ok(Json(view(enabled, action)))
}

/// Switch the managed rule set on or off for every app of the
/// organisation; the edges apply it at once.
#[utoipa::path(put, path = "/waf/managed", tag = "waf",
    security(("bearer" = ["waf:write"])),
    request_body = ManagedSwitch,
    responses((status = 200, description = "the switch and the rules", body = ManagedView),
              (status = 400, description = "an unknown action", body = plateau_api::error::Problem)))]
pub async fn put(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Body(input): Body<ManagedSwitch>,
) -> Result<Json<ManagedView>, ApiError> {
    let action = input.action.unwrap_or_else(|| "log".to_owned());
    if !matches!(
        WafAction::parse(&action),
        Some(WafAction::Log | WafAction::Block | WafAction::Challenge)
    ) {
        return Err(ApiError::invalid(
            "action",
            "must be log, block or challenge",
        ));
    }
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    db::set_managed(&mut tx, &caller.org_id, input.enabled, &action, now).await?;
    let e = NewEvent::audited(
        &caller.org_id,
        "waf.managed.updated",
        "settings",
        "update",
        &caller.actor(),
    )
    .data(json!({ "enabled": input.enabled, "action": action }));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    if let Ok(all) = plateau_store::apps::active(apps.db()).await {
        for app in all.iter().filter(|a| a.org_id == caller.org_id) {
            apps.nudge_agent(&app.id);
        }
    }
    Ok(Json(view(input.enabled, action)))
}
