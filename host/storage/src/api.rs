//! `/storage` under `/api/v1`: buckets, access keys and presigned URLs
//! (spec section 4.9), with scopes `storage:read` and `storage:write`;
//! a bucket's objects are in [`crate::api_objects`].
//! Another organisation's bucket or key answers 404.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::{Extension, Json};
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::{Body, Validator};
use plateau_api::pagination::{Page, PageQuery, Pager};
use plateau_core::time;
use plateau_store::storage::buckets;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::Storage;
use crate::error::Error;
use crate::presign::{self, Presign};
use crate::provider::Bucket;

/// The storage routes, to merge into the API.
pub fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_buckets, create_bucket))
        .routes(routes!(get_bucket, delete_bucket))
        .routes(routes!(presign_url))
        .routes(routes!(
            crate::api_objects::list_objects,
            crate::api_objects::delete_object
        ))
        .routes(routes!(
            crate::api_keys::list_keys,
            crate::api_keys::create_key
        ))
        .routes(routes!(crate::api_keys::delete_key))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BucketView {
    pub id: String,
    /// The name chosen at creation.
    pub name: String,
    /// The S3 bucket name (`<prefix>-<org>-<name>-<suffix>`) clients use as `Bucket`.
    pub bucket: String,
    pub project_id: Option<String>,
    /// The S3 endpoint (`AWS_ENDPOINT_URL_S3`).
    pub endpoint: String,
    pub usage: BucketUsage,
    pub created_at: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BucketUsage {
    pub bytes: i64,
    pub objects: i64,
}

fn bucket_view(storage: &Storage, b: Bucket) -> BucketView {
    BucketView {
        id: b.id,
        name: b.name,
        bucket: b.bucket,
        project_id: b.project_id,
        endpoint: storage.endpoint(),
        usage: BucketUsage {
            bytes: b.bytes,
            objects: b.objects,
        },
        created_at: time::to_rfc3339(b.created_at),
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateBucket {
    /// 1 to 30 lowercase letters, digits and single hyphens.
    pub name: String,
    pub project_id: Option<String>,
    /// Object lock (S3's write-once retention) on the bucket; it turns
    /// versioning on, and neither can be turned off afterwards.
    #[serde(default)]
    pub object_lock: bool,
}

/// Turns a storage error into the API's.
pub(crate) fn api_error(e: Error) -> ApiError {
    match e {
        Error::NameTaken(_) => ApiError::conflict("name_taken", e.to_string()),
        Error::BucketNotEmpty => ApiError::conflict("bucket_not_empty", e.to_string()),
        Error::InvalidArgument(m) => ApiError::invalid("name", m),
        Error::NoSuchBucket => ApiError::not_found("the bucket does not exist"),
        Error::ObjectLocked => ApiError::forbidden("object_locked", e.to_string()),
        Error::Internal(m) => ApiError::Internal(m),
        other => ApiError::bad_request("storage_error", other.to_string()),
    }
}

pub(crate) fn page(pairs: &[(String, String)]) -> PageQuery {
    PageQuery::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
}

/// List the organisation's buckets, oldest first, with their usage.
#[utoipa::path(get, path = "/storage/buckets", tag = "storage",
    security(("bearer" = ["storage:read"])),
    params(("limit" = Option<u32>, Query, description = "page size, 1 to 200; turns pagination on"),
           ("cursor" = Option<String>, Query, description = "nextCursor of the previous page")),
    responses((status = 200, description = "buckets", body = Page<BucketView>)))]
pub async fn list_buckets(
    State(app): State<AppState>,
    Extension(storage): Extension<Storage>,
    caller: Caller,
    axum::extract::Query(pairs): axum::extract::Query<Vec<(String, String)>>,
) -> Result<Json<Page<BucketView>>, ApiError> {
    let pager = Pager::new(
        app.cursors(),
        &page(&pairs),
        "storage_buckets",
        &caller.org_id,
        String::new(),
    )?;
    let listed = buckets::list(
        app.db(),
        &caller.org_id,
        caller.project_id.as_deref(),
        pager.keyset(),
    )
    .await?;
    Ok(Json(pager.finish(
        listed,
        |b| b.id.clone(),
        |b| bucket_view(&storage, b),
    )))
}

/// Create a bucket. The answer names the S3 bucket clients use.
#[utoipa::path(post, path = "/storage/buckets", tag = "storage",
    security(("bearer" = ["storage:write"])),
    request_body = CreateBucket,
    responses((status = 201, description = "the new bucket", body = BucketView),
              (status = 409, description = "the name is taken", body = plateau_api::error::Problem)))]
