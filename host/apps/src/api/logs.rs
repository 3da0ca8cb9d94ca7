//! `/apps/{id}/logs`: what the replicas printed, newest last.

use axum::extract::Path;
use axum::{Extension, Json};
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::routes::{Pairs, param};
use plateau_core::time;
use plateau_store::apps::logs;
use serde::Serialize;
use utoipa::ToSchema;

use super::load;
use crate::Apps;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LogLineView {
    pub at: String,
    /// stdout or stderr.
    pub stream: String,
    pub line: String,
    pub deployment_id: String,
}

#[derive(Serialize, ToSchema)]
pub struct LogList {
    pub items: Vec<LogLineView>,
}

/// Runtime logs, newest last; `since` (RFC 3339) keeps the later ones.
#[utoipa::path(get, path = "/apps/{id}/logs", tag = "apps",
    security(("bearer" = ["apps:read"])),
    params(("id" = String, Path, description = "app id"),
           ("since" = Option<String>, Query, format = DateTime, description = "RFC 3339 time; only lines at or after it"),
           ("limit" = Option<u32>, Query, description = "the newest lines, 1 to 1000, default 200")),
    responses((status = 200, description = "log lines", body = LogList)))]
pub async fn list(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    pairs: Pairs,
) -> Result<Json<LogList>, ApiError> {
    let since = match param(&pairs, "since") {
        Some(s) => Some(time::parse_rfc3339(s).ok_or_else(|| {
            ApiError::invalid(
                "since",
                "must be an RFC 3339 time such as 2026-11-24T08:00:00Z",
            )
        })?),
        None => None,
    };
    let limit = match param(&pairs, "limit") {
        Some(l) => l
            .parse::<i64>()
            .ok()
            .filter(|n| (1..=1000).contains(n))
            .ok_or_else(|| ApiError::invalid("limit", "must be between 1 and 1000"))?,
        None => 200,
    };
    let app = load(apps.db(), &caller, &id).await?;
    let items = logs::list(apps.db(), &app.id, since, limit)
        .await?
        .into_iter()
        .map(|l| LogLineView {
            at: time::to_rfc3339(l.created_at),
            stream: l.stream,
            line: l.line,
            deployment_id: l.deployment,
        })
        .collect();
    Ok(Json(LogList { items }))
}
