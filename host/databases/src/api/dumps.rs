//! Managed dump restore (issue 32, spec 4.6): `POST .../restore-dump/upload-url`
//! hands out a presigned URL (its token is the credential, kept hashed)
//! where the dump is PUT, into the backup store; `POST .../restore-dump`
//! (`dumpKey`, `preSeed`) asks the agent for a restore job
//! (`crate::dumps` runs it); `GET .../restore-dump[/{jobId}]` reports its
//! `status`, `tableCounts` and root-cause `error`. The dump stays for
//! retries until the database goes.

use std::collections::BTreeMap;

use axum::Json;
use axum::body::Body as RawBody;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use http_body_util::BodyExt as _;
use object_store::{ObjectStoreExt as _, WriteMultipart};
use plateau_api::AppState;
use plateau_api::auth::Caller;
use plateau_api::error::ApiError;
use plateau_api::json::Body;
use plateau_api::routes::{Pairs, param};
use plateau_core::id::new_id;
use plateau_core::time;
use plateau_kernel::Status;
use plateau_store::databases::dumps::{self, Job, Upload};
use plateau_store::events::{self, NewEvent};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;
use utoipa::ToSchema;

use super::{Service, find};
use crate::spec::EXTENSIONS;

/// How long an upload URL works.
const UPLOAD_TTL_MS: i64 = 3_600_000;

#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UploadUrlRequest {
    /// The dump will be gzip-compressed (either way is recognized when it
    /// is read; this only names the key).
    pub gzip: Option<bool>,
}

#[derive(Serialize, ToSchema)]
#[schema(as = DatabaseDumpUpload)]
#[serde(rename_all = "camelCase")]
pub struct UploadTicket {
    /// What `POST /databases/{id}/restore-dump` names (`dumpKey`).
    pub key: String,
    /// PUT the dump here, without a token.
    pub url: String,
    /// Always `PUT`.
    pub method: String,
    pub expires_at: String,
    /// The largest dump the URL takes: the database's disk size
    /// (`diskGb`), at least 1 GiB.
    pub max_bytes: u64,
}

fn sha256_hex(text: &str) -> String {
    hex::encode(sha2::Sha256::digest(text.as_bytes()))
}

/// A presigned URL to upload a dump to (pg_dump's custom format or plain
/// SQL, optionally gzip-compressed), once.
#[utoipa::path(post, path = "/databases/{id}/restore-dump/upload-url", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    request_body = Option<UploadUrlRequest>,
    responses((status = 201, description = "where to PUT the dump", body = UploadTicket)))]
pub async fn upload_url(
    State(app): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Path(id): Path<String>,
    Body(input): Body<UploadUrlRequest>,
) -> Result<(StatusCode, Json<UploadTicket>), ApiError> {
    let d = find(&app, &caller, &id).await?;
    let now = time::now_ms();
    let suffix = if input.gzip.unwrap_or(false) {
        ".gz"
    } else {
        ""
    };
    let key = format!("{}{suffix}", new_id("dump"));
    let token: String = (0..32)
        .map(|_| char::from_digit(rand::random_range(0..16u32), 16).unwrap_or('0'))
        .collect();
    let upload = Upload {
        key: key.clone(),
        database_id: d.id.clone(),
        org_id: caller.org_id.clone(),
        token_sha256: sha256_hex(&token),
        expires_at: now + UPLOAD_TTL_MS,
        bytes: None,
        stored_at: None,
        created_at: now,
    };
    dumps::insert_upload(app.db(), &upload).await?;
    let host = headers
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("localhost");
    let scheme = headers
        .get("x-forwarded-proto")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("http");
    let url = format!(
        "{scheme}://{host}{}/databases/{}/restore-dump/uploads/{key}?token={token}",
        plateau_api::API_PREFIX,
        d.id
    );
    Ok((
        StatusCode::CREATED,
        Json(UploadTicket {
            key,
            url,
            method: "PUT".to_owned(),
            expires_at: time::to_rfc3339(upload.expires_at),
            max_bytes: crate::dumps::max_bytes(d.disk_gb),
        }),
    ))
}

#[derive(Serialize, ToSchema)]
#[schema(as = DatabaseStoredDump)]
#[serde(rename_all = "camelCase")]
pub struct StoredDump {
    pub key: String,
    pub bytes: u64,
}

