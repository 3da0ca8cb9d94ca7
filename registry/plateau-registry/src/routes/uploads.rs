//! Blob uploads: start (`POST`, with cross-repository mount and the
//! single-request form), chunks (`PATCH` with `Content-Range`), status
//! (`GET`), completion (`PUT ?digest=`) and cancellation (`DELETE`).
//!
//! Each request body streams into its own object (a part) while being
//! hashed; the part is recorded only once written, so a partial upload is
//! never visible and an interrupted chunk keeps what arrived. Completion
//! moves a single part into place (a rename locally) or concatenates
//! several, checks the digest, and records the blob. The digest comes from
//! the running hash of the PATCHes when this host saw them all; only
//! otherwise is the content read back.

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use plateau_core::time;
use plateau_store::registry::blobs;
use plateau_store::registry::uploads::{self, Upload};

use super::{Ctx, query, query_value, range_header};
use crate::blobs::BlobStore;
use crate::error::{Error, Result};
use crate::quota::Allowance;
use crate::reference::{Algorithm, Digest, Hasher, is_valid_name};

fn upload_location(ctx: &Ctx, id: &str) -> String {
    format!("/v2/{}/blobs/uploads/{id}", ctx.name)
}

fn accepted(ctx: &Ctx, id: &str, size: u64, status: StatusCode) -> Response {
    (
        status,
        [
            (header::LOCATION, upload_location(ctx, id)),
            (header::RANGE, range_header(size)),
            (
                header::HeaderName::from_static("docker-upload-uuid"),
                id.to_owned(),
            ),
            (header::CONTENT_LENGTH, "0".to_owned()),
        ],
    )
        .into_response()
}

fn created(ctx: &Ctx, digest: &Digest) -> Response {
    (
        StatusCode::CREATED,
        [
            (header::LOCATION, format!("/v2/{}/blobs/{digest}", ctx.name)),
            (
                header::HeaderName::from_static("docker-content-digest"),
                digest.to_string(),
            ),
            (header::CONTENT_LENGTH, "0".to_owned()),
        ],
    )
        .into_response()
}

pub async fn start(ctx: &Ctx, req: &Parts, body: Body) -> Result<Response> {
    let q = query(req);
    if let Some(mount) = query_value(&q, "mount") {
        let digest = Digest::parse(mount)?;
        if let Some(from) = query_value(&q, "from")
            && mount_from(ctx, &digest, from).await?
        {
            return Ok(created(ctx, &digest));
        }
    }
    let digest = query_value(&q, "digest").map(Digest::parse).transpose()?;
    let algorithm = match (query_value(&q, "digest-algorithm"), &digest) {
        (Some(a), _) => Algorithm::parse(a)?,
        (None, Some(d)) => d.algorithm,
        (None, None) => Algorithm::Sha256,
    };
    let open = uploads::count_for_org(ctx.reg.db(), &ctx.access.org_id).await?;
    if open >= ctx.reg.config().max_uploads_per_org {
        return Err(Error::TooManyRequests {
            message: format!(
                "the organisation has {open} uploads in progress: finish or cancel some first"
            ),
            retry_after_secs: 60,
        });
    }
    let now = time::now_ms();
    let upload = Upload {
        id: uuid::Uuid::new_v4().to_string(),
        org_id: ctx.access.org_id.clone(),
        repository: ctx.name.clone(),
        algorithm: algorithm.as_str().to_owned(),
        size: 0,
        parts: "[]".to_owned(),
        created_at: now,
        updated_at: now,
    };
    let mut tx = ctx.reg.db().begin().await?;
    uploads::insert(&mut tx, &upload).await?;
    tx.commit().await?;
    match digest {
        Some(digest) => {
            let upload = append(ctx, upload, body).await?;
            complete(ctx, upload, &digest).await
        }
        None => Ok(accepted(ctx, &upload.id, 0, StatusCode::ACCEPTED)),
    }
}

