//! `/rewards` (spec section 4.3): the balance and submissions, the lines
//! that pay, claims gated by the platform's own records ([`claims`]),
//! redemption as credit or gift card, the referral link ([`referral`]),
//! and the operator's side: lines, reviews and gift cards ([`admin`],
//! [`review`]). The money rules are `plateau_core::rewards`; how credit
//! lowers invoices is [`crate::rewards`].

use axum::Json;
use axum::extract::State;
use plateau_core::{Plan, time};
use plateau_store::plans;
use plateau_store::rewards::claims::{self, Submission};
use plateau_store::rewards::redemptions::{self, Redemption};
use plateau_store::rewards::{self, Line};
use serde::Serialize;
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;

pub mod admin;
pub mod claims_routes;
pub mod referral;
pub mod review;

pub use admin::*;
pub use claims_routes::*;
pub use referral::*;
pub use review::*;

/// How many submissions and redemptions `GET /rewards` shows, newest
/// first.
pub const SHOWN: i64 = 100;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewardLine {
    pub id: String,
    /// What a claim names as its `reason`.
    pub key: String,
    pub title: String,
    pub description: String,
    /// How a claim is verified: `event` (the timeline holds an event of
    /// `eventType`), `usage` (the month's `metric` reaches `threshold`),
    /// `resource` (a live `resourceType` exists), `referral` (credited
    /// when an organisation is created with your referral code).
    #[schema(pattern = "^(event|usage|resource|referral)$")]
    pub kind: String,
    pub event_type: Option<String>,
    pub resource_type: Option<String>,
    pub metric: Option<String>,
    pub threshold: Option<f64>,
    /// What one claim pays, in cents.
    pub amount_cents: i64,
    /// Whether a verified claim waits for the operator's approval.
    pub requires_review: bool,
    /// Claims of the line an organisation may have (rejected ones aside).
    pub max_claims: i64,
    pub enabled: bool,
    /// The caller's organisation's claims of the line, rejected ones
    /// aside (always 0 in the operator's listing).
    pub claimed: i64,
}