/// Upload a dump to a URL from `POST .../restore-dump/upload-url`; its
/// token is the credential. A URL takes one dump.
#[utoipa::path(put, path = "/databases/{id}/restore-dump/uploads/{key}", tag = "databases",
    security(()),
    params(("id" = String, Path, description = "database id"),
           ("key" = String, Path, description = "the dump's key"),
           ("token" = String, Query, description = "from the presigned URL")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream", description = "the dump"),
    responses((status = 200, description = "the stored dump", body = StoredDump),
              (status = 400, description = "no token, or a body cut off", body = plateau_api::error::Problem),
              (status = 403, description = "a wrong token, or an expired URL", body = plateau_api::error::Problem),
              (status = 409, description = "the URL already took its dump", body = plateau_api::error::Problem),
              (status = 413, description = "the dump is larger than the URL takes", body = plateau_api::error::Problem)))]
pub async fn put(
    State(app): State<AppState>,
    service: Service,
    Path((id, key)): Path<(String, String)>,
    pairs: Pairs,
    body: RawBody,
) -> Result<Json<StoredDump>, ApiError> {
    let token = param(&pairs, "token")
        .ok_or_else(|| ApiError::invalid("token", "must be the URL's token"))?;
    let denied = || {
        ApiError::forbidden(
            "invalid_upload_token",
            "the upload URL is not valid (wrong token or expired); ask POST /databases/{id}/restore-dump/upload-url for a new one",
        )
    };
    let upload = dumps::upload(app.db(), &id, &key)
        .await?
        .ok_or_else(denied)?;
    if upload.token_sha256 != sha256_hex(token) || upload.expires_at < time::now_ms() {
        return Err(denied());
    }
    if upload.stored_at.is_some() {
        return Err(ApiError::conflict(
            "dump_already_stored",
            "this URL already took its dump; ask for a new URL to upload another",
        ));
    }
    // The database's size now, should it have been resized since the URL.
    let d = plateau_store::databases::get(app.db(), &upload.org_id, &id)
        .await?
        .ok_or_else(denied)?;
    let limit = crate::dumps::max_bytes(d.disk_gb);
    let bytes = store_upload(&service, &crate::dumps::dump_key(&id, &key), body, limit).await?;
    dumps::stored(app.db(), &key, bytes as i64, time::now_ms()).await?;
    Ok(Json(StoredDump { key, bytes }))
}

/// Streams the body into the backup store as object `key`, a part at a
/// time (what the store's parts and the frame in hand hold, whatever the
/// dump's size): its size. A body past `limit` bytes, or cut off, leaves
/// no object.
async fn store_upload(
    service: &Service,
    key: &object_store::path::Path,
    body: RawBody,
    limit: u64,
) -> Result<u64, ApiError> {
    let store = service.provider().dump_store();
    let stored = |e: object_store::Error| ApiError::Internal(format!("storing a dump: {e}"));
    let upload = store.store.put_multipart(key).await.map_err(stored)?;
    let mut writer = WriteMultipart::new_with_chunk_size(upload, store.part_size());
    let mut body = body;
    let mut bytes = 0u64;
    let copied: Result<(), ApiError> = async {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| ApiError::bad_request("body", e.to_string()))?;
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
            bytes += chunk.len() as u64;
            if bytes > limit {
                return Err(ApiError::PayloadTooLarge(format!(
                    "the dump is larger than the {limit} bytes an upload to this database takes (its diskGb)"
                )));
            }
            writer.wait_for_capacity(2).await.map_err(stored)?;
            writer.put(chunk);
        }
        Ok(())
    }
    .await;
    if let Err(e) = copied {
        let _ = writer.abort().await;
        return Err(e);
    }
    writer.finish().await.map_err(stored)?;
    Ok(bytes)
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Seed {
    /// An allowlisted extension, created before the dump runs.
    pub extension: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RestoreDump {
    /// The key of an uploaded dump.
    pub dump_key: String,
    /// Extensions the dump needs, created first.
    #[serde(default)]
    pub pre_seed: Vec<Seed>,
}

/// A dump restore job.
#[derive(Serialize, ToSchema)]
#[schema(as = DatabaseDumpRestore)]
#[serde(rename_all = "camelCase")]
pub struct JobView {
    pub id: String,
    pub dump_key: String,
    pub pre_seed: Vec<String>,
    /// `pending`, `running`, `completed` or `failed`.
    pub status: String,
    /// Rows of each table (`schema.table`) once restored.
    pub table_counts: Option<BTreeMap<String, i64>>,
    /// The root cause of a failure; the database is then as it was.
    pub error: Option<String>,
    pub created_at: String,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
}

fn view(j: Job) -> JobView {
    JobView {
        id: j.id,
        dump_key: j.dump_key,
        pre_seed: serde_json::from_str(&j.pre_seed).unwrap_or_default(),
        status: j.status,
        table_counts: j.table_counts.and_then(|t| serde_json::from_str(&t).ok()),
        error: j.error,
        created_at: time::to_rfc3339(j.created_at),
        started_at: j.started_at.map(time::to_rfc3339),
        ended_at: j.ended_at.map(time::to_rfc3339),
    }
}

/// Restore an uploaded dump into the database, in one transaction as its
/// owner role: the answer comes first, with the job `pending`.
#[utoipa::path(post, path = "/databases/{id}/restore-dump", tag = "databases",
    security(("bearer" = ["databases:write"])),
    params(("id" = String, Path, description = "database id")),
    request_body = RestoreDump,
    responses((status = 202, description = "the job, `pending`", body = JobView),
              (status = 400, description = "a bad field, named", body = plateau_api::error::Problem),
              (status = 409, description = "the database is not running, or restores another dump", body = plateau_api::error::Problem)))]
