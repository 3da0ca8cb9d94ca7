//! `POST /rewards` (a claim, accepted only when the platform's own records
//! show the action) and `POST /rewards/redeem` (credit or gift card).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use plateau_core::id::new_id;
use plateau_core::rewards::{self as rules, GIFTCARD_MIN_CENTS, LineKind};
use plateau_core::time;
use plateau_store::events::{self, NewEvent};
use plateau_store::rewards::claims::{self, Submission, Wanted};
use plateau_store::rewards::redemptions::{self, Redemption};
use plateau_store::rewards::{self, Line};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{RewardRedemption, RewardSubmission};
use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::{Body, Validator};
use crate::rewards::period;
use crate::state::AppState;

/// A claim of a line.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RewardClaim {
    /// The key of an enabled line (`GET /rewards/lines`).
    #[schema(min_length = 1, max_length = 64)]
    pub reason: String,
    /// Up to 4 KiB of JSON. `resourceId` (a string) asks for that
    /// resource's event or the resource itself; `period` (`YYYY-MM`, not
    /// after this month) picks the month of a usage line (default: this
    /// month). Anything else is kept for the operator's review.
    #[schema(value_type = Option<Object>)]
    pub details: Option<serde_json::Map<String, serde_json::Value>>,
}

/// Checks a claim's input; answers the line's key and what to look for.
fn check_claim(input: &RewardClaim, now: i64) -> Result<Wanted, ApiError> {
    let mut v = Validator::new();
    v.check(
        rules::is_line_key(&input.reason),
        "reason",
        "must be the key of a reward line (GET /rewards/lines lists them)",
    );
    let details = input.details.clone().unwrap_or_default();
    let size = serde_json::Value::Object(details.clone()).to_string().len();
    v.check(
        size <= rules::MAX_DETAILS_BYTES,
        "details",
        format!("must be at most {} bytes of JSON", rules::MAX_DETAILS_BYTES),
    );
    let mut wanted = Wanted {
        resource_id: None,
        period: period(now),
    };
    match details.get("resourceId") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::String(id)) if !id.is_empty() && id.len() <= 200 => {
            wanted.resource_id = Some(id.clone());
        }
        Some(_) => {
            v.error(
                "details.resourceId",
                "must be a resource id (1 to 200 characters)",
            );
        }
    }
    match details.get("period") {
        None | Some(serde_json::Value::Null) => {}
        Some(serde_json::Value::String(p)) if rules::is_period(p) && *p <= wanted.period => {
            wanted.period = p.clone();
        }
        Some(_) => {
            v.error(
                "details.period",
                "must be a month YYYY-MM, not after this one",
            );
        }
    }
    v.finish()?;
    Ok(wanted)
}

/// Why the records do not back a claim of `line`.
fn unverified(line: &Line, wanted: &Wanted) -> ApiError {
    let what = match line.kind.as_str() {
        "event" => format!(
            "no {} event{} that no claim of this line used yet",
            line.event_type.as_deref().unwrap_or("?"),
            wanted
                .resource_id
                .as_ref()
                .map(|r| format!(" about {r}"))
                .unwrap_or_default()
        ),
        "resource" => format!(
            "no live {}{} that no claim of this line used yet",
            line.resource_type.as_deref().unwrap_or("?"),
            wanted
                .resource_id
                .as_ref()
                .map(|r| format!(" {r}"))
                .unwrap_or_default()
        ),
        _ => format!(
            "less than {} of {} in {}, or that month is claimed already",
            line.threshold.unwrap_or(0.0),
            line.metric.as_deref().unwrap_or("?"),
            wanted.period
        ),
    };
    ApiError::conflict(
        "not_verified",
        format!("reason {}: the platform's records show {what}", line.key),
    )
}

/// Claim a line. The claim is accepted only when the platform's own
/// records show the action (the timeline, live resources or the series
/// store, by the line's kind); it is credited at once, or waits for the
/// operator's review when the line asks for one.
#[utoipa::path(post, path = "/rewards", tag = "rewards",
    security(("bearer" = ["rewards:write"])),
    request_body = RewardClaim,
    responses((status = 201, description = "the submission, approved or pending review", body = RewardSubmission),
        (status = 409, description = "the records show no action to claim (`not_verified`), or the line's claims are used up (`claim_limit_reached`)",
            body = crate::error::Problem, content_type = "application/problem+json")))]
