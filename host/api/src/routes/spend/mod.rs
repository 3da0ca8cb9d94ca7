//! `/spend` (spec section 4.10): monthly budgets for the organisation and
//! its projects, what they have spent, what their 100% actions paused,
//! and `POST /spend/resume`. What spend is and when budgets act is
//! [`crate::spend`].

use axum::Json;
use axum::extract::State;
use plateau_core::{Plan, prices, time};
use plateau_store::events::{self, NewEvent};
use plateau_store::spend::{self, Budget};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::Body;
use crate::spend::Action;
use crate::spend::evaluate::{period, spent};
use crate::state::AppState;

mod budgets;

pub use budgets::*;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetView {
    pub id: String,
    /// The project budgeted; `null` for the organisation's own budget.
    pub project_id: Option<String>,
    pub amount_cents: i64,
    /// Percents of the budget that notify, once each a month.
    pub thresholds: Vec<i64>,
    /// At 100%: `pause_apps`, `refuse_new`, or none.
    pub actions: Vec<String>,
    pub notify_emails: Vec<String>,
    /// This month's spend (see `GET /spend`), in cents.
    pub spent_cents: f64,
    pub percent: f64,
    /// The highest threshold notified this month; 0 for none.
    pub notified_percent: i64,
    /// Whether the 100% actions ran and were not resumed yet.
    pub limited: bool,
    pub limited_at: Option<String>,
    /// When the server last evaluated the budget.
    pub evaluated_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PausedView {
    pub app_id: String,
    pub app_name: String,
    pub budget_id: String,
    pub paused_at: String,
    /// The app's status now; `null` once it is gone.
    pub status: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SpendView {
    /// The month (UTC), `YYYY-MM`.
    pub period: String,
    /// The organisation's spend this month: the overage `GET /usage`
    /// prices (the plan's flat price is not spend), in cents; a token
    /// limited to one project sees that project's share.
    pub spent_cents: f64,
    pub currency: String,
    pub budgets: Vec<BudgetView>,
    /// Apps a budget paused, until `POST /spend/resume`.
    pub paused: Vec<PausedView>,
    /// Whether a budget at its limit refuses new resources.
    pub refusing_new_resources: bool,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Resumed {
    /// The apps resumed (those still paused) and those no longer paused.
    pub apps: Vec<PausedView>,
    /// The budgets whose limit was lifted for the rest of the month.
    pub budgets: Vec<String>,
}

/// `POST /spend/resume` takes no fields: it resumes everything.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ResumeInput {}

fn plan(caller: &Caller) -> Result<Plan, ApiError> {
    caller
        .plan
        .parse()
        .map_err(|e: plateau_core::plan::UnknownPlan| ApiError::Internal(e.to_string()))
}

async fn view(
    app: &AppState,
    caller: &Caller,
    b: Budget,
    now: i64,
) -> Result<BudgetView, ApiError> {
    let spent = prices::round_cents(
        spent(
            app.db(),
            &b.org_id,
            b.project_id.as_deref(),
            plan(caller)?,
            now,
        )
        .await?,
    );
    let current = b.period == period(now);
    Ok(BudgetView {
        percent: prices::round_cents(crate::spend::percent(spent, b.amount_cents)),
        spent_cents: spent,
        thresholds: serde_json::from_str(&b.thresholds).unwrap_or_default(),
        actions: serde_json::from_str(&b.actions).unwrap_or_default(),
        notify_emails: serde_json::from_str(&b.notify_emails).unwrap_or_default(),
        notified_percent: if current { b.notified_percent } else { 0 },
        limited: b.limited_at.is_some(),
        limited_at: b.limited_at.map(time::to_rfc3339),
        evaluated_at: b.evaluated_at.map(time::to_rfc3339),
        created_at: time::to_rfc3339(b.created_at),
        updated_at: time::to_rfc3339(b.updated_at),
        id: b.id,
        project_id: b.project_id,
        amount_cents: b.amount_cents,
    })
}

fn paused_view(p: spend::Paused) -> PausedView {
    PausedView {
        paused_at: time::to_rfc3339(p.paused_at),
        app_id: p.app_id,
        app_name: p.app_name,
        budget_id: p.budget_id,
        status: p.status,
    }
}

/// A project-limited token sees its project's budget only.
fn visible(caller: &Caller, b: &Budget) -> bool {
    caller.project_id.is_none() || caller.project_id == b.project_id
}

async fn find(app: &AppState, caller: &Caller, id: &str) -> Result<Budget, ApiError> {
    spend::get(app.db(), &caller.org_id, id)
        .await?
        .filter(|b| visible(caller, b))
        .ok_or_else(|| ApiError::not_found(format!("budget {id} does not exist")))
}

async fn audit(
    tx: &mut plateau_store::Tx,
    caller: &Caller,
    b: &Budget,
    kind: &str,
    action: &str,
    now: i64,
) -> Result<(), ApiError> {
    let event = NewEvent::audited(&caller.org_id, kind, "settings", action, &caller.actor())
        .resource("spend_budget", &b.id)
        .data(json!({
            "projectId": b.project_id,
            "amountCents": b.amount_cents,
            "actions": serde_json::from_str::<serde_json::Value>(&b.actions).unwrap_or_default(),
        }));
    events::record(tx, &event, now).await?;
    Ok(())
}

/// This month's spend, every budget with its spend, and what budgets
/// paused.
#[utoipa::path(get, path = "/spend", tag = "spend",
    security(("bearer" = ["spend:read"])),
    responses((status = 200, description = "spend this month", body = SpendView)))]
pub async fn overview(
    State(app): State<AppState>,
    caller: Caller,
) -> Result<Json<SpendView>, ApiError> {
    let now = time::now_ms();
    // A token limited to one project sees that project's spend.
    let whose = caller.project_id.as_deref();
    let spent_cents =
        prices::round_cents(spent(app.db(), &caller.org_id, whose, plan(&caller)?, now).await?);
    let mut budgets = Vec::new();
    let mut refusing = false;
    for b in spend::list(app.db(), &caller.org_id).await? {
        if !visible(&caller, &b) {
            continue;
        }
        refusing |= b.limited_at.is_some() && Action::of(&b.actions).contains(&Action::RefuseNew);
        budgets.push(view(&app, &caller, b, now).await?);
    }
    let paused = spend::paused(app.db(), &caller.org_id)
        .await?
        .into_iter()
        .map(paused_view)
        .collect();
    Ok(Json(SpendView {
        period: period(now),
        spent_cents,
        currency: "USD".to_owned(),
        budgets,
        paused,
        refusing_new_resources: refusing,
    }))
}

/// Resume what budgets stopped: every app they paused that is still
/// paused starts again, and every budget's limit is lifted; their
/// actions stay off for the rest of the month.
#[utoipa::path(post, path = "/spend/resume", tag = "spend",
    security(("bearer" = ["spend:write"])),
    request_body = Option<ResumeInput>,
    responses((status = 200, description = "what was resumed", body = Resumed),
              (status = 403, description = "a token limited to one project cannot resume the organisation", body = crate::error::Problem)))]
