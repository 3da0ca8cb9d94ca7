//! `/spend/budgets`: setting, reading, changing and deleting a budget,
//! and the checks of what a budget may be (amount, thresholds, actions,
//! addresses).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_store::spend::{self, Budget, ORG_SCOPE};
use serde::Deserialize;
use serde_json::json;
use utoipa::ToSchema;

use super::{BudgetView, audit, find, view};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::{Body, Validator};
use crate::routes::watch;
use crate::spend::{Action, DEFAULT_THRESHOLDS, MAX_PERCENT, MAX_THRESHOLDS};
use crate::state::AppState;

/// Ten billion dollars: far past any real budget, short of overflow.
const MAX_AMOUNT_CENTS: i64 = 1_000_000_000_000;
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
    #[schema(schema_with = crate::routes::alarms::emails_schema)]
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
    #[schema(schema_with = crate::routes::alarms::emails_schema)]
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
