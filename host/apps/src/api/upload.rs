//! Source uploads (spec section 4.4): `POST /apps/{id}/source-upload`
//! hands out a presigned URL; the archive is PUT there, with no token,
//! and a deployment with its `uploadId` builds it.

use axum::body::Body as RawBody;
use axum::extract::Path;
use axum::http::{HeaderMap, StatusCode, header};
use axum::{Extension, Json};
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_api::routes::{Pairs, param};
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_store::apps::uploads::{self, Upload};
use serde::Serialize;
use utoipa::ToSchema;

use super::deploy::Empty;
use super::load_live_in;
use crate::Apps;
use crate::upload::{StoreError, archive_path, receive};

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UploadTicket {
    /// What a deployment names to build the archive (`uploadId`).
    pub upload_id: String,
    /// PUT the gzip-compressed tar archive here, without a token.
    pub url: String,
    /// Always `PUT`.
    pub method: String,
    /// The URL is refused after this time.
    pub expires_at: String,
    /// The largest archive the URL takes.
    pub max_bytes: u64,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StoredUpload {
    pub upload_id: String,
    pub bytes: u64,
    pub stored_at: String,
}

/// A presigned URL to upload local code to, once, as a tar.gz archive
/// (a `Dockerfile`, or a Rust crate for `wasm32-wasip2`, at its top).
#[utoipa::path(post, path = "/apps/{id}/source-upload", tag = "apps",
    security(("bearer" = ["apps:deploy"])),
    params(("id" = String, Path, description = "app id")),
    request_body = Empty,
    responses((status = 201, description = "where to PUT the archive", body = UploadTicket),
              (status = 503, description = "this host takes no uploads", body = plateau_api::error::Problem)))]
pub async fn create(
    Extension(apps): Extension<Apps>,
    caller: Caller,
    Path(id): Path<String>,
    Body(_empty): Body<Empty>,
) -> Result<(StatusCode, Json<UploadTicket>), ApiError> {
    let (Some(signer), Some(_)) = (
        apps.inner.uploads.as_ref(),
        apps.config().uploads_dir.as_ref(),
    ) else {
        return Err(ApiError::Unavailable(
            "this host takes no source uploads; deploy an image or a git repository".to_owned(),
        ));
    };
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    let app = load_live_in(&mut tx, &caller, &id).await?;
    let ttl = apps.config().upload_ttl.as_millis() as i64;
    let upload = Upload {
        id: new_id("upl"),
        app_id: app.id.clone(),
        org_id: app.org_id.clone(),
        stored_at: None,
        bytes: None,
        expires_at: now + ttl,
        created_at: now,
    };
    uploads::insert(&mut tx, &upload).await?;
    tx.commit_last().await?;
    let expires = upload.expires_at / 1000;
    let signature = signer.sign(&app.id, &upload.id, expires);
    let url = format!(
        "{}{}/apps/{}/source-upload/{}?expires={expires}&signature={signature}",
        apps.config().public_url.trim_end_matches('/'),
        plateau_api::API_PREFIX,
        app.id,
        upload.id,
    );
    Ok((
        StatusCode::CREATED,
        Json(UploadTicket {
            upload_id: upload.id,
            url,
            method: "PUT".to_owned(),
            expires_at: time::to_rfc3339(expires * 1000),
            max_bytes: apps.config().upload_max_bytes,
        }),
    ))
}

/// Upload the archive to a URL from `POST /apps/{id}/source-upload`; the
/// signature in the URL is the credential. An upload takes one archive.
#[utoipa::path(put, path = "/apps/{id}/source-upload/{uploadId}", tag = "apps",
    security(()),
    params(("id" = String, Path, description = "app id"),
           ("uploadId" = String, Path, description = "upload id"),
           ("expires" = i64, Query, description = "from the presigned URL"),
           ("signature" = String, Query, description = "from the presigned URL")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "a gzip-compressed tar archive, whatever the content type says"),
    responses((status = 200, description = "the stored archive", body = StoredUpload),
              (status = 400, description = "not a tar.gz archive, or the URL's query is not a presigned one", body = plateau_api::error::Problem),
              (status = 403, description = "a wrong signature, or an expired URL", body = plateau_api::error::Problem),
              (status = 404, description = "no such upload", body = plateau_api::error::Problem),
              (status = 409, description = "the upload already has its archive", body = plateau_api::error::Problem),
              (status = 413, description = "the archive is larger than the URL takes", body = plateau_api::error::Problem),
              (status = 503, description = "this host takes no uploads", body = plateau_api::error::Problem)))]
