//! Multipart uploads over S3: create, upload part, complete, abort, list
//! parts and list uploads.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::encryption;
use super::fields::{sent_checksums, set_checksums, set_encryption};
use super::headers::{condition, headers_of};
use super::objects::{body, write_error};
use super::{Front, actor, s3_error};
use crate::provider::{Bucket as Stored, ObjectInfo};

pub(super) async fn create(
    front: &Front,
    req: S3Request<CreateMultipartUploadInput>,
) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
    let (principal, bucket) = front.writer(&req, &req.input.bucket).await?;
    let input = req.input;
    let customer = encryption::customer(
        input.sse_customer_algorithm.as_deref(),
        input.sse_customer_key.as_deref(),
        input.sse_customer_key_md5.as_deref(),
    )?;
    let defaults = super::bucket_encryption::defaults(front, &bucket).await?;
    let plan = encryption::plan(
        &front.storage,
        &principal.org_id,
        defaults.encryption.as_ref(),
        encryption::asked!(input, customer.as_ref()),
    )?;
    let algorithm = match &input.checksum_algorithm {
        Some(a) => {
            let a = a.as_str().to_ascii_lowercase();
            if !["crc32", "crc32c", "crc64nvme", "sha1", "sha256"].contains(&a.as_str()) {
                return Err(S3Error::with_message(
                    S3ErrorCode::InvalidRequest,
                    "the checksum algorithm is not supported",
                ));
            }
            Some(a)
        }
        None => None,
    };
    if input
        .checksum_type
        .as_ref()
        .is_some_and(|t| t.as_str() == ChecksumType::FULL_OBJECT)
    {
        return Err(S3Error::with_message(
            S3ErrorCode::NotImplemented,
            "full-object checksums of multipart uploads are not supported; use COMPOSITE",
        ));
    }
    let tags = super::tagging::from_header(input.tagging.as_deref())?;
    let acl = super::acl::for_object(
        front,
        &principal,
        &bucket,
        input.acl.as_ref(),
        [
            &input.grant_full_control,
            &input.grant_read,
            &input.grant_read_acp,
            &input.grant_write_acp,
        ],
    )
    .await?;
    let mut headers = headers_of(
        input.content_type,
        input.content_encoding,
        input.content_disposition,
        input.content_language,
        input.cache_control,
        input.expires,
        input.metadata,
    );
    headers.sse = plan.map(|p| p.sealed);
    headers.checksum_algorithm = algorithm;
    headers.tags = tags;
    headers.acl = acl;
    super::lock::for_write(
        defaults.lock.as_ref(),
        input.object_lock_mode.as_ref(),
        input.object_lock_retain_until_date.as_ref(),
        input.object_lock_legal_hold_status.as_ref(),
        &mut headers,
    )?;
    let upload = front
        .storage
        .provider()
        .create_upload(&bucket, &input.key, headers)
        .await
        .map_err(s3_error)?;
    let described = encryption::describe(upload.headers.sse.as_ref(), customer.as_ref());
    let mut out = CreateMultipartUploadOutput {
        bucket: Some(input.bucket),
        key: Some(input.key),
        upload_id: Some(upload.id),
        checksum_algorithm: input.checksum_algorithm,
        checksum_type: upload
            .headers
            .checksum_algorithm
            .as_ref()
            .map(|_| ChecksumType::from_static(ChecksumType::COMPOSITE)),
        ..Default::default()
    };
    set_encryption!(out, described);
    Ok(S3Response::new(out))
}

/// The upload, checked against the key the request names.
pub(super) async fn upload_of(
    front: &Front,
    bucket: &Stored,
    upload_id: &str,
    key: &str,
) -> S3Result<crate::provider::UploadInfo> {
    let upload = front
        .storage
        .provider()
        .upload(bucket, upload_id)
        .await
        .map_err(s3_error)?;
    if upload.key != key {
        return Err(S3Error::with_message(
            S3ErrorCode::NoSuchUpload,
            "the upload does not belong to this key",
        ));
    }
    Ok(upload)
}

