//! `GET /me` and `GET /usage` (spec section 4.1).

use axum::Json;
use axum::extract::State;
use plateau_core::{Plan, prices, time};
use plateau_store::{grants, orgs, plans, plugins, projects, storage, tokens, usage};
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Me {
    pub user: MeUser,
    pub organization: MeOrganization,
    pub token: MeToken,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MeUser {
    pub id: String,
    pub name: String,
    pub email: Option<String>,
    /// owner, admin, member, billing or viewer.
    pub role: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MeOrganization {
    pub id: String,
    pub name: String,
    pub plan: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MeToken {
    pub id: String,
    pub scopes: Vec<String>,
    pub project_id: Option<String>,
    pub expires_at: Option<String>,
    pub max_cost_cents: Option<i64>,
    /// The cost, in whole cents rounded up at list price, of the
    /// resources this token created: what `maxCostCents` bounds.
    pub spent_cents: i64,
}

/// The current user, organisation and token.
#[utoipa::path(get, path = "/me", tag = "account",
    security(("bearer" = [])),
    responses((status = 200, description = "the caller", body = Me)))]
pub async fn me(State(app): State<AppState>, caller: Caller) -> Result<Json<Me>, ApiError> {
    let spent_cents = crate::cost::attributed_cents(app.db(), &caller.token_id).await?;
    Ok(Json(Me {
        user: MeUser {
            id: caller.user_id.clone(),
            name: caller.user_name.clone(),
            email: caller.user_email.clone(),
            role: caller.role.to_string(),
        },
        organization: MeOrganization {
            id: caller.org_id.clone(),
            name: caller.org_name.clone(),
            plan: caller.plan.clone(),
        },
        token: MeToken {
            id: caller.token_id.clone(),
            scopes: caller.scopes.names(),
            project_id: caller.project_id.clone(),
            expires_at: caller.expires_at.map(time::to_rfc3339),
            max_cost_cents: caller.max_cost_cents,
            spent_cents,
        },
    }))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub plan: String,
    /// The plan's limits (spec section 8); storage, disk and bandwidth in GB.
    #[schema(value_type = Object)]
    pub limits: plans::PlanLimits,
    pub period: Period,
    /// What the organisation has now.
    pub counts: Counts,
    /// Plugin requests and the fuel they burned this period, per plugin
    /// (fuel: about one unit per wasm instruction; recorded within seconds).
    pub plugins: Vec<PluginUsage>,
    /// Object storage (objects and unfinished uploads), counted against
    /// the plan's storage limit.
    pub storage: StorageUsage,
    /// This period's consumption per metric of the price table, from the
    /// series store, against what the plan includes.
    pub metrics: Vec<MetricUsage>,
    pub cost: Cost,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricUsage {
    pub metric: String,
    pub unit: String,
    pub quantity: f64,
    /// What the plan includes per month.
    pub included_quantity: f64,
    /// Past the inclusion: priced at `centsPerUnit`.
    pub overage_quantity: f64,
    pub cents_per_unit: f64,
    pub cost_cents: f64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageUsage {
    pub bytes: i64,
    pub objects: i64,
    pub limit_bytes: i64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PluginUsage {
    pub plugin: String,
    pub requests: i64,
    pub fuel: i64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Period {
    pub start: String,
    pub end: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    pub projects: i64,
    pub active_tokens: i64,
    pub connect_grants: i64,
    pub members: i64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Cost {
    /// The flat plan price for the period.
    pub plan_cents: i64,
    /// What lies past the plan's inclusions this period, priced: the sum
    /// of `metrics[].costCents`, rounded to the nearest whole cent (what
    /// an invoice would charge).
    pub metered_cents: i64,
    /// Reward credit this period's invoice takes (`POST /rewards/redeem`
    /// with `type` credit), at most the plan price plus the overage.
    pub credit_cents: i64,
    /// What the period's invoice comes to: plan, plus overage, less
    /// credit.
    pub total_cents: i64,
    pub currency: String,
}

/// The plan, its limits, current counts and the cost of the current period.
#[utoipa::path(get, path = "/usage", tag = "account",
    security(("bearer" = ["usage:read"])),
    responses((status = 200, description = "usage of the current period", body = Usage)))]
pub async fn usage(State(app): State<AppState>, caller: Caller) -> Result<Json<Usage>, ApiError> {
    let db = app.db();
    let now = time::now_ms();
    let limits = plans::get(db, &caller.plan)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("plan {} has no limits row", caller.plan)))?;
    let (start, end) = time::month_bounds(now);
    let plan: Plan = caller
        .plan
        .parse()
        .map_err(|e: plateau_core::plan::UnknownPlan| ApiError::Internal(e.to_string()))?;
    let totals = usage::totals(
        db,
        &caller.org_id,
        &time::to_date(start),
        &time::to_date(now),
    )
    .await?;
    let metrics: Vec<MetricUsage> = prices::PRICES
        .iter()
        .map(|price| {
            let quantity = totals
                .iter()
                .find(|(m, _)| m == price.metric)
                .map_or(0.0, |(_, q)| *q);
            let included = price.included(plan);
            MetricUsage {
                metric: price.metric.to_owned(),
                unit: price.unit.to_owned(),
                quantity,
                included_quantity: included,
                overage_quantity: (quantity - included).max(0.0),
                cents_per_unit: price.cents_per_unit,
                cost_cents: prices::round_cents(price.overage_cents(plan, quantity)),
            }
        })
        .collect();
    let metered = crate::rewards::metered_cents(plan, &totals);
    let credit = crate::rewards::credit(db, &caller.org_id, plan, limits.price_cents, now).await?;
    let plugins = plugins::usage_since(db, &caller.org_id, &time::to_date(start))
        .await?
        .into_iter()
        .map(|(plugin, requests, fuel)| PluginUsage {
            plugin,
            requests,
            fuel,
        })
        .collect();
    Ok(Json(Usage {
        plan: caller.plan.clone(),
        period: Period {
            start: time::to_rfc3339(start),
            end: time::to_rfc3339(end),
        },
        counts: Counts {
            projects: projects::count(db, &caller.org_id).await?,
            active_tokens: tokens::count_active(db, &caller.org_id, now).await?,
            connect_grants: grants::count_live(db, &caller.org_id).await?,
            members: orgs::count_members(db, &caller.org_id).await?,
        },
        plugins,
        storage: {
            let used = storage::usage(db, &caller.org_id).await?;
            StorageUsage {
                bytes: used.bytes,
                objects: used.objects,
                limit_bytes: limits.storage_gb.saturating_mul(1_000_000_000),
            }
        },
        metrics,
        cost: Cost {
            plan_cents: limits.price_cents,
            metered_cents: metered,
            credit_cents: credit.this_period_cents,
            total_cents: limits.price_cents + metered - credit.this_period_cents,
            currency: "USD".to_owned(),
        },
        limits,
    }))
}
