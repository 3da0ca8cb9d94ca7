//! `/apps/{id}/rules` and `/apps/{id}/scale-out`: the app's redirect,
//! rewrite and header rules (`plateau-edge-rules` says what they match and
//! in which order), applied by the edge while the app's scale-out is on.
//! A change reaches the edge at once: the agent is asked to follow the app.

use axum::extract::Path;
use axum::http::StatusCode;
use axum::{Extension, Json};
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_edge_rules::{Action, RuleSet, RuleSpec};
use plateau_store::apps::rules::{self as db, MAX_RULES, RuleRow};
use plateau_store::events;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{load, load_live_in};
use crate::Apps;
use crate::pipeline::event;

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewRule {
    /// `redirect`, `rewrite` or `header`.
    pub r#type: String,
    /// A path pattern: literal segments, `:name` (one segment), `:name*` or
    /// `:name+` (the rest of the path, last).
    pub source: String,
    /// redirect and rewrite: where to, with `:name` filled from `source`;
    /// a redirect may name an `http(s)://` URL.
    pub destination: Option<String>,
    /// header: the response header to set or remove.
    pub header_name: Option<String>,
    /// header: the value to set; none removes the header.
    pub header_value: Option<String>,
    /// redirect: 301, 302, 307 or 308 (default 308).
    pub status: Option<u16>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleSwitch {
    pub enabled: bool,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RuleView {
    pub id: String,
    pub r#type: String,
    pub source: String,
    pub destination: Option<String>,
    pub header_name: Option<String>,
    pub header_value: Option<String>,
    pub status: Option<u16>,
    pub enabled: bool,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct RuleList {
    /// In the order the edge applies them (see the `apps` guide).
    pub items: Vec<RuleView>,
}

#[derive(Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScaleOut {
    /// Whether the central edge serves the app with its rules.
    pub enabled: bool,
}

/// The app's rules, in the order they apply.
#[utoipa::path(get, path = "/apps/{id}/rules", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "the rules", body = RuleList)))]
pub async fn list(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<RuleList>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let rows = db::list(apps.db(), &app.id).await?;
    Ok(Json(RuleList {
        items: rows.into_iter().filter_map(view).collect(),
    }))
}

/// Add a rule, after the others; it applies at once while scale-out is on.
#[utoipa::path(post, path = "/apps/{id}/rules", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = NewRule,
    responses((status = 201, description = "the rule", body = RuleView),
              (status = 400, description = "an invalid rule: the field, and the column in it", body = plateau_api::error::Problem),
              (status = 409, description = "the app has the most rules it may have", body = plateau_api::error::Problem)))]
pub async fn create(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<NewRule>,
) -> Result<(StatusCode, Json<RuleView>), ApiError> {
    load(apps.db(), &caller, &id).await?;
    let spec = spec_of(input)?;
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    if db::count_in(&mut tx, &app.id).await? >= MAX_RULES {
        return Err(ApiError::conflict(
            "rule_limit_reached",
            format!("an app has at most {MAX_RULES} rules; delete one first"),
        ));
    }
    let row = RuleRow {
        id: new_id("rul"),
        app_id: app.id.clone(),
        spec: serde_json::to_string(&spec).map_err(|e| ApiError::Internal(e.to_string()))?,
        enabled: 1,
        created_at: now,
        updated_at: now,
    };
    db::insert(&mut tx, &row).await?;
    let e = event(&app, "app.rule.created", "create", &caller.actor())
        .data(json!({ "ruleId": row.id, "type": kind(&spec.action) }));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    apps.follow_on_agent(&app.id).await;
    let view = view(row).ok_or_else(|| ApiError::Internal("a stored rule does not read".into()))?;
    Ok((StatusCode::CREATED, Json(view)))
}

/// Enable or disable a rule, without a redeploy.
#[utoipa::path(patch, path = "/apps/{id}/rules/{ruleId}", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id"),
           ("ruleId" = String, Path, description = "rule id")),
    request_body = RuleSwitch,
    responses((status = 200, description = "the rule", body = RuleView)))]
pub async fn update(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path((id, rule_id)): Path<(String, String)>,
    Body(input): Body<RuleSwitch>,
) -> Result<Json<RuleView>, ApiError> {
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    let mut row = rule_in(&mut tx, &app.id, &rule_id).await?;
    db::set_enabled(&mut tx, &row.id, input.enabled, now).await?;
    let e = event(&app, "app.rule.updated", "update", &caller.actor())
        .data(json!({ "ruleId": row.id, "enabled": input.enabled }));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    apps.follow_on_agent(&app.id).await;
    row.enabled = i64::from(input.enabled);
    row.updated_at = now;
    view(row)
        .map(Json)
        .ok_or_else(|| ApiError::Internal("a stored rule does not read".into()))
}

