//! The operator's side of claims and gift cards: the submissions to
//! review (`POST /rewards/submissions/{id}/review`, the admin session
//! only: a token is refused with 403, whatever its scopes), and the gift
//! cards to fulfil or cancel (`/admin/rewards/giftcards`). A gift card is
//! a code the operator buys and sends; the platform keeps the pending
//! fulfilment and the operator's note, never a code it made up.

use axum::Json;
use axum::extract::{Path, State};
use plateau_core::time;
use plateau_store::events::{self, Actor, NewEvent};
use plateau_store::rewards;
use plateau_store::rewards::claims;
use plateau_store::rewards::redemptions;
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use super::{RewardRedemption, RewardSubmission};
use crate::auth::AdminSession;
use crate::error::ApiError;
use crate::json::{Body, Validator};
use crate::routes::{Pairs, param};
use crate::state::AppState;

/// The most the operator's listings show, newest first.
const LISTED: i64 = 200;

/// The operator's decision on a submission.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubmissionReview {
    #[schema(pattern = "^(approve|reject)$")]
    pub action: String,
    #[schema(max_length = 1000)]
    pub note: Option<String>,
}

fn check_note(v: &mut Validator, note: &Option<String>) {
    if let Some(note) = note {
        v.check(
            note.len() <= 1000,
            "note",
            "must be at most 1000 characters",
        );
    }
}

/// Approve (credited to the organisation's balance) or reject a pending
/// submission. The platform operator's session only.
#[utoipa::path(post, path = "/rewards/submissions/{id}/review", tag = "rewards",
    security(("adminSession" = [])),
    params(("id" = String, Path, description = "submission id")),
    request_body = SubmissionReview,
    responses((status = 200, description = "the reviewed submission", body = RewardSubmission),
        (status = 409, description = "the submission was reviewed already", body = crate::error::Problem,
            content_type = "application/problem+json")))]
pub async fn review(
    State(app): State<AppState>,
    session: AdminSession,
    Path(id): Path<String>,
    Body(input): Body<SubmissionReview>,
) -> Result<Json<RewardSubmission>, ApiError> {
    let mut v = Validator::new();
    let status = match input.action.as_str() {
        "approve" => "approved",
        "reject" => "rejected",
        _ => {
            v.error("action", "must be approve or reject");
            ""
        }
    };
    check_note(&mut v, &input.note);
    v.finish()?;
    let found = claims::get(app.db(), &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("submission {id} does not exist")))?;
    let now = time::now_ms();
    let mut tx = app.db().begin().await?;
    rewards::lock_account(&mut tx, &found.org_id, now).await?;
    if !claims::review(&mut tx, &id, status, input.note.as_deref(), now).await? {
        return Err(ApiError::conflict(
            "already_reviewed",
            format!("submission {id} is {} already", found.status),
        ));
    }
    if status == "approved" {
        rewards::add_balance(&mut tx, &found.org_id, found.amount_cents, now).await?;
    }
    let actor = Actor::admin(session.ip.clone());
    let event = NewEvent::audited(
        &found.org_id,
        &format!("reward.{status}"),
        "billing",
        "review",
        &actor,
    )
    .resource("reward_submission", &id)
    .data(json!({
        "reason": found.reason,
        "amountCents": found.amount_cents,
        "note": input.note,
    }));
    events::record(&mut tx, &event, now).await?;
    tx.commit_last().await?;
    let reviewed = claims::get(app.db(), &id)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("submission {id} vanished")))?;
    Ok(Json(reviewed.into()))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewardSubmissions {
    pub items: Vec<RewardSubmission>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RewardRedemptions {
    pub items: Vec<RewardRedemption>,
}

fn status_filter<'a>(pairs: &'a Pairs, allowed: &[&str]) -> Result<Option<&'a str>, ApiError> {
    match param(pairs, "status") {
        Some(s) if !allowed.contains(&s) => Err(ApiError::invalid(
            "status",
            format!("must be one of {}", allowed.join(", ")),
        )),
        other => Ok(other),
    }
}

/// Submissions of every organisation, newest first (the latest 200).
#[utoipa::path(get, path = "/admin/rewards/submissions", tag = "admin",
    security(("adminSession" = [])),
    params(("status" = Option<String>, Query, description = "pending, approved or rejected",
        pattern = "^(pending|approved|rejected)$")),
    responses((status = 200, description = "submissions", body = RewardSubmissions)))]
