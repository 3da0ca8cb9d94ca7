//! The operator's reward lines (`/admin/rewards/lines`): which actions
//! pay, how much, how a claim is verified, and whether it waits for
//! review. A line's key, kind and rule are fixed once made (claims name
//! them); the rest changes, and disabling a line stops new claims.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use plateau_core::id::new_id;
use plateau_core::rewards::{self as rules, LineKind, MAX_CLAIMS, MAX_LINE_CENTS, RESOURCE_TYPES};
use plateau_core::{prices, time};
use plateau_store::rewards::{self, Line};
use serde::Deserialize;
use utoipa::ToSchema;

use super::{RewardLine, RewardLines};
use crate::auth::AdminSession;
use crate::error::ApiError;
use crate::json::{Body, Validator};
use crate::state::AppState;

/// A new line.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewRewardLine {
    /// What claims name as `reason`: 1 to 64 of a-z, 0-9, `_`, `-`.
    #[schema(pattern = "^[a-z0-9][a-z0-9_-]{0,63}$")]
    pub key: String,
    #[schema(min_length = 1, max_length = 200)]
    pub title: String,
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    /// event, usage, resource or referral (one referral line at most).
    #[schema(pattern = "^(event|usage|resource|referral)$")]
    pub kind: String,
    /// `event` lines: the event type that proves the action
    /// (`app.created`).
    #[schema(max_length = 100)]
    pub event_type: Option<String>,
    /// `resource` lines: app, database, cache or bucket.
    #[schema(pattern = "^(app|database|cache|bucket)$")]
    pub resource_type: Option<String>,
    /// `usage` lines: a metric of the price table.
    pub metric: Option<String>,
    /// `usage` lines: the month's quantity that proves the action.
    pub threshold: Option<f64>,
    /// Cents per claim, 1 to 1000000.
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub amount_cents: i64,
    /// Verified claims wait for the operator's approval (default false).
    pub requires_review: Option<bool>,
    /// Claims per organisation, 1 to 1000 (default 1); each needs its own
    /// evidence. Referral lines pay every sign-up.
    #[schema(minimum = 1, maximum = 1000)]
    pub max_claims: Option<i64>,
    pub enabled: Option<bool>,
}

/// A change of a line; absent fields stay.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RewardLineChange {
    #[schema(min_length = 1, max_length = 200)]
    pub title: Option<String>,
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    #[schema(minimum = 1, maximum = 1_000_000)]
    pub amount_cents: Option<i64>,
    pub requires_review: Option<bool>,
    #[schema(minimum = 1, maximum = 1000)]
    pub max_claims: Option<i64>,
    pub enabled: Option<bool>,
}

fn check_common(
    v: &mut Validator,
    title: Option<&str>,
    description: Option<&str>,
    amount: Option<i64>,
    max_claims: Option<i64>,
) {
    if let Some(title) = title {
        v.check(
            !title.trim().is_empty() && title.len() <= 200,
            "title",
            "must be 1 to 200 characters",
        );
    }
    if let Some(description) = description {
        v.check(
            description.len() <= 2000,
            "description",
            "must be at most 2000 characters",
        );
    }
    if let Some(amount) = amount {
        v.check(
            (1..=MAX_LINE_CENTS).contains(&amount),
            "amountCents",
            format!("must be 1 to {MAX_LINE_CENTS}"),
        );
    }
    if let Some(n) = max_claims {
        v.check(
            (1..=MAX_CLAIMS).contains(&n),
            "maxClaims",
            format!("must be 1 to {MAX_CLAIMS}"),
        );
    }
}

/// Every line, enabled or not.
#[utoipa::path(get, path = "/admin/rewards/lines", tag = "admin",
    security(("adminSession" = [])),
    responses((status = 200, description = "every line", body = RewardLines)))]
pub async fn admin_lines(
    State(app): State<AppState>,
    _session: AdminSession,
) -> Result<Json<RewardLines>, ApiError> {
    let items = rewards::lines(app.db(), false)
        .await?
        .into_iter()
        .map(|l| RewardLine::of(l, 0))
        .collect();
    Ok(Json(RewardLines { items }))
}

/// Add a line.
#[utoipa::path(post, path = "/admin/rewards/lines", tag = "admin",
    security(("adminSession" = [])),
    request_body = NewRewardLine,
    responses((status = 201, description = "the line", body = RewardLine),
        (status = 409, description = "the key is taken, or a referral line exists", body = crate::error::Problem,
            content_type = "application/problem+json")))]