pub async fn restore(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Body(input): Body<RestoreDump>,
) -> Result<(StatusCode, Json<JobView>), ApiError> {
    let d = find(&app, &caller, &id).await?;
    for (i, seed) in input.pre_seed.iter().enumerate() {
        if !EXTENSIONS.contains(&seed.extension.as_str()) {
            return Err(ApiError::invalid(
                format!("preSeed[{i}].extension"),
                format!("must be one of {}", EXTENSIONS.join(", ")),
            ));
        }
    }
    let stored = dumps::upload(app.db(), &id, &input.dump_key)
        .await?
        .is_some_and(|u| u.stored_at.is_some());
    if !stored {
        return Err(ApiError::invalid(
            "dumpKey",
            "no dump was uploaded under this key for this database",
        ));
    }
    if !matches!(Status::read(&d.status), Status::Running | Status::Degraded) {
        return Err(ApiError::conflict(
            "database_busy",
            format!("database {id} is {}; restore once it is running", d.status),
        ));
    }
    if dumps::in_flight(app.db(), &id).await? {
        return Err(ApiError::conflict(
            "dump_restore_running",
            format!("database {id} is restoring another dump; wait until it ends"),
        ));
    }
    let now = time::now_ms();
    let seeds: Vec<&str> = input
        .pre_seed
        .iter()
        .map(|s| s.extension.as_str())
        .collect();
    let job = Job {
        id: new_id("dmr"),
        database_id: id.clone(),
        org_id: caller.org_id.clone(),
        dump_key: input.dump_key.clone(),
        pre_seed: serde_json::to_string(&seeds).expect("serializes"),
        status: "pending".to_owned(),
        error: None,
        table_counts: None,
        created_at: now,
        started_at: None,
        ended_at: None,
    };
    dumps::insert_job(app.db(), &job).await?;
    let event = NewEvent::audited(
        &caller.org_id,
        "database.dump_restore_requested",
        "resources",
        "update",
        &caller.actor(),
    )
    .resource("database", &id)
    .data(serde_json::json!({ "job": job.id, "dumpKey": job.dump_key, "preSeed": seeds }));
    let mut tx = app.db().begin().await?;
    events::record(&mut tx, &event, now).await?;
    tx.commit().await?;
    Ok((StatusCode::ACCEPTED, Json(view(job))))
}

/// The dump restore jobs of the database, newest first.
#[utoipa::path(get, path = "/databases/{id}/restore-dump", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id")),
    responses((status = 200, description = "the jobs", body = Vec<JobView>)))]
pub async fn list(
    State(app): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<Vec<JobView>>, ApiError> {
    find(&app, &caller, &id).await?;
    let jobs = dumps::jobs(app.db(), &id).await?;
    Ok(Json(jobs.into_iter().map(view).collect()))
}

/// One dump restore job: its status, table counts and root-cause error.
#[utoipa::path(get, path = "/databases/{id}/restore-dump/{jobId}", tag = "databases",
    security(("bearer" = ["databases:read"])),
    params(("id" = String, Path, description = "database id"),
           ("jobId" = String, Path, description = "job id")),
    responses((status = 200, description = "the job", body = JobView)))]
pub async fn get(
    State(app): State<AppState>,
    caller: Caller,
    Path((id, job_id)): Path<(String, String)>,
) -> Result<Json<JobView>, ApiError> {
    find(&app, &caller, &id).await?;
    let job = dumps::job(app.db(), &id, &job_id).await?.ok_or_else(|| {
        ApiError::not_found(format!("database {id} has no dump restore {job_id}"))
    })?;
    Ok(Json(view(job)))
}