/// Delete a rule; the edge stops applying it at once.
#[utoipa::path(delete, path = "/apps/{id}/rules/{ruleId}", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id"),
           ("ruleId" = String, Path, description = "rule id")),
    responses((status = 200, description = "the deleted rule", body = RuleView)))]
pub async fn delete(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path((id, rule_id)): Path<(String, String)>,
) -> Result<Json<RuleView>, ApiError> {
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    let row = rule_in(&mut tx, &app.id, &rule_id).await?;
    db::delete(&mut tx, &row.id).await?;
    let e = event(&app, "app.rule.deleted", "delete", &caller.actor())
        .data(json!({ "ruleId": row.id }));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    apps.follow_on_agent(&app.id).await;
    view(row)
        .map(Json)
        .ok_or_else(|| ApiError::Internal("a stored rule does not read".into()))
}

/// Whether the central edge serves the app with its rules.
#[utoipa::path(get, path = "/apps/{id}/scale-out", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id")),
    responses((status = 200, description = "the switch", body = ScaleOut)))]
pub async fn get_scale_out(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ScaleOut>, ApiError> {
    let app = load(apps.db(), &caller, &id).await?;
    let enabled = db::scale_out(apps.db(), &app.id).await?;
    Ok(Json(ScaleOut { enabled }))
}

/// Turn scale-out on (the edge applies the app's enabled rules) or off.
#[utoipa::path(put, path = "/apps/{id}/scale-out", tag = "apps",
    security(("bearer" = ["apps:write"])),
    params(("id" = String, Path, description = "app id")),
    request_body = ScaleOut,
    responses((status = 200, description = "the switch", body = ScaleOut)))]
pub async fn put_scale_out(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<ScaleOut>,
) -> Result<Json<ScaleOut>, ApiError> {
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    db::set_scale_out(&mut tx, &app.id, input.enabled, now).await?;
    let e = event(&app, "app.scale_out.updated", "update", &caller.actor())
        .data(json!({ "enabled": input.enabled }));
    events::record(&mut tx, &e, now).await?;
    tx.commit_last().await?;
    apps.follow_on_agent(&app.id).await;
    Ok(Json(input))
}

async fn rule_in(
    tx: &mut plateau_store::Tx,
    app_id: &str,
    rule_id: &str,
) -> Result<RuleRow, ApiError> {
    db::get_in(tx, app_id, rule_id).await?.ok_or_else(|| {
        ApiError::not_found(format!("rule {rule_id} of app {app_id} does not exist"))
    })
}

/// The API's rule as the edge's, checked: a 400 names the field and the
/// column of what is wrong.
fn spec_of(input: NewRule) -> Result<RuleSpec, ApiError> {
    let required = |field: &str, v: Option<String>| {
        v.ok_or_else(|| ApiError::invalid(field, format!("a {} rule needs it", input.r#type)))
    };
    let action = match input.r#type.as_str() {
        "redirect" => Action::Redirect {
            destination: required("destination", input.destination.clone())?,
            status: input.status.unwrap_or(308),
        },
        "rewrite" => Action::Rewrite {
            destination: required("destination", input.destination.clone())?,
        },
        "header" => Action::Header {
            header_name: required("headerName", input.header_name.clone())?,
            header_value: input.header_value.clone(),
        },
        _ => {
            return Err(ApiError::invalid(
                "type",
                "must be redirect, rewrite or header",
            ));
        }
    };
    let spec = RuleSpec {
        source: input.source,
        action,
    };
    RuleSet::compile(std::slice::from_ref(&spec)).map_err(|(_, e)| {
        ApiError::invalid(e.field, format!("column {}: {}", e.column, e.message))
    })?;
    Ok(spec)
}

fn kind(action: &Action) -> &'static str {
    match action {
        Action::Redirect { .. } => "redirect",
        Action::Rewrite { .. } => "rewrite",
        Action::Header { .. } => "header",
    }
}

fn view(row: RuleRow) -> Option<RuleView> {
    let spec: RuleSpec = serde_json::from_str(&row.spec).ok()?;
    let (destination, header_name, header_value, status) = match &spec.action {
        Action::Redirect {
            destination,
            status,
        } => (Some(destination.clone()), None, None, Some(*status)),
        Action::Rewrite { destination } => (Some(destination.clone()), None, None, None),
        Action::Header {
            header_name,
            header_value,
        } => (None, Some(header_name.clone()), header_value.clone(), None),
    };
    Some(RuleView {
        r#type: kind(&spec.action).to_owned(),
        id: row.id,
        source: spec.source,
        destination,
        header_name,
        header_value,
        status,
        enabled: row.enabled == 1,
        created_at: time::to_rfc3339(row.created_at),
        updated_at: time::to_rfc3339(row.updated_at),
    })
}