impl RewardLine {
    pub fn of(l: Line, claimed: i64) -> Self {
        RewardLine {
            requires_review: l.requires_review != 0,
            enabled: l.enabled != 0,
            id: l.id,
            key: l.key,
            title: l.title,
            description: l.description,
            kind: l.kind,
            event_type: l.event_type,
            resource_type: l.resource_type,
            metric: l.metric,
            threshold: l.threshold,
            amount_cents: l.amount_cents,
            max_claims: l.max_claims,
            claimed,
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewardSubmission {
    pub id: String,
    pub organization_id: String,
    pub line_id: String,
    /// The line's key.
    pub reason: String,
    pub amount_cents: i64,
    #[schema(pattern = "^(pending|approved|rejected)$")]
    pub status: String,
    /// What the platform's records showed: `event:<id>`,
    /// `resource:<id>`, `usage:<YYYY-MM>` or `signup:<organisation id>`.
    pub evidence: String,
    #[schema(value_type = Object)]
    pub details: serde_json::Value,
    /// The operator's note at review.
    pub note: Option<String>,
    pub created_at: String,
    pub reviewed_at: Option<String>,
}

impl From<Submission> for RewardSubmission {
    fn from(s: Submission) -> Self {
        RewardSubmission {
            details: serde_json::from_str(&s.details).unwrap_or_default(),
            created_at: time::to_rfc3339(s.created_at),
            reviewed_at: s.reviewed_at.map(time::to_rfc3339),
            id: s.id,
            organization_id: s.org_id,
            line_id: s.line_id,
            reason: s.reason,
            amount_cents: s.amount_cents,
            status: s.status,
            evidence: s.evidence,
            note: s.note,
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewardRedemption {
    pub id: String,
    pub organization_id: String,
    #[serde(rename = "type")]
    #[schema(pattern = "^(credit|giftcard)$")]
    pub kind: String,
    pub amount_cents: i64,
    /// `applied` (credit); `pending`, `fulfilled` or `cancelled` (gift
    /// cards; a cancelled one went back to the balance).
    #[schema(pattern = "^(applied|pending|fulfilled|cancelled)$")]
    pub status: String,
    /// The month it was made in; credit lowers invoices from it on.
    pub period: String,
    /// The operator's note at fulfilment.
    pub note: Option<String>,
    pub created_at: String,
    pub settled_at: Option<String>,
}

impl From<Redemption> for RewardRedemption {
    fn from(r: Redemption) -> Self {
        RewardRedemption {
            created_at: time::to_rfc3339(r.created_at),
            settled_at: r.settled_at.map(time::to_rfc3339),
            id: r.id,
            organization_id: r.org_id,
            kind: r.kind,
            amount_cents: r.amount_cents,
            status: r.status,
            period: r.period,
            note: r.note,
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Rewards {
    /// What may be redeemed now, in cents: approved earnings less
    /// redemptions (a cancelled gift card comes back).
    pub balance_cents: i64,
    /// Approved earnings, ever.
    pub earned_cents: i64,
    /// Verified claims waiting for the operator's review.
    pub pending_cents: i64,
    pub redeemed_cents: i64,
    /// Redeemed credit this month's invoice takes (see `GET /usage`).
    pub credit_this_period_cents: i64,
    /// Redeemed credit left for later invoices.
    pub credit_remaining_cents: i64,
    pub currency: String,
    /// The latest 100 submissions, newest first.
    pub submissions: Vec<RewardSubmission>,
    /// The latest 100 redemptions, newest first.
    pub redemptions: Vec<RewardRedemption>,
}

fn plan(caller: &Caller) -> Result<Plan, ApiError> {
    caller
        .plan
        .parse()
        .map_err(|e: plateau_core::plan::UnknownPlan| ApiError::Internal(e.to_string()))
}

/// The balance, earnings, credit and the latest submissions and
/// redemptions of the caller's organisation.
#[utoipa::path(get, path = "/rewards", tag = "rewards",
    security(("bearer" = ["rewards:read"])),
    responses((status = 200, description = "balance and submissions", body = Rewards)))]
pub async fn overview(
    State(app): State<AppState>,
    caller: Caller,
) -> Result<Json<Rewards>, ApiError> {
    let db = app.db();
    let now = time::now_ms();
    let account = rewards::account(db, &caller.org_id, now).await?;
    let (earned, pending) = claims::earnings(db, &caller.org_id).await?;
    let price = plans::get(db, &caller.plan)
        .await?
        .map_or(0, |l| l.price_cents);
    let credit = crate::rewards::credit(db, &caller.org_id, plan(&caller)?, price, now).await?;
    Ok(Json(Rewards {
        balance_cents: account.balance_cents,
        earned_cents: earned,
        pending_cents: pending,
        redeemed_cents: redemptions::redeemed_cents(db, &caller.org_id).await?,
        credit_this_period_cents: credit.this_period_cents,
        credit_remaining_cents: credit.remaining_cents,
        currency: "USD".to_owned(),
        submissions: claims::of_org(db, &caller.org_id, SHOWN)
            .await?
            .into_iter()
            .map(Into::into)
            .collect(),
        redemptions: redemptions::of_org(db, &caller.org_id, SHOWN)
            .await?
            .into_iter()
            .map(Into::into)
            .collect(),
    }))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewardLines {
    pub items: Vec<RewardLine>,
}

/// The lines that pay now: which actions, how much, and how many times.
#[utoipa::path(get, path = "/rewards/lines", tag = "rewards",
    security(("bearer" = ["rewards:read"])),
    responses((status = 200, description = "the enabled lines", body = RewardLines)))]
pub async fn lines(
    State(app): State<AppState>,
    caller: Caller,
) -> Result<Json<RewardLines>, ApiError> {
    let claimed = claims::claims_per_line(app.db(), &caller.org_id).await?;
    let items = rewards::lines(app.db(), true)
        .await?
        .into_iter()
        .map(|l| {
            let n = claimed
                .iter()
                .find(|(id, _)| *id == l.id)
                .map_or(0, |(_, n)| *n);
            RewardLine::of(l, n)
        })
        .collect();
    Ok(Json(RewardLines { items }))
}
