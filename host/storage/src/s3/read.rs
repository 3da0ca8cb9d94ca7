//! GetObject and HeadObject: conditions (a 304 carries the entity tag),
//! ranges and `partNumber` (one part of a multipart object, or the whole
//! of another as its part 1), stored checksums with `ChecksumMode`, and
//! decryption of SSE-C, SSE-S3 and SSE-KMS objects.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::encryption;
use super::fields::{set_checksums, set_encryption};
use super::headers::{etag, last_modified, metadata, preconditions};
use super::objects::blob;
use super::{Front, s3_error, timestamp};
use crate::provider::ObjectInfo;

/// The bytes of part `number` of `info` (1-based).
fn part_range(info: &ObjectInfo, number: i32) -> S3Result<std::ops::Range<u64>> {
    let index = usize::try_from(number).unwrap_or(0);
    if index == 0 || index > info.segments.len().max(1) {
        let mut err = S3Error::with_message(
            S3ErrorCode::Custom("InvalidPartNumber".into()),
            "the requested partnumber is not satisfiable",
        );
        err.set_status_code(http::StatusCode::RANGE_NOT_SATISFIABLE);
        return Err(err);
    }
    let start: u64 = info.segments[..index - 1].iter().sum();
    let size = info.segments.get(index - 1).copied().unwrap_or(info.size);
    Ok(start..start + size)
}

/// The number of parts a multipart object has (None for others).
fn parts_count(info: &ObjectInfo) -> Option<i32> {
    info.headers.upload_id.as_ref()?;
    Some(info.segments.len() as i32)
}

/// A read names no server-side encryption (S3 refuses it with 400: the
/// object's own is used).
fn no_sse_header<T>(req: &S3Request<T>) -> S3Result<()> {
    if req.headers.contains_key("x-amz-server-side-encryption") {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "x-amz-server-side-encryption is not allowed on a read",
        ));
    }
    Ok(())
}

/// The object's content type; S3's `binary/octet-stream` for one written
/// without.
fn content_type(h: &crate::provider::ObjectHeaders) -> Option<String> {
    Some(
        h.content_type
            .clone()
            .unwrap_or_else(|| "binary/octet-stream".to_owned()),
    )
}

/// The stored checksums, when asked for and the whole object is read.
fn checksums(info: &ObjectInfo, mode: Option<&ChecksumMode>, whole: bool) -> Checksum {
    let mut out = Checksum::default();
    if !whole || mode.is_none_or(|m| m.as_str() != ChecksumMode::ENABLED) {
        return out;
    }
    let c = &info.headers.checksums;
    set_checksums!(out, map c);
    if !c.is_empty() {
        let kind = if c.values().any(|v| v.contains('-')) {
            ChecksumType::COMPOSITE
        } else {
            ChecksumType::FULL_OBJECT
        };
        out.checksum_type = Some(ChecksumType::from_static(kind));
    }
    out
}

pub(super) async fn get(
    front: &Front,
    req: S3Request<GetObjectInput>,
) -> S3Result<S3Response<GetObjectOutput>> {
    no_sse_header(&req)?;
    let (_, bucket) = front
        .object_reader(&req, &req.input.bucket, &req.input.key)
        .await?;
    let input = &req.input;
    let customer = encryption::customer(
        input.sse_customer_algorithm.as_deref(),
        input.sse_customer_key.as_deref(),
        input.sse_customer_key_md5.as_deref(),
    )?;
    let opened = front
        .storage
        .provider()
        .open(&bucket, &input.key, input.version_id.as_deref())
        .await
        .map_err(s3_error)?;
    let key = encryption::key_of(
        &front.storage,
        opened.info.headers.sse.as_ref(),
        customer.as_ref(),
    )?;
    preconditions(
        &opened.info,
        input.if_match.as_ref(),
        input.if_none_match.as_ref(),
        input.if_modified_since.as_ref(),
        input.if_unmodified_since.as_ref(),
    )?;
    let range = match (&input.range, input.part_number) {
        (Some(_), Some(_)) => {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidRequest,
                "cannot specify both Range header and partNumber query parameter",
            ));
        }
        (Some(r), None) => Some(r.check(opened.info.size).map_err(|_| {
            S3Error::with_message(
                S3ErrorCode::InvalidRange,
                "the requested range is not satisfiable",
            )
        })?),
        (None, Some(n)) => Some(part_range(&opened.info, n)?),
        (None, None) => None,
    };
    let (info, stream) = opened.read(range.clone()).map_err(s3_error)?;
    let stream = match key {
        Some(key) => {
            let start = range.as_ref().map_or(0, |r| r.start);
            encryption::decrypt(stream, key, &info, start)
        }
        None => stream,
    };
    let (length, content_range) = match &range {
        Some(r) => (
            r.end - r.start,
            Some(format!(
                "bytes {}-{}/{}",
                r.start,
                r.end.max(1) - 1,
                info.size
            )),
        ),
        None => (info.size, None),
    };
    let sums = checksums(&info, input.checksum_mode.as_ref(), range.is_none());
    let described = encryption::describe(info.headers.sse.as_ref(), customer.as_ref());
    let h = &info.headers;
    let (lock_mode, lock_until, lock_hold) = super::lock::fields(h);
    let mut out = S3Response::new(GetObjectOutput {
        body: Some(blob(stream)),
        content_length: Some(length as i64),
        content_range,
        accept_ranges: Some("bytes".to_owned()),
        e_tag: Some(etag(&info)),
        last_modified: Some(last_modified(&info)),
        parts_count: input.part_number.and_then(|_| parts_count(&info)),
        tag_count: super::tagging::count(&h.tags),
        content_type: input
            .response_content_type
            .clone()
            .or_else(|| content_type(h)),
        content_encoding: input
            .response_content_encoding
            .clone()
            .or_else(|| h.content_encoding.clone()),
        content_disposition: input
            .response_content_disposition
            .clone()
            .or_else(|| h.content_disposition.clone()),
        content_language: input
            .response_content_language
            .clone()
            .or_else(|| h.content_language.clone()),
        cache_control: input
            .response_cache_control
            .clone()
            .or_else(|| h.cache_control.clone()),
        expires: h.expires.map(timestamp),
        metadata: metadata(h),
        version_id: info.version_id.clone(),
        object_lock_mode: lock_mode,
        object_lock_retain_until_date: lock_until,
        object_lock_legal_hold_status: lock_hold,
        ..Default::default()
    });
    set_checksums!(out.output, from sums);
    set_encryption!(out.output, described);
    if range.is_some() {
        out.status = Some(http::StatusCode::PARTIAL_CONTENT);
    }
    Ok(out)
}

