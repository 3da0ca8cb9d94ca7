//! UploadPartCopy: a part made of an object's bytes (all of them, or the
//! `x-amz-copy-source-range`), read, decrypted when the source is
//! encrypted, and written as the upload's part (encrypted again under the
//! upload's key when it has one), so the part is like any uploaded one.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::fields::set_encryption;
use super::headers::{last_modified, preconditions};
use super::{Front, denied, encryption, s3_error};
use crate::provider::{Condition, Digests, Upload};

/// `bytes=<first>-<last>`, both given, as S3 requires of a copy range.
fn parse_range(header: &str, size: u64) -> S3Result<std::ops::Range<u64>> {
    let improper = || {
        S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            format!("x-amz-copy-source-range: \"{header}\" is not bytes=<first>-<last>"),
        )
    };
    let (first, last) = header
        .strip_prefix("bytes=")
        .and_then(|r| r.split_once('-'))
        .ok_or_else(improper)?;
    let first: u64 = first.parse().map_err(|_| improper())?;
    let last: u64 = last.parse().map_err(|_| improper())?;
    if first > last {
        return Err(improper());
    }
    if last >= size {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidRange,
            format!("x-amz-copy-source-range: the source has {size} bytes"),
        ));
    }
    Ok(first..last + 1)
}

pub(super) async fn upload_part_copy(
    front: &Front,
    req: S3Request<UploadPartCopyInput>,
) -> S3Result<S3Response<UploadPartCopyOutput>> {
    let input = &req.input;
    let (_, to) = front.writer(&req, &input.bucket).await?;
    let CopySource::Bucket {
        bucket,
        key,
        version_id,
    } = &input.copy_source
    else {
        return Err(denied());
    };
    let (_, from) = front.bucket(&req, bucket, false).await?;
    let found = super::multipart::upload_of(front, &to, &input.upload_id, &input.key).await?;
    let provider = front.storage.provider();
    let opened = provider
        .open(&from, key, version_id.as_deref())
        .await
        .map_err(s3_error)?;
    preconditions(
        &opened.info,
        input.copy_source_if_match.as_ref(),
        input.copy_source_if_none_match.as_ref(),
        input.copy_source_if_modified_since.as_ref(),
        input.copy_source_if_unmodified_since.as_ref(),
    )
    .map_err(|e| {
        if *e.code() == S3ErrorCode::NotModified {
            S3Error::new(S3ErrorCode::PreconditionFailed)
        } else {
            e
        }
    })?;
    let range = match &input.copy_source_range {
        Some(r) => parse_range(r, opened.info.size)?,
        None => 0..opened.info.size,
    };
    let source_customer = encryption::customer(
        input.copy_source_sse_customer_algorithm.as_deref(),
        input.copy_source_sse_customer_key.as_deref(),
        input.copy_source_sse_customer_key_md5.as_deref(),
    )?;
    let source_key = encryption::key_of(
        &front.storage,
        opened.info.headers.sse.as_ref(),
        source_customer.as_ref(),
    )?;
    let customer = encryption::customer(
        input.sse_customer_algorithm.as_deref(),
        input.sse_customer_key.as_deref(),
        input.sse_customer_key_md5.as_deref(),
    )?;
    let target_key = encryption::key_of(
        &front.storage,
        found.headers.sse.as_ref(),
        customer.as_ref(),
    )?;
    let start = range.start;
    let length = range.end - range.start;
    let (info, stream) = opened.read(Some(range)).map_err(s3_error)?;
    let stream = match source_key {
        Some(k) => encryption::decrypt(stream, k, &info, start),
        None => stream,
    };
    let mut upload = Upload {
        body: stream,
        length: Some(length),
        digests: Digests::default(),
        condition: Condition::default(),
    };
    let number = i64::from(input.part_number);
    if let (Some(sealed), Some(k)) = (&found.headers.sse, target_key) {
        encryption::encrypt(&mut upload, sealed, k, number);
    }
    let part = provider
        .upload_part(&to, &input.upload_id, number, upload)
        .await
        .map_err(s3_error)?;
    let described = encryption::describe(found.headers.sse.as_ref(), customer.as_ref());
    let mut out = UploadPartCopyOutput {
        copy_part_result: Some(CopyPartResult {
            e_tag: Some(ETag::Strong(part.etag)),
            last_modified: Some(last_modified(&info)),
            ..Default::default()
        }),
        ..Default::default()
    };
    set_encryption!(out, described);
    Ok(S3Response::new(out))
}

#[cfg(test)]
mod tests {
    use super::parse_range;

    #[test]
    fn copy_ranges_name_both_ends_inside_the_source() {
        assert_eq!(parse_range("bytes=0-9", 10).unwrap(), 0..10);
        assert_eq!(parse_range("bytes=3-3", 10).unwrap(), 3..4);
        for improper in ["0-2", "bytes=-2", "bytes=2-", "bytes=5-1"] {
            assert_eq!(
                parse_range(improper, 10).unwrap_err().code().as_str(),
                "InvalidArgument"
            );
        }
        assert_eq!(
            parse_range("bytes=0-10", 10).unwrap_err().code().as_str(),
            "InvalidRange"
        );
    }
}