pub(super) async fn upload_part(
    front: &Front,
    mut req: S3Request<UploadPartInput>,
) -> S3Result<S3Response<UploadPartOutput>> {
    let (_, bucket) = front.writer(&req, &req.input.bucket).await?;
    let found = upload_of(front, &bucket, &req.input.upload_id, &req.input.key).await?;
    let customer = encryption::customer(
        req.input.sse_customer_algorithm.as_deref(),
        req.input.sse_customer_key.as_deref(),
        req.input.sse_customer_key_md5.as_deref(),
    )?;
    let key = encryption::key_of(
        &front.storage,
        found.headers.sse.as_ref(),
        customer.as_ref(),
    )?;
    let data = req.input.body.take();
    let input = &req.input;
    let checksums = sent_checksums!(input);
    let (mut upload, failure) = body(
        &req,
        data,
        input.content_md5.clone(),
        checksums,
        input.content_length,
    )?;
    if let (Some(sealed), Some(key)) = (&found.headers.sse, key) {
        encryption::encrypt(&mut upload, sealed, key, i64::from(input.part_number));
    }
    let part = front
        .storage
        .provider()
        .upload_part(
            &bucket,
            &input.upload_id,
            i64::from(input.part_number),
            upload,
        )
        .await
        .map_err(|e| write_error(e, &failure))?;
    let described = encryption::describe(found.headers.sse.as_ref(), customer.as_ref());
    let mut out = UploadPartOutput {
        e_tag: Some(ETag::Strong(part.etag.clone())),
        ..Default::default()
    };
    set_checksums!(out, map & part.checksums);
    set_encryption!(out, described);
    Ok(S3Response::new(out))
}

pub(super) async fn complete(
    front: &Front,
    req: S3Request<CompleteMultipartUploadInput>,
) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
    let (principal, bucket) = front.writer(&req, &req.input.bucket).await?;
    let input = &req.input;
    let condition = condition(input.if_match.as_ref(), input.if_none_match.as_ref())?;
    match upload_of(front, &bucket, &input.upload_id, &input.key).await {
        Ok(_) => {}
        Err(e) if *e.code() == S3ErrorCode::NoSuchUpload => {
            // A retry of a completion that succeeded: the object it made.
            let found = front
                .storage
                .provider()
                .head_object(&bucket, &input.key)
                .await;
            return match found {
                Ok(info) if info.headers.upload_id.as_deref() == Some(&input.upload_id) => {
                    Ok(completed(input, info))
                }
                _ => Err(e),
            };
        }
        Err(e) => return Err(e),
    }
    let mut parts = Vec::new();
    for part in input
        .multipart_upload
        .as_ref()
        .and_then(|m| m.parts.as_ref())
        .into_iter()
        .flatten()
    {
        let (Some(number), Some(etag)) = (part.part_number, part.e_tag.as_ref()) else {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidPart,
                "each part needs a PartNumber and an ETag",
            ));
        };
        parts.push((i64::from(number), etag.value().to_owned()));
    }
    check_part_checksums(front, &bucket, input).await?;
    check_whole_checksum(front, &bucket, input).await?;
    let info = front
        .storage
        .provider()
        .complete_upload(
            &bucket,
            &input.upload_id,
            &parts,
            &condition,
            &actor(&principal),
        )
        .await
        .map_err(s3_error)?;
    Ok(completed(input, info))
}

/// InvalidPart when a part's checksum in the request is not the one
/// its upload was found to have.
async fn check_part_checksums(
    front: &Front,
    bucket: &Stored,
    input: &CompleteMultipartUploadInput,
) -> S3Result<()> {
    let listed = input
        .multipart_upload
        .as_ref()
        .and_then(|m| m.parts.as_ref())
        .into_iter()
        .flatten();
    let mut sent = Vec::new();
    for p in listed {
        for (name, value) in [
            ("crc32", &p.checksum_crc32),
            ("crc32c", &p.checksum_crc32c),
            ("crc64nvme", &p.checksum_crc64nvme),
            ("sha1", &p.checksum_sha1),
            ("sha256", &p.checksum_sha256),
        ] {
            if let (Some(n), Some(v)) = (p.part_number, value) {
                sent.push((i64::from(n), name, v.clone()));
            }
        }
    }
    if sent.is_empty() {
        return Ok(());
    }
    let (stored, _) = front
        .storage
        .provider()
        .list_parts(bucket, &input.upload_id, 0, 10_000)
        .await
        .map_err(s3_error)?;
    for (number, name, value) in sent {
        let found = stored
            .iter()
            .find(|p| p.number == number)
            .and_then(|p| p.checksums.get(name));
        if found != Some(&value) {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidPart,
                format!("the {name} checksum of part {number} is not the one it was uploaded with"),
            ));
        }
    }
    Ok(())
}