pub(super) async fn head(
    front: &Front,
    req: S3Request<HeadObjectInput>,
) -> S3Result<S3Response<HeadObjectOutput>> {
    no_sse_header(&req)?;
    let (_, bucket) = front
        .object_reader(&req, &req.input.bucket, &req.input.key)
        .await?;
    let input = &req.input;
    let customer = encryption::customer(
        input.sse_customer_algorithm.as_deref(),
        input.sse_customer_key.as_deref(),
        input.sse_customer_key_md5.as_deref(),
    )?;
    let info = front
        .storage
        .provider()
        .open(&bucket, &input.key, input.version_id.as_deref())
        .await
        .map_err(s3_error)?
        .info;
    encryption::key_of(&front.storage, info.headers.sse.as_ref(), customer.as_ref())?;
    preconditions(
        &info,
        input.if_match.as_ref(),
        input.if_none_match.as_ref(),
        input.if_modified_since.as_ref(),
        input.if_unmodified_since.as_ref(),
    )?;
    let (length, content_range) = match input.part_number {
        Some(n) => {
            let r = part_range(&info, n)?;
            (
                r.end - r.start,
                Some(format!(
                    "bytes {}-{}/{}",
                    r.start,
                    r.end.max(1) - 1,
                    info.size
                )),
            )
        }
        None => (info.size, None),
    };
    let sums = checksums(
        &info,
        input.checksum_mode.as_ref(),
        input.part_number.is_none(),
    );
    let described = encryption::describe(info.headers.sse.as_ref(), customer.as_ref());
    let h = &info.headers;
    let (lock_mode, lock_until, lock_hold) = super::lock::fields(h);
    let mut out = S3Response::new(HeadObjectOutput {
        content_length: Some(length as i64),
        content_range,
        accept_ranges: Some("bytes".to_owned()),
        e_tag: Some(etag(&info)),
        last_modified: Some(last_modified(&info)),
        parts_count: input.part_number.and_then(|_| parts_count(&info)),
        content_type: content_type(h),
        content_encoding: h.content_encoding.clone(),
        content_disposition: h.content_disposition.clone(),
        content_language: h.content_language.clone(),
        cache_control: h.cache_control.clone(),
        expires: h.expires.map(timestamp),
        metadata: metadata(h),
        version_id: info.version_id.clone(),
        object_lock_mode: lock_mode,
        object_lock_retain_until_date: lock_until,
        object_lock_legal_hold_status: lock_hold,
        ..Default::default()
    });
    set_checksums!(out.output, from sums);
    set_encryption!(out.output, described);
    // HeadObject's s3s output has no tag count; S3 sends it as GetObject's.
    if let Some(n) = super::tagging::count(&h.tags) {
        out.headers
            .insert("x-amz-tagging-count", http::HeaderValue::from(n));
    }
    if input.part_number.is_some() {
        out.status = Some(http::StatusCode::PARTIAL_CONTENT);
    }
    Ok(out)
}
