//! Multipart uploads over S3: create, upload part, complete, abort, list
//! parts and list uploads.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::objects::{body, write_error};
use super::{Front, actor, s3_error, timestamp};
use crate::provider::{Bucket as Stored, ObjectHeaders};

pub(super) async fn create(
    front: &Front,
    bucket: Stored,
    name: String,
    key: String,
    headers: ObjectHeaders,
) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
    let upload = front
        .storage
        .provider()
        .create_upload(&bucket, &key, headers)
        .await
        .map_err(s3_error)?;
    Ok(S3Response::new(CreateMultipartUploadOutput {
        bucket: Some(name),
        key: Some(key),
        upload_id: Some(upload.id),
        ..Default::default()
    }))
}

/// The upload, checked against the key the request names.
async fn upload_of(
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
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    upload_of(front, &bucket, &req.input.upload_id, &req.input.key).await?;
    let data = req.input.body.take();
    let input = &req.input;
    let checksums = Checksum {
        checksum_crc32: input.checksum_crc32.clone(),
        checksum_crc32c: input.checksum_crc32c.clone(),
        checksum_crc64nvme: input.checksum_crc64nvme.clone(),
        checksum_sha1: input.checksum_sha1.clone(),
        checksum_sha256: input.checksum_sha256.clone(),
        checksum_type: None,
    };
    let (upload, failure) = body(
        &req,
        data,
        input.content_md5.clone(),
        checksums.clone(),
        input.content_length,
    )?;
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
    Ok(S3Response::new(UploadPartOutput {
        e_tag: Some(ETag::Strong(part.etag)),
        checksum_crc32: checksums.checksum_crc32,
        checksum_crc32c: checksums.checksum_crc32c,
        checksum_crc64nvme: checksums.checksum_crc64nvme,
        checksum_sha1: checksums.checksum_sha1,
        checksum_sha256: checksums.checksum_sha256,
        ..Default::default()
    }))
}

pub(super) async fn complete(
    front: &Front,
    req: S3Request<CompleteMultipartUploadInput>,
) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
    let (principal, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let input = &req.input;
    upload_of(front, &bucket, &input.upload_id, &input.key).await?;
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
    let info = front
        .storage
        .provider()
        .complete_upload(&bucket, &input.upload_id, &parts, &actor(&principal))
        .await
        .map_err(s3_error)?;
    Ok(S3Response::new(CompleteMultipartUploadOutput {
        bucket: Some(input.bucket.clone()),
        key: Some(input.key.clone()),
        e_tag: Some(ETag::Strong(info.etag)),
        ..Default::default()
    }))
}

pub(super) async fn abort(
    front: &Front,
    req: S3Request<AbortMultipartUploadInput>,
) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
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

pub(super) async fn list_parts(
    front: &Front,
    req: S3Request<ListPartsInput>,
) -> S3Result<S3Response<ListPartsOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let input = &req.input;
    upload_of(front, &bucket, &input.upload_id, &input.key).await?;
    let max = input.max_parts.unwrap_or(1000).clamp(0, 1000) as usize;
    let after = input.part_number_marker.unwrap_or(0);
    let (parts, truncated) = front
        .storage
        .provider()
        .list_parts(&bucket, &input.upload_id, i64::from(after), max)
        .await
        .map_err(s3_error)?;
    let next = parts.last().map(|p| p.number as i32);
    Ok(S3Response::new(ListPartsOutput {
        bucket: Some(input.bucket.clone()),
        key: Some(input.key.clone()),
        upload_id: Some(input.upload_id.clone()),
        max_parts: Some(max as i32),
        part_number_marker: input.part_number_marker,
        next_part_number_marker: if truncated { next } else { None },
        is_truncated: Some(truncated),
        parts: Some(
            parts
                .into_iter()
                .map(|p| Part {
                    e_tag: Some(ETag::Strong(p.etag)),
                    last_modified: Some(timestamp(p.modified_at)),
                    part_number: Some(p.number as i32),
                    size: Some(p.size as i64),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    }))
}

pub(super) async fn list_uploads(
    front: &Front,
    req: S3Request<ListMultipartUploadsInput>,
) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let input = &req.input;
    let max = input.max_uploads.unwrap_or(1000).clamp(0, 1000) as usize;
    let key_marker = input.key_marker.clone().unwrap_or_default();
    let id_marker = input.upload_id_marker.clone().unwrap_or_default();
    // Without an upload id marker, every upload of the key marker is skipped.
    let id_after = if id_marker.is_empty() && !key_marker.is_empty() {
        "\u{10ffff}".to_owned()
    } else {
        id_marker
    };
    let (uploads, truncated) = front
        .storage
        .provider()
        .list_uploads(
            &bucket,
            input.prefix.as_deref().unwrap_or(""),
            (&key_marker, &id_after),
            max,
        )
        .await
        .map_err(s3_error)?;
    let last = uploads.last().map(|u| (u.key.clone(), u.id.clone()));
    Ok(S3Response::new(ListMultipartUploadsOutput {
        bucket: Some(input.bucket.clone()),
        prefix: input.prefix.clone(),
        key_marker: input.key_marker.clone(),
        upload_id_marker: input.upload_id_marker.clone(),
        max_uploads: Some(max as i32),
        is_truncated: Some(truncated),
        next_key_marker: truncated.then(|| last.clone().map(|l| l.0)).flatten(),
        next_upload_id_marker: truncated.then(|| last.map(|l| l.1)).flatten(),
        uploads: Some(
            uploads
                .into_iter()
                .map(|u| MultipartUpload {
                    key: Some(u.key),
                    upload_id: Some(u.id),
                    initiated: Some(timestamp(u.created_at)),
                    ..Default::default()
                })
                .collect(),
        ),
        ..Default::default()
    }))
}
