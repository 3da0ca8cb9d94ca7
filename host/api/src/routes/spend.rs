//! `/spend` (spec section 4.10): monthly budgets for the organisation and
//! its projects, what they have spent, what their 100% actions paused,
//! and `POST /spend/resume`. What spend is and when budgets act is
//! [`crate::spend`].

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_core::id::new_id;
use plateau_core::{Plan, prices, time};
use plateau_store::events::{self, NewEvent};
use plateau_store::spend::{self, Budget, ORG_SCOPE};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::watch;
use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::{Body, Validator};
use crate::spend::evaluate::{period, spent};
use crate::spend::{Action, DEFAULT_THRESHOLDS, MAX_PERCENT, MAX_THRESHOLDS};
use crate::state::AppState;

/// Ten billion dollars: far past any real budget, short of overflow.
const MAX_AMOUNT_CENTS: i64 = 1_000_000_000_000;

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

/// A new budget: for the organisation (no `projectId`) or one project.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewBudget {
    /// The project to budget; absent for the organisation's budget.
    pub project_id: Option<String>,
    #[schema(minimum = 1, maximum = 1_000_000_000_000_i64)]
    pub amount_cents: i64,
    /// Percents that notify; default 50, 80, 100.
    #[schema(schema_with = thresholds_schema)]
    pub thresholds: Option<Vec<i64>>,
    /// At 100%; default none.
    #[schema(schema_with = actions_schema)]
    pub actions: Option<Vec<String>>,
    #[schema(schema_with = super::alarms::emails_schema)]
    pub notify_emails: Option<Vec<String>>,
}

/// A change of a budget: any field but the project.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BudgetChange {
    #[schema(minimum = 1, maximum = 1_000_000_000_000_i64)]
    pub amount_cents: Option<i64>,
    #[schema(schema_with = thresholds_schema)]
    pub thresholds: Option<Vec<i64>>,
    #[schema(schema_with = actions_schema)]
    pub actions: Option<Vec<String>>,
    #[schema(schema_with = super::alarms::emails_schema)]
    pub notify_emails: Option<Vec<String>>,
}

/// 1 to 10 percents from 1 to 1000, or `null`.
fn thresholds_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
    ArrayBuilder::new()
        .schema_type(SchemaType::Array(vec![Type::Array, Type::Null]))
        .items(
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(1))
                .maximum(Some(MAX_PERCENT)),
        )
        .min_items(Some(1))
        .max_items(Some(MAX_THRESHOLDS))
        .build()
}

/// Up to two of `pause_apps`, `refuse_new`, or `null`.
fn actions_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, SchemaType, Type};
    ArrayBuilder::new()
        .schema_type(SchemaType::Array(vec![Type::Array, Type::Null]))
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(Action::ALL)),
        )
        .max_items(Some(Action::ALL.len()))
        .build()
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

/// Applies `input` over `b`, checking every field at once.
fn apply(b: &mut Budget, input: BudgetChange) -> Result<(), ApiError> {
    let mut v = Validator::new();
    if let Some(amount) = input.amount_cents {
        v.check(
            (1..=MAX_AMOUNT_CENTS).contains(&amount),
            "amountCents",
            "must be from 1 to 1000000000000",
        );
        b.amount_cents = amount;
    }
    if let Some(mut thresholds) = input.thresholds {
        v.check(
            !thresholds.is_empty() && thresholds.len() <= MAX_THRESHOLDS,
            "thresholds",
            "must list 1 to 10 percents",
        );
        v.check(
            thresholds.iter().all(|t| (1..=MAX_PERCENT).contains(t)),
            "thresholds",
            "must be percents from 1 to 1000",
        );
        thresholds.sort_unstable();
        thresholds.dedup();
        b.thresholds = json!(thresholds).to_string();
    }
    if let Some(mut actions) = input.actions {
        v.check(
            actions.len() <= Action::ALL.len(),
            "actions",
            "must list at most 2 actions",
        );
        for (i, a) in actions.iter().enumerate() {
            v.check(
                Action::parse(a).is_some(),
                format!("actions[{i}]"),
                format!("must be one of {}", Action::ALL.join(", ")),
            );
        }
        actions.sort_unstable();
        actions.dedup();
        b.actions = json!(actions).to_string();
    }
    if let Some(emails) = input.notify_emails {
        b.notify_emails = watch::notify_emails(&mut v, &emails);
    }
    Ok(v.finish()?)
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

/// Set a monthly budget for the organisation (no `projectId`) or one
/// project; one budget each. It is evaluated within
/// `PLATEAU_ALARMS_EVALUATE_MS`.
#[utoipa::path(post, path = "/spend/budgets", tag = "spend",
    security(("bearer" = ["spend:write"])),
    request_body = NewBudget,
    responses((status = 201, description = "the new budget", body = BudgetView),
              (status = 404, description = "projectId names no project of the organisation", body = crate::error::Problem),
              (status = 409, description = "the organisation or project has a budget already", body = crate::error::Problem)))]