pub async fn create_line(
    State(app): State<AppState>,
    _session: AdminSession,
    Body(input): Body<NewRewardLine>,
) -> Result<(StatusCode, Json<RewardLine>), ApiError> {
    let mut v = Validator::new();
    v.check(
        rules::is_line_key(&input.key),
        "key",
        "must be 1 to 64 of a-z, 0-9, _ and -, starting with a letter or digit",
    );
    check_common(
        &mut v,
        Some(&input.title),
        input.description.as_deref(),
        Some(input.amount_cents),
        input.max_claims,
    );
    let kind = LineKind::parse(&input.kind);
    v.check(
        kind.is_some(),
        "kind",
        format!("must be one of {}", LineKind::ALL.join(", ")),
    );
    let (mut event_type, mut resource_type, mut metric, mut threshold) = (None, None, None, None);
    match kind {
        Some(LineKind::Event) => {
            let t = input.event_type.clone().unwrap_or_default();
            v.check(
                t.len() <= 100 && is_event_type(&t),
                "eventType",
                "an event line needs an event type such as app.created",
            );
            event_type = Some(t);
        }
        Some(LineKind::Resource) => {
            let t = input.resource_type.clone().unwrap_or_default();
            v.check(
                RESOURCE_TYPES.contains(&t.as_str()),
                "resourceType",
                format!("a resource line needs one of {}", RESOURCE_TYPES.join(", ")),
            );
            resource_type = Some(t);
        }
        Some(LineKind::Usage) => {
            let m = input.metric.clone().unwrap_or_default();
            v.check(
                prices::of(&m).is_some(),
                "metric",
                "a usage line needs a metric of the price table (see GET /usage)",
            );
            let t = input.threshold.unwrap_or(0.0);
            v.check(
                t.is_finite() && t > 0.0,
                "threshold",
                "a usage line needs a threshold above 0",
            );
            (metric, threshold) = (Some(m), Some(t));
        }
        Some(LineKind::Referral) | None => {}
    }
    v.finish()?;
    let now = time::now_ms();
    let line = Line {
        id: new_id("rwl"),
        key: input.key,
        title: input.title.trim().to_owned(),
        description: input.description.unwrap_or_default(),
        kind: input.kind,
        event_type,
        resource_type,
        metric,
        threshold,
        amount_cents: input.amount_cents,
        requires_review: i64::from(input.requires_review.unwrap_or(false)),
        max_claims: input.max_claims.unwrap_or(1),
        enabled: i64::from(input.enabled.unwrap_or(true)),
        created_at: now,
        updated_at: now,
    };
    rewards::insert_line(app.db(), &line).await.map_err(|e| {
        if e.is_unique_violation() {
            ApiError::conflict(
                "line_exists",
                format!("a line is named {} already, or a referral line exists (one at most: change that one)", line.key),
            )
        } else {
            e.into()
        }
    })?;
    tracing::info!(line = %line.id, key = %line.key, "reward line added");
    Ok((StatusCode::CREATED, Json(RewardLine::of(line, 0))))
}

/// Whether `t` has the `resource.verb` form of an event type.
fn is_event_type(t: &str) -> bool {
    t.contains('.')
        && t.split('.').all(|part| {
            !part.is_empty()
                && part
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        })
}

/// Change a line's title, description, amount, review, claims or whether
/// it is enabled. Claims already made keep the amount they were made at.
#[utoipa::path(patch, path = "/admin/rewards/lines/{id}", tag = "admin",
    security(("adminSession" = [])),
    params(("id" = String, Path, description = "line id")),
    request_body = RewardLineChange,
    responses((status = 200, description = "the line", body = RewardLine)))]
pub async fn update_line(
    State(app): State<AppState>,
    _session: AdminSession,
    Path(id): Path<String>,
    Body(input): Body<RewardLineChange>,
) -> Result<Json<RewardLine>, ApiError> {
    let mut v = Validator::new();
    check_common(
        &mut v,
        input.title.as_deref(),
        input.description.as_deref(),
        input.amount_cents,
        input.max_claims,
    );
    v.finish()?;
    let mut line = rewards::get_line(app.db(), &id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("reward line {id} does not exist")))?;
    if let Some(title) = input.title {
        line.title = title.trim().to_owned();
    }
    if let Some(description) = input.description {
        line.description = description;
    }
    line.amount_cents = input.amount_cents.unwrap_or(line.amount_cents);
    line.max_claims = input.max_claims.unwrap_or(line.max_claims);
    if let Some(review) = input.requires_review {
        line.requires_review = i64::from(review);
    }
    if let Some(enabled) = input.enabled {
        line.enabled = i64::from(enabled);
    }
    line.updated_at = time::now_ms();
    rewards::update_line(app.db(), &line).await?;
    tracing::info!(line = %line.id, "reward line changed");
    Ok(Json(RewardLine::of(line, 0)))
}
