//! The firewall's API (`/waf/rules`, `/waf/events`; scopes `waf:read`,
//! `waf:write`): rules in the `plateau-waf-expr` language, for one app or
//! every app of the organisation, run by the edge lowest priority first
//! ([`crate::waf`] says what each action does); and the matches they
//! recorded, newest first. A change reaches the edges at once: the agent
//! is asked to follow the apps the rule covers.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_api::pagination::{Page, Pager};
use plateau_api::routes::{Pairs, page_and_filters, param};
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_store::events::{self, NewEvent};
use plateau_store::waf::{self as db, EventFilter, EventRow, MAX_RULES, RuleRow};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::load;
use crate::Apps;
use crate::waf::WafAction;

/// The priority of a rule that names none.
const DEFAULT_PRIORITY: i64 = 1000;

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewWafRule {
    /// An expression such as `http.request.uri.path contains "/wp-admin"`
    /// (fields, operators and functions: the `waf` guide).
    pub expression: String,
    /// `block`, `log`, `skip` or `challenge`.
    #[schema(value_type = WafAction)]
    pub action: String,
    /// Lower runs first; default 1000.
    pub priority: Option<i64>,
    /// Default true.
    pub enabled: Option<bool>,
    /// Only this app; default every app of the organisation.
    pub app_id: Option<String>,
    /// Up to 500 characters.
    pub description: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WafRulePatch {
    pub expression: Option<String>,
    #[schema(value_type = Option<WafAction>)]
    pub action: Option<String>,
    pub priority: Option<i64>,
    pub enabled: Option<bool>,
    pub description: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WafRuleView {
    pub id: String,
    pub app_id: Option<String>,
    pub description: String,
    pub expression: String,
    pub action: String,
    pub priority: i64,
    pub enabled: bool,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Serialize, ToSchema)]
pub struct WafRuleList {
    /// In the order the edge runs them.
    pub items: Vec<WafRuleView>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WafEventView {
    pub id: String,
    pub app_id: String,
    pub rule_id: String,
    pub action: String,
    pub method: String,
    pub host: String,
    /// The path as sent, without the query string.
    pub path: String,
    /// The client's network (/24 or /48), never its whole address.
    pub client_network: String,
    pub user_agent: String,
    pub at: String,
}

fn view(r: RuleRow) -> WafRuleView {
    WafRuleView {
        id: r.id,
        app_id: r.app_id,
        description: r.description,
        expression: r.expression,
        action: r.action,
        priority: r.priority,
        enabled: r.enabled == 1,
        created_at: time::to_rfc3339(r.created_at),
        updated_at: time::to_rfc3339(r.updated_at),
    }
}

/// Checks a rule's fields: the expression compiles (a 400 names the line
/// and column), the action is known, the description is short.
fn check(r: &RuleRow) -> Result<(), ApiError> {
    plateau_waf_expr::compile(&r.expression)
        .map_err(|e| ApiError::invalid("expression", e.to_string()))?;
    if WafAction::parse(&r.action).is_none() {
        return Err(ApiError::invalid(
            "action",
            "must be block, log, skip or challenge",
        ));
    }
    if r.description.chars().count() > 500 {
        return Err(ApiError::invalid("description", "at most 500 characters"));
    }
    Ok(())
}

/// The organisation's firewall rules in the order they run (with
/// `appId`, those that apply to that app).
#[utoipa::path(get, path = "/waf/rules", tag = "waf",
    security(("bearer" = ["waf:read"])),
    params(("appId" = Option<String>, Query, min_length = 1, description = "only the rules that apply to this app")),
    responses((status = 200, description = "the rules", body = WafRuleList),
              (status = 404, description = "appId names no app of the organisation", body = plateau_api::error::Problem)))]
