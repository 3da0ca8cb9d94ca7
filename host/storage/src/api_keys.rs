//! `/storage/keys` under `/api/v1`: the organisation's S3 access keys
//! (spec section 4.9), with scopes `storage:read` and `storage:write`.
//! Another organisation's key answers 404.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::{Body, Validator};
use plateau_api::pagination::{Page, Pager};
use plateau_core::time;
use plateau_store::storage::{buckets, keys};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::Storage;
use crate::api::{api_error, page};

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyView {
    pub id: String,
    pub name: String,
    pub access_key_id: String,
    /// The secret, masked: its last four characters.
    pub masked_secret: String,
    pub read_only: bool,
    /// Bucket ids the key is limited to; absent for every bucket.
    pub buckets: Option<Vec<String>>,
    pub created_at: String,
}

impl From<keys::AccessKey> for KeyView {
    fn from(k: keys::AccessKey) -> Self {
        KeyView {
            id: k.id,
            name: k.name,
            access_key_id: k.access_key_id,
            masked_secret: format!("…{}", k.secret_hint),
            read_only: k.read_only != 0,
            buckets: k
                .buckets
                .as_deref()
                .and_then(|b| serde_json::from_str(b).ok()),
            created_at: time::to_rfc3339(k.created_at),
        }
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedKey {
    #[serde(flatten)]
    pub key: KeyView,
    /// The secret access key. Store it now: it is never shown again.
    pub secret_access_key: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateKey {
    pub name: String,
    /// Only reads (default false).
    pub read_only: Option<bool>,
    /// Limits the key to these bucket ids; all buckets when absent.
    pub buckets: Option<Vec<String>>,
}

/// List the organisation's access keys (secrets masked).
#[utoipa::path(get, path = "/storage/keys", tag = "storage",
    security(("bearer" = ["storage:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "access keys", body = Page<KeyView>)))]
pub async fn list_keys(
    State(app): State<AppState>,
    caller: Caller,
    axum::extract::Query(pairs): axum::extract::Query<Vec<(String, String)>>,
) -> Result<Json<Page<KeyView>>, ApiError> {
    let pager = Pager::new(
        app.cursors(),
        &page(&pairs),
        "storage_keys",
        &caller.org_id,
        String::new(),
    )?;
    let listed = keys::list(app.db(), &caller.org_id, pager.keyset()).await?;
    Ok(Json(pager.finish(listed, |k| k.id.clone(), KeyView::from)))
}

/// Create an access key. Returns the secret once.
#[utoipa::path(post, path = "/storage/keys", tag = "storage",
    security(("bearer" = ["storage:write"])),
    request_body = CreateKey,
    responses((status = 201, description = "the new key, with its secret", body = CreatedKey)))]
pub async fn create_key(
    State(app): State<AppState>,
    Extension(storage): Extension<Storage>,
    caller: Caller,
    Body(input): Body<CreateKey>,
) -> Result<(StatusCode, Json<CreatedKey>), ApiError> {
    Validator::new().name("name", &input.name).finish()?;
    if let Some(ids) = &input.buckets {
        for id in ids {
            if buckets::get(app.db(), &caller.org_id, id).await?.is_none() {
                return Err(ApiError::invalid(
                    "buckets",
                    format!("bucket {id} does not exist"),
                ));
            }
        }
    }
    let (key, secret) = storage
        .keys()
        .create(
            &caller.org_id,
            input.name.trim(),
            input.read_only.unwrap_or(false),
            input.buckets,
            &caller.actor(),
        )
        .await
        .map_err(api_error)?;
    Ok((
        StatusCode::CREATED,
        Json(CreatedKey {
            key: key.into(),
            secret_access_key: secret,
        }),
    ))
}

/// Delete an access key; S3 requests signed with it fail from then on.
#[utoipa::path(delete, path = "/storage/keys/{id}", tag = "storage",
    security(("bearer" = ["storage:write"])),
    params(("id" = String, Path, description = "key id")),
    responses((status = 200, description = "the deleted key", body = KeyView)))]
pub async fn delete_key(
    Extension(storage): Extension<Storage>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<KeyView>, ApiError> {
    let key = storage
        .keys()
        .delete(&caller.org_id, &id, &caller.actor())
        .await
        .map_err(api_error)?
        .ok_or_else(|| ApiError::not_found(format!("access key {id} does not exist")))?;
    Ok(Json(key.into()))
}
