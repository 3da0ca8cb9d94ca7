//! PutObject, and what every write shares: the body checked against the
//! client's checksums while it streams, and the error of a failed write.

use std::sync::Mutex;

use bytes::Bytes;
use futures::StreamExt;
use s3s::dto::*;
use s3s::{S3Error, S3Request, S3Response, S3Result};

use super::encryption;
use super::fields::{sent_checksums, set_checksums, set_encryption};
use super::headers::{condition, etag, headers_of};
use super::verify::{self, Expected};
use super::{Front, actor, s3_error};
use crate::error::Error;
use crate::provider::{ByteStream, Condition, Digests, Upload};

/// A provider stream as s3s wants it (`Sync`).
pub(super) fn blob(stream: ByteStream) -> StreamingBlob {
    StreamingBlob::wrap(SyncStream(Mutex::new(stream)))
}

struct SyncStream(Mutex<ByteStream>);

impl futures::Stream for SyncStream {
    type Item = std::io::Result<Bytes>;
    fn poll_next(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let inner = self
            .get_mut()
            .0
            .get_mut()
            .unwrap_or_else(|e| e.into_inner());
        inner.poll_next_unpin(cx)
    }
}

/// The body of a write, checked against the client's checksums.
pub(super) fn body<T>(
    req: &S3Request<T>,
    body: Option<StreamingBlob>,
    content_md5: Option<String>,
    checksums: Checksum,
    length: Option<i64>,
) -> S3Result<(Upload, verify::Failure)> {
    let trailer_names = req
        .headers
        .get("x-amz-trailer")
        .and_then(|v| v.to_str().ok())
        .map(|v| {
            v.split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .collect()
        })
        .unwrap_or_default();
    // s3s reads an empty Content-MD5 as none sent; S3 refuses it
    // (InvalidDigest), as any Content-MD5 that is not an MD5.
    let content_md5 = content_md5.or_else(|| {
        req.headers
            .get("content-md5")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    });
    let body = body
        .unwrap_or_else(|| StreamingBlob::wrap(futures::stream::empty::<std::io::Result<Bytes>>()));
    let digests = Digests::default();
    let (stream, failure) = verify::verify(
        body,
        Expected {
            content_md5,
            checksums,
            trailer: req.trailing_headers.clone(),
            trailer_names,
            digests: digests.clone(),
        },
    )?;
    Ok((
        Upload {
            body: stream,
            length: length.and_then(|l| u64::try_from(l).ok()),
            digests,
            condition: Condition::default(),
        },
        failure,
    ))
}

/// The error of a failed write: the checksum mismatch if there was one.
pub(super) fn write_error(e: Error, failure: &verify::Failure) -> S3Error {
    if let Some(err) = failure.lock().unwrap_or_else(|p| p.into_inner()).take() {
        return err;
    }
    s3_error(e)
}

pub(super) async fn put_object(
    front: &Front,
    req: S3Request<PutObjectInput>,
) -> S3Result<S3Response<PutObjectOutput>> {
    let (principal, bucket) = front.writer(&req, &req.input.bucket).await?;
    let input = req.input.clone_headers();
    let customer = encryption::customer(
        req.input.sse_customer_algorithm.as_deref(),
        req.input.sse_customer_key.as_deref(),
        req.input.sse_customer_key_md5.as_deref(),
    )?;
    let defaults = super::bucket_encryption::defaults(front, &bucket).await?;
    let plan = encryption::plan(
        &front.storage,
        &principal.org_id,
        defaults.encryption.as_ref(),
        encryption::asked!(req.input, customer.as_ref()),
    )?;
    let checksums = sent_checksums!(input);
    let condition = condition(
        req.input.if_match.as_ref(),
        req.input.if_none_match.as_ref(),
    )?;
    let mut tags = super::tagging::from_header(req.input.tagging.as_deref())?;
    if let Some(form) = req.extensions.get::<super::form::FormTagging>()
        && tags.is_empty()
    {
        tags = super::tagging::from_xml(&form.0)?;
    }
    let acl = super::acl::for_object(
        front,
        &principal,
        &bucket,
        req.input.acl.as_ref(),
        [
            &req.input.grant_full_control,
            &req.input.grant_read,
            &req.input.grant_read_acp,
            &req.input.grant_write_acp,
        ],
    )
    .await?;
    let mut req = req;
    let data = req.input.body.take();
    let (mut upload, failure) = body(
        &req,
        data,
        input.content_md5.clone(),
        checksums,
        input.content_length,
    )?;
    upload.condition = condition;
    let mut headers = headers_of(
        input.content_type,
        input.content_encoding,
        input.content_disposition,
        input.content_language,
        input.cache_control,
        input.expires,
        input.metadata,
    );
    headers.tags = tags;
    headers.acl = acl;
    super::lock::for_write(
        defaults.lock.as_ref(),
        req.input.object_lock_mode.as_ref(),
        req.input.object_lock_retain_until_date.as_ref(),
        req.input.object_lock_legal_hold_status.as_ref(),
        &mut headers,
    )?;
    if let Some(plan) = plan {
        headers.sse = Some(plan.sealed.clone());
        plan.encrypt(&mut upload, 0);
    }
    let info = front
        .storage
        .provider()
        .put_object(&bucket, &req.input.key, upload, headers, &actor(&principal))
        .await
        .map_err(|e| write_error(e, &failure))?;
    let described = encryption::describe(info.headers.sse.as_ref(), customer.as_ref());
    let mut out = PutObjectOutput {
        e_tag: Some(etag(&info)),
        version_id: info.version_id.clone(),
        ..Default::default()
    };
    set_checksums!(out, map & info.headers.checksums);
    set_encryption!(out, described);
    Ok(S3Response::new(out))
}

/// The header fields of a PutObject, without its body.
pub(super) struct PutHeaders {
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    pub content_disposition: Option<String>,
    pub content_language: Option<String>,
    pub cache_control: Option<String>,
    pub expires: Option<Timestamp>,
    pub metadata: Option<Metadata>,
    pub content_md5: Option<String>,
    pub content_length: Option<i64>,
    pub checksum_crc32: Option<String>,
    pub checksum_crc32c: Option<String>,
    pub checksum_crc64nvme: Option<String>,
    pub checksum_sha1: Option<String>,
    pub checksum_sha256: Option<String>,
}

trait CloneHeaders {
    fn clone_headers(&self) -> PutHeaders;
}

impl CloneHeaders for PutObjectInput {
    fn clone_headers(&self) -> PutHeaders {
        PutHeaders {
            content_type: self.content_type.clone(),
            content_encoding: self.content_encoding.clone(),
            content_disposition: self.content_disposition.clone(),
            content_language: self.content_language.clone(),
            cache_control: self.cache_control.clone(),
            expires: self.expires.clone(),
            metadata: self.metadata.clone(),
            content_md5: self.content_md5.clone(),
            content_length: self.content_length,
            checksum_crc32: self.checksum_crc32.clone(),
            checksum_crc32c: self.checksum_crc32c.clone(),
            checksum_crc64nvme: self.checksum_crc64nvme.clone(),
            checksum_sha1: self.checksum_sha1.clone(),
            checksum_sha256: self.checksum_sha256.clone(),
        }
    }
}
