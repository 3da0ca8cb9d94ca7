//! Referrals: the organisation's link (`GET /rewards/referral`), the
//! public endpoint a click goes through (`GET /referrals/{code}`: counted,
//! then redirected to the operator's landing page with `ref=<code>`), and
//! the sign-up credited when the operator creates an organisation with
//! the code ([`credit_signup`]; Plateau has no self sign-up).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use plateau_core::id::new_id;
use plateau_core::rewards as rules;
use plateau_core::time;
use plateau_store::Tx;
use plateau_store::events::{self, Actor, NewEvent};
use plateau_store::rewards;
use plateau_store::rewards::claims::{self, Submission};
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Referral {
    pub code: String,
    /// The link to share: each visit is counted, then sent on to the
    /// platform's landing page with `ref=<code>`.
    pub link: String,
    pub clicks: i64,
    /// Organisations created with the code.
    pub signups: i64,
    /// Approved referral earnings, in cents.
    pub earned_cents: i64,
    /// Referral earnings waiting for the operator's review.
    pub pending_cents: i64,
    /// What a sign-up pays now (the referral line); `null` when no
    /// referral line is enabled.
    pub amount_cents_per_signup: Option<i64>,
}

/// The origin a request reached the API at.
fn origin(headers: &HeaderMap) -> String {
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    let https = headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|p| p.eq_ignore_ascii_case("https"));
    format!("{}://{host}", if https { "https" } else { "http" })
}

/// The caller's organisation's referral link, with its clicks, sign-ups
/// and earnings.
#[utoipa::path(get, path = "/rewards/referral", tag = "rewards",
    security(("bearer" = ["rewards:read"])),
    responses((status = 200, description = "the referral link and what it brought", body = Referral)))]
pub async fn referral(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
) -> Result<Json<Referral>, ApiError> {
    let db = app.db();
    let account = rewards::account(db, &caller.org_id, time::now_ms()).await?;
    let (earned, pending) = claims::referral_earnings(db, &caller.org_id).await?;
    let per_signup = rewards::lines(db, true)
        .await?
        .into_iter()
        .find(|l| l.kind == "referral")
        .map(|l| l.amount_cents);
    Ok(Json(Referral {
        link: format!(
            "{}{}/referrals/{}",
            origin(&headers),
            crate::API_PREFIX,
            account.referral_code
        ),
        code: account.referral_code,
        clicks: account.clicks,
        signups: account.signups,
        earned_cents: earned,
        pending_cents: pending,
        amount_cents_per_signup: per_signup,
    }))
}

/// A visit of a referral link: counted, then redirected (302) to the
/// platform's landing page with `ref=<code>`, which the operator passes
/// as `referralCode` when creating the visitor's organisation.
#[utoipa::path(get, path = "/referrals/{code}", tag = "rewards",
    security(()),
    params(("code" = String, Path, description = "a referral code", pattern = "^[a-z0-9]{12}$")),
    responses((status = 302, description = "counted; on to the landing page",
            headers(("Location" = String, description = "the landing page with ref=<code>"))),
        (status = 404, description = "no organisation has this code", body = crate::error::Problem,
            content_type = "application/problem+json")))]
pub async fn visit(
    State(app): State<AppState>,
    Path(code): Path<String>,
) -> Result<Response, ApiError> {
    let unknown = || ApiError::not_found(format!("no referral link has the code {code}"));
    if !rules::is_referral_code(&code) || !rewards::click(app.db(), &code).await? {
        return Err(unknown());
    }
    let landing = &app.config().referral_landing;
    let sep = if landing.contains('?') { '&' } else { '?' };
    let location = HeaderValue::from_str(&format!("{landing}{sep}ref={code}"))
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    Ok((StatusCode::FOUND, [(header::LOCATION, location)]).into_response())
}

/// Credits a sign-up through `code` to the organisation it belongs to, in
/// the transaction that creates `new_org_id`: counts it, and when a
/// referral line is enabled records its submission (approved and added
/// to the balance, or pending review as the line says), with a
/// `referral.signed_up` event in the referrer's timeline. An unknown
/// code is refused naming `referralCode`. Answers the referrer.
pub async fn credit_signup(
    tx: &mut Tx,
    code: &str,
    new_org_id: &str,
    actor: &Actor,
    now: i64,
) -> Result<String, ApiError> {
    let unknown = || ApiError::invalid("referralCode", "no organisation has this referral code");
    if !rules::is_referral_code(code) {
        return Err(unknown());
    }
    let referrer = rewards::count_signup(tx, code, now)
        .await?
        .ok_or_else(unknown)?;
    let mut data = json!({ "organizationId": new_org_id, "amountCents": 0 });
    if let Some(line) = rewards::referral_line(tx).await? {
        let status = if line.requires_review != 0 {
            "pending"
        } else {
            "approved"
        };
        let submission = Submission {
            id: new_id("rws"),
            org_id: referrer.clone(),
            line_id: line.id.clone(),
            reason: line.key.clone(),
            amount_cents: line.amount_cents,
            status: status.to_owned(),
            evidence: format!("signup:{new_org_id}"),
            details: json!({ "organizationId": new_org_id }).to_string(),
            note: None,
            actor_id: None,
            created_at: now,
            reviewed_at: (status == "approved").then_some(now),
        };
        claims::insert(tx, &submission).await?;
        if status == "approved" {
            rewards::add_balance(tx, &referrer, line.amount_cents, now).await?;
        }
        data = json!({
            "organizationId": new_org_id,
            "amountCents": line.amount_cents,
            "status": status,
            "submissionId": submission.id,
        });
    }
    let event = NewEvent::audited(
        &referrer,
        "referral.signed_up",
        "billing",
        "referral",
        actor,
    )
    .resource("organization", new_org_id)
    .data(data);
    events::record(tx, &event, now).await?;
    Ok(referrer)
}
