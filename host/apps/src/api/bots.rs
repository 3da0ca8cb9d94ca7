//! The bot policy's API (`/bots/policy`, `/bots/events`; scopes
//! `bots:read`, `bots:write`): the organisation's policy, and each app's
//! own, which replaces the organisation's for that app
//! ([`crate::bots`] says what the edge does with it); and the decisions it
//! recorded, newest first (they are firewall events too, under rule ids
//! `bots.<class>`). A change reaches the edges at once.

use axum::extract::State;
use axum::{Extension, Json};
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_api::pagination::Page;
use plateau_api::routes::{Pairs, param};
use plateau_core::time;
use plateau_store::bots::{self as db, PolicyRow};
use plateau_store::events::{self, NewEvent};
use plateau_waf_expr::bots::{AI_LIST_DATE, AI_LIST_SOURCE};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::load;
use super::waf::{WafEventView, follow_apps};
use crate::Apps;
use crate::bots::{BotAction, BotPolicy};

/// The highest `ratePerMinute`.
const MAX_RATE: i64 = 100_000;

/// A policy to set; a field left out (but `enabled`) takes its default.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewBotPolicy {
    /// The app whose own policy this is; default the organisation's,
    /// which applies to every app without its own.
    #[schema(min_length = 1)]
    pub app_id: Option<String>,
    /// Whether the edge applies it (required: a PUT without a body is
    /// refused rather than read as the defaults).
    pub enabled: bool,
    /// A search engine's crawler that DNS does not verify; default
    /// `block`.
    #[schema(value_type = Option<BotAction>)]
    pub unverified_crawlers: Option<String>,
    /// AI crawlers and agents (the ai.robots.txt list); default `block`.
    #[schema(value_type = Option<BotAction>)]
    pub ai_crawlers: Option<String>,
    /// SEO crawlers; default `allow`.
    #[schema(value_type = Option<BotAction>)]
    pub seo_crawlers: Option<String>,
    /// HTTP libraries and command-line clients; default `allow`.
    #[schema(value_type = Option<BotAction>)]
    pub http_clients: Option<String>,
    /// Requests per client address per minute; 0 (the default): no limit.
    #[schema(minimum = 0, maximum = 100000)]
    pub rate_per_minute: Option<i64>,
    /// Over the rate: `log`, `challenge` or `block` (the default; 429).
    #[schema(value_type = Option<BotAction>)]
    pub rate_action: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BotPolicyView {
    /// The app asked about; none for the organisation's.
    pub app_id: Option<String>,
    /// Where the policy in force comes from: `app`, `organization` or
    /// `default` (none set: off).
    pub source: String,
    pub policy: BotPolicy,
    /// When it was last set; none for the default.
    pub updated_at: Option<String>,
    /// Where the AI crawlers' list comes from, and its date.
    pub ai_list_source: String,
    pub ai_list_date: String,
}

fn view(app_id: Option<String>, row: Option<PolicyRow>) -> BotPolicyView {
    let (source, policy, updated_at) = match row {
        Some(row) => (
            if row.app_id.is_empty() {
                "organization"
            } else {
                "app"
            },
            serde_json::from_str(&row.policy).unwrap_or_default(),
            Some(time::to_rfc3339(row.updated_at)),
        ),
        None => ("default", BotPolicy::default(), None),
    };
    BotPolicyView {
        app_id,
        source: source.to_owned(),
        policy,
        updated_at,
        ai_list_source: AI_LIST_SOURCE.to_owned(),
        ai_list_date: AI_LIST_DATE.to_owned(),
    }
}

fn action(field: &str, value: Option<String>, default: BotAction) -> Result<BotAction, ApiError> {
    match value {
        None => Ok(default),
        Some(v) => BotAction::parse(&v)
            .ok_or_else(|| ApiError::invalid(field, "must be allow, log, challenge or block")),
    }
}

/// The policy of `input`, its fields checked.
fn policy(input: NewBotPolicy) -> Result<BotPolicy, ApiError> {
    let d = BotPolicy::default();
    let rate = input.rate_per_minute.unwrap_or(0);
    if !(0..=MAX_RATE).contains(&rate) {
        return Err(ApiError::invalid(
            "ratePerMinute",
            format!("must be from 0 to {MAX_RATE}"),
        ));
    }
    let rate_action = action("rateAction", input.rate_action, d.rate_action)?;
    if rate_action == BotAction::Allow {
        return Err(ApiError::invalid(
            "rateAction",
            "must be log, challenge or block",
        ));
    }
    Ok(BotPolicy {
        enabled: input.enabled,
        unverified_crawlers: action(
            "unverifiedCrawlers",
            input.unverified_crawlers,
            d.unverified_crawlers,
        )?,
        ai_crawlers: action("aiCrawlers", input.ai_crawlers, d.ai_crawlers)?,
        seo_crawlers: action("seoCrawlers", input.seo_crawlers, d.seo_crawlers)?,
        http_clients: action("httpClients", input.http_clients, d.http_clients)?,
        rate_per_minute: u32::try_from(rate).unwrap_or(0),
        rate_action,
    })
}

/// The app `appId` of the query or body, checked to be the caller's.
async fn app_of(apps: &Apps, caller: &Caller, id: Option<&str>) -> Result<String, ApiError> {
    match id {
        None => Ok(String::new()),
        Some("") => Err(ApiError::invalid("appId", "must name an app")),
        Some(id) => Ok(load(apps.db(), caller, id).await?.id),
    }
}