pub async fn list(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<WafRuleList>, ApiError> {
    let app_id = match param(&pairs, "appId") {
        Some("") => return Err(ApiError::invalid("appId", "must name an app")),
        Some(id) => Some(load(apps.db(), &caller, id).await?.id),
        None => None,
    };
    let rows = db::list(apps.db(), &caller.org_id, app_id.as_deref()).await?;
    Ok(Json(WafRuleList {
        items: rows.into_iter().map(view).collect(),
    }))
}

/// Add a firewall rule; the edges apply it at once.
#[utoipa::path(post, path = "/waf/rules", tag = "waf",
    security(("bearer" = ["waf:write"])),
    request_body = NewWafRule,
    responses((status = 201, description = "the rule", body = WafRuleView),
              (status = 400, description = "an invalid field; for the expression, the line and column of the error", body = plateau_api::error::Problem),
              (status = 409, description = "the organisation has the most rules it may have", body = plateau_api::error::Problem)))]
pub async fn create(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Body(input): Body<NewWafRule>,
) -> Result<(StatusCode, Json<WafRuleView>), ApiError> {
    let app_id = match &input.app_id {
        Some(id) => Some(
            load(apps.db(), &caller, id)
                .await
                .map_err(|_| {
                    ApiError::invalid("appId", format!("no app {id} in this organisation"))
                })?
                .id,
        ),
        None => None,
    };
    let now = time::now_ms();
    let row = RuleRow {
        id: new_id("waf"),
        org_id: caller.org_id.clone(),
        app_id,
        description: input.description.unwrap_or_default(),
        expression: input.expression,
        action: input.action,
        priority: input.priority.unwrap_or(DEFAULT_PRIORITY),
        enabled: i64::from(input.enabled.unwrap_or(true)),
        created_at: now,
        updated_at: now,
    };
    check(&row)?;
    let mut tx = apps.db().begin().await?;
    if db::count_in(&mut tx, &caller.org_id).await? >= MAX_RULES {
        return Err(ApiError::conflict(
            "rule_limit_reached",
            format!("an organisation has at most {MAX_RULES} firewall rules; delete one first"),
        ));
    }
    db::insert(&mut tx, &row).await?;
    record(&mut tx, &caller, "waf.rule.created", "create", &row, now).await?;
    tx.commit_last().await?;
    follow(&apps, &row).await;
    Ok((StatusCode::CREATED, Json(view(row))))
}

/// One firewall rule.
#[utoipa::path(get, path = "/waf/rules/{id}", tag = "waf",
    security(("bearer" = ["waf:read"])),
    params(("id" = String, Path, description = "rule id")),
    responses((status = 200, description = "the rule", body = WafRuleView)))]
pub async fn get(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<WafRuleView>, ApiError> {
    let mut tx = apps.db().begin().await?;
    let row = rule_in(&mut tx, &caller, &id).await?;
    tx.commit().await?;
    Ok(Json(view(row)))
}

/// Change a firewall rule (its expression, action, priority, switch or
/// description); the edges apply the change at once.
#[utoipa::path(patch, path = "/waf/rules/{id}", tag = "waf",
    security(("bearer" = ["waf:write"])),
    params(("id" = String, Path, description = "rule id")),
    request_body = WafRulePatch,
    responses((status = 200, description = "the rule", body = WafRuleView),
              (status = 400, description = "an invalid field; for the expression, the line and column of the error", body = plateau_api::error::Problem)))]
pub async fn update(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<WafRulePatch>,
) -> Result<Json<WafRuleView>, ApiError> {
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let mut row = rule_in(&mut tx, &caller, &id).await?;
    if let Some(expression) = input.expression {
        row.expression = expression;
    }
    if let Some(action) = input.action {
        row.action = action;
    }
    if let Some(priority) = input.priority {
        row.priority = priority;
    }
    if let Some(enabled) = input.enabled {
        row.enabled = i64::from(enabled);
    }
    if let Some(description) = input.description {
        row.description = description;
    }
    row.updated_at = now;
    check(&row)?;
    db::update(&mut tx, &row).await?;
    record(&mut tx, &caller, "waf.rule.updated", "update", &row, now).await?;
    tx.commit_last().await?;
    follow(&apps, &row).await;
    Ok(Json(view(row)))
}

/// Delete a firewall rule; the edges stop applying it at once.
#[utoipa::path(delete, path = "/waf/rules/{id}", tag = "waf",
    security(("bearer" = ["waf:write"])),
    params(("id" = String, Path, description = "rule id")),
    responses((status = 200, description = "the deleted rule", body = WafRuleView)))]