pub async fn create_bucket(
    Extension(storage): Extension<Storage>,
    caller: Caller,
    Body(input): Body<CreateBucket>,
) -> Result<(StatusCode, Json<BucketView>), ApiError> {
    let mut v = Validator::new();
    if let Some(problem) = crate::names::check_name(&input.name) {
        v.check(false, "name", problem);
    }
    v.finish()?;
    let project_id = match (&caller.project_id, input.project_id) {
        (Some(only), Some(asked)) if *only != asked => {
            return Err(ApiError::forbidden(
                "project_limited_token",
                format!("this token is limited to project {only}"),
            ));
        }
        (Some(only), _) => Some(only.clone()),
        (None, asked) => asked,
    };
    let bucket = storage
        .provider()
        .create_bucket(
            &caller.org_id,
            project_id,
            &input.name,
            None,
            &caller.actor(),
        )
        .await
        .map_err(api_error)?;
    if input.object_lock {
        crate::lock::enable_on_new(storage.provider(), &bucket)
            .await
            .map_err(api_error)?;
    }
    Ok((StatusCode::CREATED, Json(bucket_view(&storage, bucket))))
}

pub(crate) async fn find(app: &AppState, caller: &Caller, id: &str) -> Result<Bucket, ApiError> {
    buckets::get(app.db(), &caller.org_id, id)
        .await?
        .filter(|b| {
            caller.project_id.is_none() || caller.project_id.as_deref() == b.project_id.as_deref()
        })
        .ok_or_else(|| ApiError::not_found(format!("bucket {id} does not exist")))
}

/// One bucket, with its usage.
#[utoipa::path(get, path = "/storage/buckets/{id}", tag = "storage",
    security(("bearer" = ["storage:read"])),
    params(("id" = String, Path, description = "bucket id")),
    responses((status = 200, description = "the bucket", body = BucketView)))]
pub async fn get_bucket(
    State(app): State<AppState>,
    Extension(storage): Extension<Storage>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<BucketView>, ApiError> {
    let bucket = find(&app, &caller, &id).await?;
    Ok(Json(bucket_view(&storage, bucket)))
}

/// Delete an empty bucket.
#[utoipa::path(delete, path = "/storage/buckets/{id}", tag = "storage",
    security(("bearer" = ["storage:write"])),
    params(("id" = String, Path, description = "bucket id")),
    responses((status = 200, description = "the deleted bucket", body = BucketView),
              (status = 409, description = "the bucket still holds objects or uploads", body = plateau_api::error::Problem)))]
pub async fn delete_bucket(
    State(app): State<AppState>,
    Extension(storage): Extension<Storage>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<BucketView>, ApiError> {
    let bucket = find(&app, &caller, &id).await?;
    storage
        .provider()
        .delete_bucket(&bucket, &caller.actor())
        .await
        .map_err(api_error)?;
    Ok(Json(bucket_view(&storage, bucket)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PresignRequest {
    /// The object key.
    pub key: String,
    /// `GET` (default) or `PUT`.
    pub method: Option<String>,
    /// 1 to 604800 (7 days); default 3600.
    pub expires_in_seconds: Option<u64>,
    /// The access key that signs the URL; the URL acts with its rights.
    pub access_key_id: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Presigned {
    pub url: String,
    pub method: String,
    pub expires_at: String,
}

/// A presigned GET or PUT URL for an object of the bucket.
#[utoipa::path(post, path = "/storage/buckets/{id}/presign", tag = "storage",
    security(("bearer" = ["storage:write"])),
    params(("id" = String, Path, description = "bucket id")),
    request_body = PresignRequest,
    responses((status = 200, description = "the URL", body = Presigned)))]
pub async fn presign_url(
    State(app): State<AppState>,
    Extension(storage): Extension<Storage>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<PresignRequest>,
) -> Result<Json<Presigned>, ApiError> {
    let method = input
        .method
        .as_deref()
        .unwrap_or("GET")
        .to_ascii_uppercase();
    let expires = input.expires_in_seconds.unwrap_or(3600);
    Validator::new()
        .check(
            !input.key.is_empty() && input.key.len() <= 1024,
            "key",
            "key must be 1 to 1024 bytes",
        )
        .check(
            method == "GET" || method == "PUT",
            "method",
            "method must be GET or PUT",
        )
        .check(
            (1..=presign::MAX_EXPIRES).contains(&expires),
            "expiresInSeconds",
            "expiresInSeconds must be between 1 and 604800 (7 days)",
        )
        .finish()?;
    let bucket = find(&app, &caller, &id).await?;
    let key = storage
        .keys()
        .principal_of_org(&caller.org_id, &input.access_key_id)
        .await
        .map_err(api_error)?
        .ok_or_else(|| {
            ApiError::invalid(
                "accessKeyId",
                "no access key of this organisation has this id",
            )
        })?;
    if !key.may(&bucket.id, method == "PUT") {
        return Err(ApiError::invalid(
            "accessKeyId",
            "this access key may not do this on this bucket",
        ));
    }
    let now = time::now_ms() / 1000;
    let endpoint = storage.endpoint();
    let url = presign::url(&Presign {
        method: &method,
        endpoint: &endpoint,
        bucket: &bucket.bucket,
        key: &input.key,
        access_key_id: &key.access_key_id,
        secret: &key.secret,
        region: &storage.config().region,
        now,
        expires,
    });
    Ok(Json(Presigned {
        url,
        method,
        expires_at: time::to_rfc3339((now + expires as i64) * 1000),
    }))
}