pub async fn put(
    Extension(apps): Extension<Apps>,
    Path((id, upload_id)): Path<(String, String)>,
    pairs: Pairs,
    headers: HeaderMap,
    body: RawBody,
) -> Result<Json<StoredUpload>, ApiError> {
    let (Some(signer), Some(dir)) = (
        apps.inner.uploads.as_ref(),
        apps.config().uploads_dir.clone(),
    ) else {
        return Err(ApiError::Unavailable(
            "this host takes no source uploads".to_owned(),
        ));
    };
    let expires = param(&pairs, "expires")
        .and_then(|e| e.parse::<i64>().ok())
        .ok_or_else(|| ApiError::invalid("expires", "must be the expiry of the presigned URL"))?;
    let signature = param(&pairs, "signature")
        .ok_or_else(|| ApiError::invalid("signature", "must be the presigned URL's signature"))?;
    if !signer.verify(&id, &upload_id, expires, signature) {
        return Err(ApiError::forbidden(
            "invalid_upload_signature",
            "the upload URL's signature does not match; use the URL as POST /apps/{id}/source-upload gave it",
        ));
    }
    let now = time::now_ms();
    if expires * 1000 < now {
        return Err(ApiError::forbidden(
            "upload_url_expired",
            "the upload URL has expired; ask POST /apps/{id}/source-upload for a new one",
        ));
    }
    let max = apps.config().upload_max_bytes;
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max) {
        return Err(too_large(max));
    }
    let upload = uploads::get(apps.db(), &id, &upload_id)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("upload {upload_id} does not exist")))?;
    if upload.stored_at.is_some() {
        return Err(already());
    }
    let (partial, bytes) = receive(&dir, &upload.id, body, max)
        .await
        .map_err(|e| match e {
            StoreError::TooLarge(max) => too_large(max),
            StoreError::NotGzip | StoreError::Body(_) => {
                ApiError::bad_request("invalid_archive", format!("{e}; send a tar.gz archive"))
            }
            StoreError::Io(e) => ApiError::Internal(format!("storing an upload: {e}")),
        })?;
    let stored = store(&apps, &upload, &partial, &dir, bytes).await;
    if stored.is_err() {
        let _ = tokio::fs::remove_file(&partial).await;
    }
    let at = stored?;
    Ok(Json(StoredUpload {
        upload_id: upload.id,
        bytes,
        stored_at: time::to_rfc3339(at),
    }))
}

/// Records the archive and gives it its final name in one transaction.
async fn store(
    apps: &Apps,
    upload: &Upload,
    partial: &std::path::Path,
    dir: &std::path::Path,
    bytes: u64,
) -> Result<i64, ApiError> {
    let now = time::now_ms();
    let mut tx = apps.db().begin().await?;
    if !uploads::set_stored(&mut tx, &upload.id, bytes as i64, now).await? {
        return Err(already());
    }
    let archive = archive_path(dir, &upload.id);
    tokio::fs::rename(partial, &archive)
        .await
        .map_err(|e| ApiError::Internal(format!("storing an upload: {e}")))?;
    if let Err(e) = tx.commit().await {
        let _ = tokio::fs::remove_file(&archive).await;
        return Err(e.into());
    }
    Ok(now)
}

fn too_large(max: u64) -> ApiError {
    ApiError::PayloadTooLarge(format!(
        "the archive is larger than the {max} bytes an upload takes; leave build output out of it"
    ))
}

fn already() -> ApiError {
    ApiError::conflict(
        "upload_already_stored",
        "this upload already has its archive; ask POST /apps/{id}/source-upload for a new URL",
    )
}