pub async fn delete(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<WafRuleView>, ApiError> {
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let row = rule_in(&mut tx, &caller, &id).await?;
    db::delete(&mut tx, &caller.org_id, &row.id).await?;
    record(&mut tx, &caller, "waf.rule.deleted", "delete", &row, now).await?;
    tx.commit_last().await?;
    follow(&apps, &row).await;
    Ok(Json(view(row)))
}

/// What the organisation's rules matched, newest first: the rule, the
/// action and the request's facts (no body, query string or header but
/// the user agent; the client's network, not its address).
#[utoipa::path(get, path = "/waf/events", tag = "waf",
    security(("bearer" = ["waf:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page"),
           ("appId" = Option<String>, Query, description = "only this app's"),
           ("ruleId" = Option<String>, Query, description = "only this rule's"),
           ("action" = Option<String>, Query, description = "only this action's")),
    responses((status = 200, description = "the events", body = Page<WafEventView>)))]
pub async fn events(
    State(state): State<AppState>,
    Extension(apps): Extension<Apps>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<WafEventView>>, ApiError> {
    list_events(&state, &apps, &caller, &pairs, "waf_events", None).await
}

/// A page of the organisation's firewall events (`rule_prefix`: only the
/// rules under it, as the bot policy's `bots.`), filtered by the query's
/// `appId`, `ruleId` and `action`; `kind` names the cursor's list.
pub(crate) async fn list_events(
    state: &AppState,
    apps: &Apps,
    caller: &Caller,
    pairs: &Pairs,
    kind: &'static str,
    rule_prefix: Option<&str>,
) -> Result<Json<Page<WafEventView>>, ApiError> {
    let (page, filters) = page_and_filters(pairs);
    let pager = Pager::new(state.cursors(), &page, kind, &caller.org_id, filters)?;
    let filter = EventFilter {
        app_id: param(pairs, "appId").map(str::to_owned),
        rule_id: param(pairs, "ruleId").map(str::to_owned),
        action: param(pairs, "action").map(str::to_owned),
        rule_prefix: rule_prefix.map(str::to_owned),
    };
    let listed = db::events(apps.db(), &caller.org_id, &filter, pager.keyset()).await?;
    Ok(Json(pager.finish(listed, |e| e.id.clone(), event_view)))
}

pub(crate) fn event_view(e: EventRow) -> WafEventView {
    WafEventView {
        id: e.id,
        app_id: e.app_id,
        rule_id: e.rule_id,
        action: e.action,
        method: e.method,
        host: e.host,
        path: e.path,
        client_network: e.client_net,
        user_agent: e.user_agent,
        at: time::to_rfc3339(e.at),
    }
}

async fn rule_in(
    tx: &mut plateau_store::Tx,
    caller: &Caller,
    id: &str,
) -> Result<RuleRow, ApiError> {
    db::get_in(tx, &caller.org_id, id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("firewall rule {id} does not exist")))
}

async fn record(
    tx: &mut plateau_store::Tx,
    caller: &Caller,
    kind: &str,
    action: &str,
    row: &RuleRow,
    now: i64,
) -> Result<(), ApiError> {
    let e = NewEvent::audited(&caller.org_id, kind, "settings", action, &caller.actor())
        .resource("waf_rule", &row.id)
        .data(json!({ "action": row.action, "appId": row.app_id, "enabled": row.enabled == 1 }));
    events::record(tx, &e, now).await?;
    Ok(())
}

/// Has the agent follow the apps `row` covers now.
async fn follow(apps: &Apps, row: &RuleRow) {
    follow_apps(apps, &row.org_id, row.app_id.as_deref()).await;
}

/// Has the agent follow `app_id` now, or (None) every app of `org_id`.
pub(crate) async fn follow_apps(apps: &Apps, org_id: &str, app_id: Option<&str>) {
    match app_id {
        Some(app_id) => apps.follow_on_agent(app_id).await,
        None => {
            if let Ok(all) = plateau_store::apps::active(apps.db()).await {
                for app in all.iter().filter(|a| a.org_id == org_id) {
                    apps.nudge_agent(&app.id);
                }
            }
        }
    }
}