pub async fn claim(
    State(app): State<AppState>,
    caller: Caller,
    Body(input): Body<RewardClaim>,
) -> Result<(StatusCode, Json<RewardSubmission>), ApiError> {
    let now = time::now_ms();
    let wanted = check_claim(&input, now)?;
    let no_line = || {
        ApiError::invalid(
            "reason",
            format!(
                "no enabled reward line is named {}; GET /rewards/lines lists them",
                input.reason
            ),
        )
    };
    let line = rewards::line_by_key(app.db(), &input.reason)
        .await?
        .ok_or_else(no_line)?;
    if LineKind::parse(&line.kind) == Some(LineKind::Referral) {
        return Err(ApiError::invalid(
            "reason",
            "a referral line is credited when an organisation is created with your referral code (GET /rewards/referral); it is not claimed",
        ));
    }
    let mut tx = app.db().begin().await?;
    rewards::lock_account(&mut tx, &caller.org_id, now).await?;
    if claims::live_claims(&mut tx, &caller.org_id, &line.id).await? >= line.max_claims {
        return Err(ApiError::conflict(
            "claim_limit_reached",
            format!(
                "reason {}: the organisation has made the line's {} claim(s) already",
                line.key, line.max_claims
            ),
        ));
    }
    let evidence = claims::evidence(&mut tx, &caller.org_id, &line, &wanted)
        .await?
        .ok_or_else(|| unverified(&line, &wanted))?;
    let status = if line.requires_review != 0 {
        "pending"
    } else {
        "approved"
    };
    let submission = Submission {
        id: new_id("rws"),
        org_id: caller.org_id.clone(),
        line_id: line.id.clone(),
        reason: line.key.clone(),
        amount_cents: line.amount_cents,
        status: status.to_owned(),
        evidence,
        details: serde_json::Value::Object(input.details.unwrap_or_default()).to_string(),
        note: None,
        actor_id: Some(caller.token_id.clone()),
        created_at: now,
        reviewed_at: (status == "approved").then_some(now),
    };
    claims::insert(&mut tx, &submission).await.map_err(|e| {
        if e.is_unique_violation() {
            unverified(&line, &wanted)
        } else {
            e.into()
        }
    })?;
    if status == "approved" {
        rewards::add_balance(&mut tx, &caller.org_id, line.amount_cents, now).await?;
    }
    let event = NewEvent::audited(
        &caller.org_id,
        "reward.claimed",
        "billing",
        "claim",
        &caller.actor(),
    )
    .resource("reward_submission", &submission.id)
    .data(json!({
        "reason": submission.reason,
        "amountCents": submission.amount_cents,
        "status": submission.status,
        "evidence": submission.evidence,
    }));
    events::record(&mut tx, &event, now).await?;
    tx.commit_last().await?;
    Ok((StatusCode::CREATED, Json(submission.into())))
}

/// A redemption of the balance.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RedeemInput {
    /// `credit` (lowers the next invoices, no minimum) or `giftcard` (at
    /// least 500 cents, fulfilled by the operator).
    #[serde(rename = "type")]
    #[schema(pattern = "^(credit|giftcard)$")]
    pub kind: String,
    /// Cents to redeem; for credit, the whole balance when absent.
    #[schema(minimum = 1)]
    pub amount_cents: Option<i64>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Redeemed {
    pub redemption: RewardRedemption,
    /// The balance after it, in cents.
    pub balance_cents: i64,
}

/// Redeem the balance as credit (no minimum; lowers the period's cost in
/// `GET /usage`, the rest carrying into later invoices) or as a gift card
/// (minimum 500 cents; pending until the operator fulfils it).
#[utoipa::path(post, path = "/rewards/redeem", tag = "rewards",
    security(("bearer" = ["rewards:write"])),
    request_body = RedeemInput,
    responses((status = 201, description = "the redemption and the balance after it", body = Redeemed),
        (status = 409, description = "the balance is less than amountCents (`insufficient_balance`)",
            body = crate::error::Problem, content_type = "application/problem+json")))]
pub async fn redeem(
    State(app): State<AppState>,
    caller: Caller,
    Body(input): Body<RedeemInput>,
) -> Result<(StatusCode, Json<Redeemed>), ApiError> {
    let mut v = Validator::new();
    let giftcard = input.kind == "giftcard";
    v.check(
        giftcard || input.kind == "credit",
        "type",
        "must be credit or giftcard",
    );
    match input.amount_cents {
        Some(cents) if cents < 1 => {
            v.error("amountCents", "must be at least 1");
        }
        Some(cents) if giftcard && cents < GIFTCARD_MIN_CENTS => {
            v.error(
                "amountCents",
                format!("a gift card is at least {GIFTCARD_MIN_CENTS} cents (5 dollars)"),
            );
        }
        None if giftcard => {
            v.error("amountCents", "is required for a gift card");
        }
        _ => {}
    }
    v.finish()?;
    let now = time::now_ms();
    let mut tx = app.db().begin().await?;
    let account = rewards::lock_account(&mut tx, &caller.org_id, now).await?;
    let amount = input.amount_cents.unwrap_or(account.balance_cents);
    if amount < 1 || !rewards::add_balance(&mut tx, &caller.org_id, -amount, now).await? {
        return Err(ApiError::conflict(
            "insufficient_balance",
            format!(
                "amountCents: the balance is {} cents, less than {amount}",
                account.balance_cents
            ),
        ));
    }
    let redemption = Redemption {
        id: new_id("rwr"),
        org_id: caller.org_id.clone(),
        kind: input.kind.clone(),
        amount_cents: amount,
        status: if giftcard { "pending" } else { "applied" }.to_owned(),
        period: period(now),
        note: None,
        created_at: now,
        settled_at: (!giftcard).then_some(now),
    };
    redemptions::insert(&mut tx, &redemption).await?;
    let event = NewEvent::audited(
        &caller.org_id,
        "reward.redeemed",
        "billing",
        "redeem",
        &caller.actor(),
    )
    .resource("reward_redemption", &redemption.id)
    .data(json!({ "type": redemption.kind, "amountCents": amount, "status": redemption.status }));
    events::record(&mut tx, &event, now).await?;
    tx.commit_last().await?;
    Ok((
        StatusCode::CREATED,
        Json(Redeemed {
            redemption: redemption.into(),
            balance_cents: account.balance_cents - amount,
        }),
    ))
}