/// The bot policy in force for an app (with `appId`: its own, else the
/// organisation's), or the organisation's.
#[utoipa::path(get, path = "/bots/policy", tag = "bots",
    security(("bearer" = ["bots:read"])),
    params(("appId" = Option<String>, Query, min_length = 1, description = "the policy in force for this app")),
    responses((status = 200, description = "the policy", body = BotPolicyView),
              (status = 404, description = "appId names no app of the organisation", body = plateau_api::error::Problem)))]
pub async fn get(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<BotPolicyView>, ApiError> {
    let app_id = app_of(&apps, &caller, param(&pairs, "appId")).await?;
    let row = db::in_force(apps.db(), &caller.org_id, &app_id).await?;
    Ok(Json(view(Some(app_id).filter(|a| !a.is_empty()), row)))
}

/// Set the organisation's bot policy, or (with `appId`) an app's own; the
/// edges apply it at once.
#[utoipa::path(put, path = "/bots/policy", tag = "bots",
    security(("bearer" = ["bots:write"])),
    request_body = NewBotPolicy,
    responses((status = 200, description = "the policy", body = BotPolicyView),
              (status = 400, description = "an invalid field", body = plateau_api::error::Problem),
              (status = 404, description = "appId names no app of the organisation", body = plateau_api::error::Problem)))]
pub async fn put(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Body(mut input): Body<NewBotPolicy>,
) -> Result<Json<BotPolicyView>, ApiError> {
    let app_id = app_of(&apps, &caller, input.app_id.take().as_deref()).await?;
    let policy = policy(input)?;
    let now = time::now_ms();
    let row = PolicyRow {
        org_id: caller.org_id.clone(),
        app_id: app_id.clone(),
        policy: serde_json::to_string(&policy).map_err(|e| ApiError::Internal(e.to_string()))?,
        updated_at: now,
    };
    let mut tx = apps.db().begin().await?;
    db::put(&mut tx, &row).await?;
    record(
        &mut tx,
        &caller,
        "bots.policy.updated",
        "update",
        &app_id,
        now,
    )
    .await?;
    tx.commit_last().await?;
    let app = Some(app_id).filter(|a| !a.is_empty());
    follow_apps(&apps, &caller.org_id, app.as_deref()).await;
    Ok(Json(view(app, Some(row))))
}

/// Remove the organisation's bot policy, or (with `appId`) an app's own
/// (the organisation's applies to it again); the edges apply it at once.
#[utoipa::path(delete, path = "/bots/policy", tag = "bots",
    security(("bearer" = ["bots:write"])),
    params(("appId" = Option<String>, Query, min_length = 1, description = "remove this app's own policy")),
    responses((status = 200, description = "the policy in force now", body = BotPolicyView),
              (status = 404, description = "no such policy, or appId names no app of the organisation", body = plateau_api::error::Problem)))]
pub async fn delete(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<BotPolicyView>, ApiError> {
    let app_id = app_of(&apps, &caller, param(&pairs, "appId")).await?;
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    if !db::delete(&mut tx, &caller.org_id, &app_id).await? {
        return Err(ApiError::not_found(if app_id.is_empty() {
            "the organisation has no bot policy".to_owned()
        } else {
            format!("app {app_id} has no bot policy of its own")
        }));
    }
    record(
        &mut tx,
        &caller,
        "bots.policy.deleted",
        "delete",
        &app_id,
        now,
    )
    .await?;
    tx.commit_last().await?;
    let app = Some(app_id.clone()).filter(|a| !a.is_empty());
    follow_apps(&apps, &caller.org_id, app.as_deref()).await;
    let row = db::in_force(apps.db(), &caller.org_id, &app_id).await?;
    Ok(Json(view(app, row)))
}

/// What the organisation's bot policies decided, newest first: the class
/// (`ruleId` `bots.ai`, `bots.seo`, `bots.http-client`,
/// `bots.unverified-crawler`, `bots.rate`), the action and the request's
/// facts (no body, query string or header but the user agent; the
/// client's network, not its address). Passes are not recorded.
#[utoipa::path(get, path = "/bots/events", tag = "bots",
    security(("bearer" = ["bots:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page"),
           ("appId" = Option<String>, Query, description = "only this app's"),
           ("ruleId" = Option<String>, Query, description = "only this class's (`bots.ai`...)"),
           ("action" = Option<String>, Query, description = "only this action's")),
    responses((status = 200, description = "the decisions", body = Page<WafEventView>)))]
pub async fn events(
    State(state): State<AppState>,
    Extension(apps): Extension<Apps>,
    caller: Caller,
    pairs: Pairs,
) -> Result<Json<Page<WafEventView>>, ApiError> {
    super::waf::list_events(&state, &apps, &caller, &pairs, "bot_events", Some("bots.")).await
}

async fn record(
    tx: &mut plateau_store::Tx,
    caller: &Caller,
    kind: &str,
    action: &str,
    app_id: &str,
    now: i64,
) -> Result<(), ApiError> {
    let mut e = NewEvent::audited(&caller.org_id, kind, "settings", action, &caller.actor());
    if !app_id.is_empty() {
        e = e.resource("app", app_id);
    }
    events::record(
        tx,
        &e.data(json!({ "appId": Some(app_id).filter(|a| !a.is_empty()) })),
        now,
    )
    .await?;
    Ok(())
}
