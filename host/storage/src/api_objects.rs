//! `GET` and `DELETE /storage/buckets/{id}/objects` under `/api/v1`: a
//! bucket's objects in key order, with folders rolled up at a delimiter,
//! in the API's list envelope, and deleting one object. The console's
//! object browser reads this; S3 clients have ListObjectsV2.
//!
//! `prefix` keeps keys that start with it; `delimiter` (usually `/`) rolls
//! the keys that continue past it into one `folder` item (the S3 common
//! prefix). Items are objects and folders in key order. Pagination is the
//! API's own (`limit`, `cursor`, `nextCursor`); the cursor is bound to
//! the bucket, prefix and delimiter. `total` counts the items of the
//! listing over all its pages (a walk of the listing: keep buckets with
//! huge flat listings paginated and expect it to cost their size).

use axum::Extension;
use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::pagination::{Page, Pager};
use plateau_core::time;
use plateau_store::query::Listed;
use serde::Serialize;
use utoipa::ToSchema;

use crate::Storage;
use crate::api::{api_error, find, page};
use crate::provider::{Bucket, ListQuery};

/// Keys read per provider call while counting or paging.
const BATCH: usize = 1000;

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectItem {
    /// object or folder.
    pub kind: String,
    /// The object's key, or the folder's prefix (ending in the delimiter).
    pub key: String,
    /// Bytes; objects only.
    pub size: Option<u64>,
    /// The entity tag without quotes; objects only.
    pub etag: Option<String>,
    pub content_type: Option<String>,
    /// Objects only.
    pub last_modified: Option<String>,
}

fn param<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// One page of the listing after `after`: at most `max` items in key
/// order, each with its sort key (what a cursor continues after).
async fn items(
    storage: &Storage,
    bucket: &Bucket,
    prefix: &str,
    delimiter: Option<&str>,
    after: &str,
    max: usize,
) -> Result<(Vec<(String, ObjectItem)>, bool), ApiError> {
    let query = ListQuery {
        prefix: prefix.to_owned(),
        delimiter: delimiter.map(str::to_owned),
        after: after.to_owned(),
        max_keys: max,
    };
    let listing = storage
        .provider()
        .list_objects(bucket, &query)
        .await
        .map_err(api_error)?;
    let mut out: Vec<(String, ObjectItem)> = listing
        .objects
        .into_iter()
        .map(|o| {
            (
                o.key.clone(),
                ObjectItem {
                    kind: "object".to_owned(),
                    size: Some(o.size),
                    etag: Some(o.etag),
                    content_type: o.headers.content_type,
                    last_modified: Some(time::to_rfc3339(o.modified_at)),
                    key: o.key,
                },
            )
        })
        .chain(listing.prefixes.into_iter().map(|p| {
            (
                p.clone(),
                ObjectItem {
                    kind: "folder".to_owned(),
                    key: p,
                    size: None,
                    etag: None,
                    content_type: None,
                    last_modified: None,
                },
            )
        }))
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((out, listing.truncated))
}

/// How many items the whole listing has, walked a batch at a time.
async fn count(
    storage: &Storage,
    bucket: &Bucket,
    prefix: &str,
    delimiter: Option<&str>,
) -> Result<i64, ApiError> {
    let mut total = 0i64;
    let mut after = String::new();
    loop {
        let (batch, truncated) = items(storage, bucket, prefix, delimiter, &after, BATCH).await?;
        total += batch.len() as i64;
        match batch.last() {
            Some((key, _)) if truncated => after = key.clone(),
            _ => return Ok(total),
        }
    }
}

/// A bucket's objects and folders, in key order.
#[utoipa::path(get, path = "/storage/buckets/{id}/objects", tag = "storage",
    security(("bearer" = ["storage:read"])),
    params(("id" = String, Path, description = "bucket id"),
           ("prefix" = Option<String>, Query, max_length = 1024, description = "only keys that start with it"),
           ("delimiter" = Option<String>, Query, max_length = 16, description = "roll keys continuing past it (after the prefix) into folders; usually /"),
           ("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "objects and folders", body = Page<ObjectItem>)))]
pub async fn list_objects(
    State(app): State<AppState>,
    Extension(storage): Extension<Storage>,
    caller: Caller,
    Path(id): Path<String>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<Page<ObjectItem>>, ApiError> {
    let prefix = param(&pairs, "prefix").unwrap_or("");
    let delimiter = param(&pairs, "delimiter").filter(|d| !d.is_empty());
    let mut v = plateau_api::json::Validator::new();
    v.check(
        prefix.len() <= 1024,
        "prefix",
        "prefix must be at most 1024 bytes",
    );
    v.check(
        delimiter.is_none_or(|d| d.len() <= 16),
        "delimiter",
        "delimiter must be at most 16 bytes",
    );
    v.finish()?;
    let bucket = find(&app, &caller, &id).await?;
    let filters = format!("{id}\n{prefix}\n{}", delimiter.unwrap_or(""));
    let pager = Pager::new(
        app.cursors(),
        &page(&pairs),
        "storage_objects",
        &caller.org_id,
        filters,
    )?;
    let keyset = pager.keyset();
    let after = keyset.after.clone().unwrap_or_default();
    let rows = match keyset.limit {
        // One more than the page: the pager tells a next page by it.
        Some(limit) => {
            items(
                &storage,
                &bucket,
                prefix,
                delimiter,
                &after,
                limit as usize + 1,
            )
            .await?
            .0
        }
        None => {
            let mut all = Vec::new();
            let mut after = after;
            loop {
                let (batch, truncated) =
                    items(&storage, &bucket, prefix, delimiter, &after, BATCH).await?;
                let last = batch.last().map(|(k, _)| k.clone());
                all.extend(batch);
                match last {
                    Some(key) if truncated => after = key,
                    _ => break,
                }
            }
            all
        }
    };
    let total = match keyset.limit {
        Some(_) => count(&storage, &bucket, prefix, delimiter).await?,
        None => rows.len() as i64,
    };
    Ok(Json(pager.finish(
        Listed { rows, total },
        |(key, _)| key.clone(),
        |(_, item)| item,
    )))
}

/// Delete one object (204, also when there was none, as S3 does).
#[utoipa::path(delete, path = "/storage/buckets/{id}/objects", tag = "storage",
    security(("bearer" = ["storage:write"])),
    params(("id" = String, Path, description = "bucket id"),
           ("key" = String, Query, min_length = 1, max_length = 1024, description = "the object's key")),
    responses((status = 204, description = "the object is gone")))]
pub async fn delete_object(
    State(app): State<AppState>,
    Extension(storage): Extension<Storage>,
    caller: Caller,
    Path(id): Path<String>,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<StatusCode, ApiError> {
    let key = param(&pairs, "key").unwrap_or("");
    plateau_api::json::Validator::new()
        .check(
            !key.is_empty() && key.len() <= 1024,
            "key",
            "key must be 1 to 1024 bytes",
        )
        .finish()?;
    let bucket = find(&app, &caller, &id).await?;
    storage
        .provider()
        .delete_object(&bucket, key, &caller.actor())
        .await
        .map_err(api_error)?;
    Ok(StatusCode::NO_CONTENT)
}