/// BadDigest when the whole-upload checksum the request sends (S3's
/// composite: the checksum of the listed parts' checksums) is not the
/// one of the parts as stored, or a listed part has no such checksum.
async fn check_whole_checksum(
    front: &Front,
    bucket: &Stored,
    input: &CompleteMultipartUploadInput,
) -> S3Result<()> {
    let sent = [
        ("crc32", &input.checksum_crc32),
        ("crc32c", &input.checksum_crc32c),
        ("crc64nvme", &input.checksum_crc64nvme),
        ("sha1", &input.checksum_sha1),
        ("sha256", &input.checksum_sha256),
    ];
    let Some((algorithm, value)) = sent
        .into_iter()
        .find_map(|(name, v)| v.as_ref().map(|v| (name, v)))
    else {
        return Ok(());
    };
    let (stored, _) = front
        .storage
        .provider()
        .list_parts(bucket, &input.upload_id, 0, 10_000)
        .await
        .map_err(s3_error)?;
    let mut sums = Vec::new();
    let listed = input
        .multipart_upload
        .as_ref()
        .and_then(|m| m.parts.as_ref());
    for part in listed.into_iter().flatten() {
        let found = stored
            .iter()
            .find(|p| Some(p.number) == part.part_number.map(i64::from))
            .and_then(|p| p.checksums.get(algorithm));
        match found {
            Some(sum) => sums.push(sum.clone()),
            None => sums.push(String::new()),
        }
    }
    let want = crate::checksum::composite(algorithm, &sums);
    let base = |s: &str| s.split_once('-').map_or(s, |(b, _)| b).to_owned();
    if sums.iter().any(String::is_empty) || want.map(|w| base(&w)) != Some(base(value)) {
        return Err(S3Error::with_message(
            S3ErrorCode::BadDigest,
            format!("the {algorithm} checksum of the upload is not the one of its parts"),
        ));
    }
    Ok(())
}

/// The answer of a completion that made `info`.
fn completed(
    input: &CompleteMultipartUploadInput,
    info: ObjectInfo,
) -> S3Response<CompleteMultipartUploadOutput> {
    let c = &info.headers.checksums;
    let described = encryption::describe(info.headers.sse.as_ref(), None);
    let mut out = CompleteMultipartUploadOutput {
        bucket: Some(input.bucket.clone()),
        key: Some(input.key.clone()),
        e_tag: Some(ETag::Strong(info.etag.clone())),
        checksum_type: (!c.is_empty()).then(|| ChecksumType::from_static(ChecksumType::COMPOSITE)),
        server_side_encryption: described.method,
        ssekms_key_id: described.kms_key_id,
        bucket_key_enabled: described.bucket_key,
        version_id: info.version_id.clone(),
        ..Default::default()
    };
    set_checksums!(out, map c);
    S3Response::new(out)
}

pub(super) async fn abort(
    front: &Front,
    req: S3Request<AbortMultipartUploadInput>,
) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
    let (_, bucket) = front.writer(&req, &req.input.bucket).await?;
    upload_of(front, &bucket, &req.input.upload_id, &req.input.key).await?;
    front
        .storage
        .provider()
        .abort_upload(&bucket, &req.input.upload_id)
        .await
        .map_err(s3_error)?;
    let mut out = S3Response::new(AbortMultipartUploadOutput::default());
    out.status = Some(http::StatusCode::NO_CONTENT);
    Ok(out)
}