/// Mounts a blob from another repository of the same organisation; false
/// when that is not possible (the caller falls back to an upload).
async fn mount_from(ctx: &Ctx, digest: &Digest, from: &str) -> Result<bool> {
    let same_org = is_valid_name(from)
        && from
            .split_once('/')
            .is_some_and(|(org, _)| org == ctx.access.org_id);
    if !same_org {
        return Ok(false);
    }
    let digest = digest.to_string();
    if blobs::in_repository(ctx.reg.db(), from, &digest)
        .await?
        .is_none()
    {
        return Ok(false);
    }
    let now = time::now_ms();
    let mut tx = ctx.reg.db().begin().await?;
    if blobs::touch(&mut tx, &ctx.access.org_id, &digest, now)
        .await?
        .is_none()
    {
        return Ok(false);
    }
    blobs::link(&mut tx, &ctx.access.org_id, &ctx.name, &digest, now).await?;
    tx.commit().await?;
    Ok(true)
}

async fn load(ctx: &Ctx, id: &str) -> Result<Upload> {
    uploads::get(ctx.reg.db(), &ctx.name, id)
        .await?
        .ok_or_else(|| {
            Error::BlobUploadUnknown(format!("upload {id} is not known: start a new one"))
        })
}

pub async fn status(ctx: &Ctx, id: &str) -> Result<Response> {
    let upload = load(ctx, id).await?;
    Ok(accepted(
        ctx,
        id,
        upload.size as u64,
        StatusCode::NO_CONTENT,
    ))
}

/// Checks `Content-Range` (`<start>-<end>`, inclusive) against where the
/// upload stands and against `Content-Length`.
fn check_range(ctx: &Ctx, upload: &Upload, headers: &HeaderMap) -> Result<()> {
    let Some(range) = headers.get(header::CONTENT_RANGE) else {
        return Ok(());
    };
    let malformed =
        || Error::BlobUploadInvalid("Content-Range must be <start>-<end>, inclusive".to_owned());
    let range = range.to_str().map_err(|_| malformed())?.trim();
    let range = range.strip_prefix("bytes ").unwrap_or(range);
    let range = range.split('/').next().unwrap_or(range);
    let (a, b) = range.split_once('-').ok_or_else(malformed)?;
    let (start, end): (u64, u64) = (
        a.parse().map_err(|_| malformed())?,
        b.parse().map_err(|_| malformed())?,
    );
    if end < start {
        return Err(malformed());
    }
    if start != upload.size as u64 {
        return Err(Error::RangeNotSatisfiable {
            size: upload.size as u64,
            location: upload_location(ctx, &upload.id),
        });
    }
    let length = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if length.is_some_and(|n| n != end - start + 1) {
        return Err(Error::SizeInvalid(format!(
            "Content-Length does not match Content-Range {start}-{end}"
        )));
    }
    Ok(())
}

pub async fn patch(ctx: &Ctx, id: &str, req: &Parts, body: Body) -> Result<Response> {
    let upload = load(ctx, id).await?;
    check_range(ctx, &upload, &req.headers)?;
    let upload = append(ctx, upload, body).await?;
    Ok(accepted(ctx, id, upload.size as u64, StatusCode::ACCEPTED))
}

pub async fn put(ctx: &Ctx, id: &str, req: &Parts, body: Body) -> Result<Response> {
    let q = query(req);
    let digest = query_value(&q, "digest").ok_or_else(|| {
        Error::BlobUploadInvalid(
            "close the upload with PUT ?digest=<digest of the whole blob>".to_owned(),
        )
    })?;
    let digest = Digest::parse(digest)?;
    let upload = load(ctx, id).await?;
    check_range(ctx, &upload, &req.headers)?;
    let upload = append(ctx, upload, body).await?;
    complete(ctx, upload, &digest).await
}

