//! `/notifications/preferences` (spec section 4.1): email on or off per
//! category (alarms, anomalies, spend). Email is on until turned off.

use axum::Json;
use axum::extract::State;
use plateau_core::time;
use plateau_store::events::{self, NewEvent};
use plateau_store::prefs::{self, CATEGORIES};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use crate::auth::Caller;
use crate::error::ApiError;
use crate::json::Body;
use crate::pagination::Page;
use crate::state::AppState;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Preference {
    /// alarms, anomalies or spend.
    pub category: String,
    pub email_enabled: bool,
    /// When it was last changed; null while it has its default.
    pub updated_at: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetPreference {
    /// alarms, anomalies or spend.
    #[schema(schema_with = category_schema)]
    pub category: String,
    pub email_enabled: bool,
}

/// The categories [`CATEGORIES`] lists.
fn category_schema() -> utoipa::openapi::Object {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::String)
        .enum_values(Some(CATEGORIES))
        .build()
}

async fn current(app: &AppState, org_id: &str) -> Result<Page<Preference>, ApiError> {
    let items: Vec<Preference> = prefs::list(app.db(), org_id)
        .await?
        .into_iter()
        .map(|(category, email_enabled, updated_at)| Preference {
            category,
            email_enabled,
            updated_at: updated_at.map(time::to_rfc3339),
        })
        .collect();
    Ok(Page {
        total: items.len() as i64,
        items,
        next_cursor: None,
    })
}

/// Every category with its setting.
#[utoipa::path(get, path = "/notifications/preferences", tag = "notifications",
    security(("bearer" = ["notifications:read"])),
    responses((status = 200, description = "one entry per category", body = Page<Preference>)))]
pub async fn get(
    State(app): State<AppState>,
    caller: Caller,
) -> Result<Json<Page<Preference>>, ApiError> {
    Ok(Json(current(&app, &caller.org_id).await?))
}

/// Turn email on or off for one category; answers every category.
#[utoipa::path(put, path = "/notifications/preferences", tag = "notifications",
    security(("bearer" = ["notifications:write"])),
    request_body = SetPreference,
    responses((status = 200, description = "every category after the change", body = Page<Preference>)))]
pub async fn put(
    State(app): State<AppState>,
    caller: Caller,
    Body(input): Body<SetPreference>,
) -> Result<Json<Page<Preference>>, ApiError> {
    if !CATEGORIES.contains(&input.category.as_str()) {
        return Err(ApiError::invalid(
            "category",
            format!("must be one of {}", CATEGORIES.join(", ")),
        ));
    }
    let now = time::now_ms();
    let mut tx = app.db().begin().await?;
    prefs::set(
        &mut tx,
        &caller.org_id,
        &input.category,
        input.email_enabled,
        now,
    )
    .await?;
    let event = NewEvent::audited(
        &caller.org_id,
        "notification_preference.updated",
        "settings",
        "update",
        &caller.actor(),
    )
    .resource("notification_preference", &input.category)
    .data(json!({ "category": input.category, "emailEnabled": input.email_enabled }));
    events::record(&mut tx, &event, now).await?;
    tx.commit().await?;
    Ok(Json(current(&app, &caller.org_id).await?))
}