pub async fn resume(
    State(app): State<AppState>,
    caller: Caller,
    Body(_empty): Body<ResumeInput>,
) -> Result<Json<Resumed>, ApiError> {
    if let Some(project) = &caller.project_id {
        return Err(ApiError::forbidden(
            "project_token",
            format!(
                "this token is limited to project {project}; resuming takes an organisation token"
            ),
        ));
    }
    let now = time::now_ms();
    let mut tx = app.db().begin().await?;
    let (taken, lifted) = spend::resume(&mut tx, &caller.org_id, &period(now)).await?;
    let control = app.apps_control();
    let mut apps = Vec::new();
    for p in taken {
        if let Some(control) = &control {
            control
                .resume(&mut tx, &caller.org_id, &p.app_id, now)
                .await?;
        }
        apps.push(p);
    }
    let budgets: Vec<String> = lifted.into_iter().map(|b| b.id).collect();
    let event = NewEvent::audited(
        &caller.org_id,
        "spend.resumed",
        "settings",
        "update",
        &caller.actor(),
    )
    .data(json!({
        "apps": apps.iter().map(|p| &p.app_id).collect::<Vec<_>>(),
        "budgets": budgets,
    }));
    events::record(&mut tx, &event, now).await?;
    tx.commit_last().await?;
    let apps = futures::future::join_all(apps.into_iter().map(|p| {
        let db = app.db().clone();
        let org = caller.org_id.clone();
        async move {
            let status = plateau_store::apps::get(&db, &org, &p.app_id)
                .await
                .ok()
                .flatten()
                .map(|a| a.status);
            paused_view(spend::Paused { status, ..p })
        }
    }))
    .await;
    Ok(Json(Resumed { apps, budgets }))
}