pub async fn admin_submissions(
    State(app): State<AppState>,
    _session: AdminSession,
    pairs: Pairs,
) -> Result<Json<RewardSubmissions>, ApiError> {
    let status = status_filter(&pairs, &["pending", "approved", "rejected"])?;
    let items = claims::all(app.db(), status, LISTED)
        .await?
        .into_iter()
        .map(Into::into)
        .collect();
    Ok(Json(RewardSubmissions { items }))
}

/// Gift cards of every organisation, newest first (the latest 200):
/// `status=pending` lists what is to fulfil.
#[utoipa::path(get, path = "/admin/rewards/giftcards", tag = "admin",
    security(("adminSession" = [])),
    params(("status" = Option<String>, Query, description = "pending, fulfilled or cancelled",
        pattern = "^(pending|fulfilled|cancelled)$")),
    responses((status = 200, description = "gift cards", body = RewardRedemptions)))]
pub async fn admin_giftcards(
    State(app): State<AppState>,
    _session: AdminSession,
    pairs: Pairs,
) -> Result<Json<RewardRedemptions>, ApiError> {
    let status = status_filter(&pairs, &["pending", "fulfilled", "cancelled"])?;
    let items = redemptions::all(app.db(), status, LISTED)
        .await?
        .into_iter()
        .map(Into::into)
        .collect();
    Ok(Json(RewardRedemptions { items }))
}

/// The operator's settlement of a gift card.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GiftcardSettlement {
    /// `fulfil` (the card was sent) or `cancel` (the amount goes back to
    /// the organisation's balance).
    #[schema(pattern = "^(fulfil|cancel)$")]
    pub action: String,
    /// How it was sent, or why not; shown to the organisation. Never the
    /// card's code.
    #[schema(max_length = 1000)]
    pub note: Option<String>,
}

/// Fulfil or cancel a pending gift card.
#[utoipa::path(post, path = "/admin/rewards/giftcards/{id}", tag = "admin",
    security(("adminSession" = [])),
    params(("id" = String, Path, description = "redemption id")),
    request_body = GiftcardSettlement,
    responses((status = 200, description = "the gift card", body = RewardRedemption),
        (status = 409, description = "the gift card was settled already", body = crate::error::Problem,
            content_type = "application/problem+json")))]
pub async fn settle_giftcard(
    State(app): State<AppState>,
    session: AdminSession,
    Path(id): Path<String>,
    Body(input): Body<GiftcardSettlement>,
) -> Result<Json<RewardRedemption>, ApiError> {
    let mut v = Validator::new();
    let status = match input.action.as_str() {
        "fulfil" => "fulfilled",
        "cancel" => "cancelled",
        _ => {
            v.error("action", "must be fulfil or cancel");
            ""
        }
    };
    check_note(&mut v, &input.note);
    v.finish()?;
    let found = redemptions::get(app.db(), &id)
        .await?
        .filter(|r| r.kind == "giftcard")
        .ok_or_else(|| ApiError::not_found(format!("gift card {id} does not exist")))?;
    let now = time::now_ms();
    let mut tx = app.db().begin().await?;
    rewards::lock_account(&mut tx, &found.org_id, now).await?;
    if !redemptions::settle(&mut tx, &id, status, input.note.as_deref(), now).await? {
        return Err(ApiError::conflict(
            "already_settled",
            format!("gift card {id} is {} already", found.status),
        ));
    }
    if status == "cancelled" {
        rewards::add_balance(&mut tx, &found.org_id, found.amount_cents, now).await?;
    }
    let actor = Actor::admin(session.ip.clone());
    let event = NewEvent::audited(
        &found.org_id,
        &format!("reward.giftcard.{status}"),
        "billing",
        "update",
        &actor,
    )
    .resource("reward_redemption", &id)
    .data(json!({ "amountCents": found.amount_cents, "note": input.note }));
    events::record(&mut tx, &event, now).await?;
    tx.commit_last().await?;
    let settled = redemptions::get(app.db(), &id)
        .await?
        .ok_or_else(|| ApiError::Internal(format!("gift card {id} vanished")))?;
    Ok(Json(settled.into()))
}
