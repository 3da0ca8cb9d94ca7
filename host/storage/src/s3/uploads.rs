//! ListParts and ListMultipartUploads.

use s3s::dto::*;
use s3s::{S3Request, S3Response, S3Result};

use super::multipart::upload_of;
use super::{Front, s3_error, timestamp};

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
                .map(|u| {
                    let owner = super::acl::owner_of(&u.headers, &bucket);
                    MultipartUpload {
                        key: Some(u.key),
                        upload_id: Some(u.id),
                        initiated: Some(timestamp(u.created_at)),
                        initiator: Some(Initiator {
                            id: owner.id.clone(),
                            display_name: owner.display_name.clone(),
                        }),
                        owner: Some(owner),
                        ..Default::default()
                    }
                })
                .collect(),
        ),
        ..Default::default()
    }))
}