pub async fn cancel(ctx: &Ctx, id: &str) -> Result<Response> {
    let upload = load(ctx, id).await?;
    discard(ctx, &upload).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// Forgets an upload and deletes its parts.
async fn discard(ctx: &Ctx, upload: &Upload) -> Result<()> {
    let mut tx = ctx.reg.db().begin().await?;
    uploads::delete(&mut tx, &upload.id).await?;
    tx.commit().await?;
    ctx.reg.forget_hasher(&upload.id);
    ctx.reg
        .store()
        .delete_prefix(&BlobStore::upload_prefix(&upload.id))
        .await?;
    Ok(())
}

/// Streams the request body into a new part; returns the upload as it
/// then stands.
async fn append(ctx: &Ctx, mut upload: Upload, body: Body) -> Result<Upload> {
    let size = upload.size as u64;
    let algorithm = Algorithm::parse(&upload.algorithm)?;
    let hasher = ctx
        .reg
        .take_hasher(&upload.id, size)
        .or_else(|| (size == 0).then(|| algorithm.hasher()));
    let allowance = Allowance::of(&ctx.reg, &ctx.access.org_id).await?;
    let limit = allowance.remaining.saturating_sub(size);
    let key = BlobStore::part_key(&upload.id, size);
    let body = body.into_data_stream();
    let (n, _end, hasher) = ctx
        .reg
        .store()
        .write_stream(&key, body, hasher, limit, || allowance.message())
        .await?;
    if n == 0 {
        if let Some(h) = hasher {
            ctx.reg.put_hasher(&upload.id, size, h);
        }
        return Ok(upload);
    }
    let now = time::now_ms();
    if !uploads::append_part(ctx.reg.db(), &upload, upload.size, &key, n as i64, now).await? {
        ctx.reg.store().delete(&key).await?;
        let current = load(ctx, &upload.id).await?;
        return Err(Error::RangeNotSatisfiable {
            size: current.size as u64,
            location: upload_location(ctx, &upload.id),
        });
    }
    if let Some(h) = hasher {
        ctx.reg.put_hasher(&upload.id, size + n, h);
    }
    let mut parts = upload.part_keys();
    parts.push(key);
    upload.parts = serde_json::to_string(&parts).unwrap_or_default();
    upload.size += n as i64;
    Ok(upload)
}

/// Verifies the whole content against `expected` and records the blob.
async fn complete(ctx: &Ctx, upload: Upload, expected: &Digest) -> Result<Response> {
    let store = ctx.reg.store();
    let parts = upload.part_keys();
    let dest = BlobStore::blob_key(&ctx.access.org_id, expected, &upload.id);
    let cached = ctx
        .reg
        .take_hasher(&upload.id, upload.size as u64)
        .filter(|h| h.algorithm() == expected.algorithm);
    let actual = match parts.as_slice() {
        [] => {
            store.put_empty(&dest).await?;
            expected.algorithm.digest_of(b"")
        }
        [part] => {
            let digest = match cached {
                Some(h) => h.finish(),
                None => store
                    .hash(part, expected.algorithm.hasher())
                    .await?
                    .finish(),
            };
            if digest == *expected {
                store.rename(part, &dest).await?;
            }
            digest
        }
        // The PATCHes hashed the content already: check before copying.
        _ => match cached.map(Hasher::finish) {
            Some(digest) => {
                if digest == *expected {
                    store.concat(&parts, &dest, None).await?;
                }
                digest
            }
            None => store
                .concat(&parts, &dest, Some(expected.algorithm.hasher()))
                .await?
                .map(Hasher::finish)
                .ok_or_else(|| Error::Internal("concatenation lost its hasher".to_owned()))?,
        },
    };
    if actual != *expected {
        store.delete(&dest).await?;
        discard(ctx, &upload).await?;
        return Err(Error::DigestInvalid(format!(
            "the uploaded content has digest {actual}, not {expected}"
        )));
    }
    let digest = expected.to_string();
    let org = &ctx.access.org_id;
    if blobs::of_org(ctx.reg.db(), org, &digest).await?.is_none() {
        let allowance = Allowance::of(&ctx.reg, org).await?;
        if let Err(e) = allowance.check(upload.size as u64) {
            store.delete(&dest).await?;
            discard(ctx, &upload).await?;
            return Err(e);
        }
    }
    let now = time::now_ms();
    let mut tx = ctx.reg.db().begin().await?;
    let key = blobs::upsert(&mut tx, org, &digest, upload.size, &dest, now).await?;
    blobs::link(&mut tx, org, &ctx.name, &digest, now).await?;
    uploads::delete(&mut tx, &upload.id).await?;
    tx.commit().await?;
    if key != dest {
        // The organisation had this content already: keep one copy.
        store.delete(&dest).await?;
    }
    if parts.len() > 1 {
        store
            .delete_prefix(&BlobStore::upload_prefix(&upload.id))
            .await?;
    }
    Ok(created(ctx, expected))
}