pub async fn create(
    State(app): State<AppState>,
    caller: Caller,
    Body(input): Body<NewBudget>,
) -> Result<(StatusCode, Json<BudgetView>), ApiError> {
    let now = time::now_ms();
    let mut project_id = input.project_id;
    if let Some(only) = &caller.project_id {
        if project_id.as_ref().is_some_and(|p| p != only) {
            return Err(ApiError::invalid(
                "projectId",
                format!("this token is limited to project {only}"),
            ));
        }
        project_id = Some(only.clone());
    }
    let mut b = Budget {
        id: new_id("bdg"),
        org_id: caller.org_id.clone(),
        scope: project_id.clone().unwrap_or_else(|| ORG_SCOPE.to_owned()),
        project_id,
        amount_cents: 0,
        thresholds: json!(DEFAULT_THRESHOLDS).to_string(),
        actions: "[]".to_owned(),
        notify_emails: "[]".to_owned(),
        period: String::new(),
        notified_percent: 0,
        spent_cents: None,
        evaluated_at: None,
        limited_at: None,
        resumed_period: String::new(),
        created_at: now,
        updated_at: now,
    };
    let change = BudgetChange {
        amount_cents: Some(input.amount_cents),
        thresholds: input.thresholds,
        actions: input.actions,
        notify_emails: input.notify_emails,
    };
    apply(&mut b, change)?;
    watch::project_exists(&app, &caller, b.project_id.as_deref()).await?;
    if let Some(existing) = spend::of_scope(app.db(), &caller.org_id, &b.scope).await? {
        return Err(ApiError::conflict(
            "budget_exists",
            format!(
                "budget {} is already set for this scope; change it with PATCH /spend/budgets/{}",
                existing.id, existing.id
            ),
        ));
    }
    let mut tx = app.db().begin().await?;
    spend::save(&mut tx, &b, true).await?;
    audit(&mut tx, &caller, &b, "spend_budget.created", "create", now).await?;
    tx.commit_last().await?;
    Ok((
        StatusCode::CREATED,
        Json(view(&app, &caller, b, now).await?),
    ))
}

/// One budget, with this month's spend.
#[utoipa::path(get, path = "/spend/budgets/{id}", tag = "spend",
    security(("bearer" = ["spend:read"])),
    params(("id" = String, Path, description = "budget id")),
    responses((status = 200, description = "the budget", body = BudgetView)))]
pub async fn get(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<BudgetView>, ApiError> {
    let b = find(&app, &caller, &id).await?;
    Ok(Json(view(&app, &caller, b, time::now_ms()).await?))
}

/// Change a budget. A new amount or new thresholds notify again from the
/// highest threshold now reached; a limit already reached stays until
/// `POST /spend/resume`.
#[utoipa::path(patch, path = "/spend/budgets/{id}", tag = "spend",
    security(("bearer" = ["spend:write"])),
    params(("id" = String, Path, description = "budget id")),
    request_body = Option<BudgetChange>,
    responses((status = 200, description = "the changed budget", body = BudgetView)))]
pub async fn update(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<BudgetChange>,
) -> Result<Json<BudgetView>, ApiError> {
    let mut b = find(&app, &caller, &id).await?;
    let (amount, thresholds) = (b.amount_cents, b.thresholds.clone());
    apply(&mut b, input)?;
    if b.amount_cents != amount || b.thresholds != thresholds {
        b.notified_percent = 0;
    }
    let now = time::now_ms();
    b.updated_at = now.max(b.updated_at + 1);
    let mut tx = app.db().begin().await?;
    spend::save(&mut tx, &b, false).await?;
    audit(&mut tx, &caller, &b, "spend_budget.updated", "update", now).await?;
    tx.commit_last().await?;
    Ok(Json(view(&app, &caller, b, now).await?))
}

/// Delete a budget; the apps it paused stay paused until
/// `POST /spend/resume`.
#[utoipa::path(delete, path = "/spend/budgets/{id}", tag = "spend",
    security(("bearer" = ["spend:write"])),
    params(("id" = String, Path, description = "budget id")),
    responses((status = 200, description = "the deleted budget", body = BudgetView)))]
pub async fn delete(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<BudgetView>, ApiError> {
    let b = find(&app, &caller, &id).await?;
    let now = time::now_ms();
    let mut tx = app.db().begin().await?;
    if !spend::delete(&mut tx, &caller.org_id, &id).await? {
        return Err(ApiError::not_found(format!("budget {id} does not exist")));
    }
    audit(&mut tx, &caller, &b, "spend_budget.deleted", "delete", now).await?;
    tx.commit_last().await?;
    Ok(Json(view(&app, &caller, b, now).await?))
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
