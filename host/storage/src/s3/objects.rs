//! The S3 operations on buckets and objects; multipart ones delegate to
//! [`super::multipart`].

use std::sync::Mutex;

use bytes::Bytes;
use futures::StreamExt;
use s3s::dto::*;
use s3s::{S3, S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::encryption;
use super::verify::{self, Expected};
use super::{Front, actor, s3_error, timestamp};
use crate::error::Error;
use crate::provider::{ByteStream, Condition, Digests, ObjectHeaders, ObjectInfo, Upload};

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

pub(super) fn etag(info: &ObjectInfo) -> ETag {
    ETag::Strong(info.etag.clone())
}

pub(super) fn last_modified(info: &ObjectInfo) -> Timestamp {
    timestamp(info.modified_at)
}

fn http_date(ts: Timestamp) -> i64 {
    let t: time::OffsetDateTime = ts.into();
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

/// Applies `If-Match`, `If-None-Match`, `If-Modified-Since` and
/// `If-Unmodified-Since` to an object; a 304 carries the entity tag
/// and the time of the last change, as HTTP wants.
pub(super) fn preconditions(
    info: &ObjectInfo,
    if_match: Option<&ETagCondition>,
    if_none_match: Option<&ETagCondition>,
    if_modified_since: Option<&Timestamp>,
    if_unmodified_since: Option<&Timestamp>,
) -> S3Result<()> {
    let matches = |c: &ETagCondition| match c {
        ETagCondition::Any => true,
        ETagCondition::ETag(e) => e.value() == info.etag,
    };
    // Seconds: HTTP dates carry no milliseconds.
    let modified = info.modified_at / 1000;
    if let Some(c) = if_match {
        if !matches(c) {
            return Err(S3Error::new(S3ErrorCode::PreconditionFailed));
        }
    } else if let Some(t) = if_unmodified_since
        && modified > http_date(t.clone()) / 1000
    {
        return Err(S3Error::new(S3ErrorCode::PreconditionFailed));
    }
    let not_modified = match if_none_match {
        Some(c) => matches(c),
        None => if_modified_since.is_some_and(|t| modified <= http_date(t.clone()) / 1000),
    };
    if not_modified {
        let mut err = S3Error::new(S3ErrorCode::NotModified);
        let mut headers = http::HeaderMap::new();
        if let Ok(v) = http::HeaderValue::from_str(&format!("\"{}\"", info.etag)) {
            headers.insert(http::header::ETAG, v);
        }
        let modified = time::OffsetDateTime::from_unix_timestamp(modified)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc2822)
                    .ok()
            });
        if let Some(v) =
            modified.and_then(|m| http::HeaderValue::from_str(&m.replace("+0000", "GMT")).ok())
        {
            headers.insert(http::header::LAST_MODIFIED, v);
        }
        err.set_headers(headers);
        return Err(err);
    }
    Ok(())
}

/// The condition of a write: `If-Match` (an entity tag or `*`) and
/// `If-None-Match: *` (S3 accepts no other If-None-Match on a write).
pub(super) fn condition(
    if_match: Option<&ETagCondition>,
    if_none_match: Option<&ETagCondition>,
) -> S3Result<Condition> {
    let if_none_match = match if_none_match {
        None => false,
        Some(ETagCondition::Any) => true,
        Some(ETagCondition::ETag(_)) => {
            return Err(S3Error::with_message(
                S3ErrorCode::NotImplemented,
                "If-None-Match on a write accepts only *",
            ));
        }
    };
    let if_match = if_match.map(|c| match c {
        ETagCondition::Any => "*".to_owned(),
        ETagCondition::ETag(e) => e.value().to_owned(),
    });
    Ok(Condition {
        if_match,
        if_none_match,
    })
}

pub(super) fn headers_of(
    content_type: Option<String>,
    content_encoding: Option<String>,
    content_disposition: Option<String>,
    content_language: Option<String>,
    cache_control: Option<String>,
    expires: Option<Timestamp>,
    metadata: Option<Metadata>,
) -> ObjectHeaders {
    // aws-chunked names the framing of the request body, not the content.
    let content_encoding = content_encoding
        .map(|e| {
            e.split(',')
                .map(str::trim)
                .filter(|t| !t.is_empty() && !t.eq_ignore_ascii_case("aws-chunked"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .filter(|e| !e.is_empty());
    ObjectHeaders {
        content_type,
        content_encoding,
        content_disposition,
        content_language,
        cache_control,
        expires: expires.map(http_date),
        metadata: metadata.unwrap_or_default().into_iter().collect(),
        ..Default::default()
    }
}

pub(super) fn metadata(h: &ObjectHeaders) -> Option<Metadata> {
    (!h.metadata.is_empty()).then(|| h.metadata.clone().into_iter().collect())
}

#[async_trait::async_trait]
impl S3 for Front {
    async fn list_buckets(
        &self,
        req: S3Request<ListBucketsInput>,
    ) -> S3Result<S3Response<ListBucketsOutput>> {
        let principal = self.principal(&req).await?;
        let buckets = self
            .storage
            .provider()
            .buckets(&principal.org_id)
            .await
            .map_err(s3_error)?
            .into_iter()
            .filter(|b| principal.may(&b.id, false))
            .map(|b| Bucket {
                creation_date: Some(timestamp(b.created_at)),
                name: Some(b.bucket),
                bucket_region: None,
            })
            .collect();
        Ok(S3Response::new(ListBucketsOutput {
            buckets: Some(buckets),
            owner: Some(Owner {
                display_name: None,
                id: Some(principal.org_id.clone()),
            }),
            ..Default::default()
        }))
    }

    async fn head_bucket(
        &self,
        req: S3Request<HeadBucketInput>,
    ) -> S3Result<S3Response<HeadBucketOutput>> {
        self.bucket(&req, &req.input.bucket, false).await?;
        Ok(S3Response::new(HeadBucketOutput::default()))
    }

    async fn get_bucket_location(
        &self,
        req: S3Request<GetBucketLocationInput>,
    ) -> S3Result<S3Response<GetBucketLocationOutput>> {
        self.bucket(&req, &req.input.bucket, false).await?;
        Ok(S3Response::new(GetBucketLocationOutput::default()))
    }

    /// A bucket is made over the API (it belongs to a project, counts
    /// against the plan and is audited); over S3, a bucket the caller's
    /// organisation already owns answers BucketAlreadyOwnedByYou, which
    /// tools that create before they write (rclone, Terraform) accept.
    async fn create_bucket(
        &self,
        req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        let principal = self.principal(&req).await?;
        let found = self
            .storage
            .provider()
            .bucket_by_name(&req.input.bucket)
            .await
            .map_err(s3_error)?;
        match found {
            Some(b) if b.org_id == principal.org_id && principal.may(&b.id, false) => {
                Err(S3Error::with_message(
                    S3ErrorCode::BucketAlreadyOwnedByYou,
                    "your previous request to create the named bucket succeeded and you already own it",
                ))
            }
            // Another organisation's name is not said to exist.
            _ => Err(S3Error::with_message(
                S3ErrorCode::AccessDenied,
                "buckets are created over the API: POST /api/v1/storage/buckets",
            )),
        }
    }

    /// An empty bucket may be deleted by a key that may write it, as the
    /// API's DELETE would (its event names the key).
    async fn delete_bucket(
        &self,
        req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        let (principal, bucket) = self.bucket(&req, &req.input.bucket, true).await?;
        self.storage
            .provider()
            .delete_bucket(&bucket, &actor(&principal))
            .await
            .map_err(s3_error)?;
        let mut out = S3Response::new(DeleteBucketOutput::default());
        out.status = Some(http::StatusCode::NO_CONTENT);
        Ok(out)
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        let (principal, bucket) = self.bucket(&req, &req.input.bucket, true).await?;
        let input = req.input.clone_headers();
        let customer = encryption::customer(
            req.input.sse_customer_algorithm.as_deref(),
            req.input.sse_customer_key.as_deref(),
            req.input.sse_customer_key_md5.as_deref(),
        )?;
        let plan = encryption::plan(
            &self.storage,
            req.input.server_side_encryption.as_ref(),
            customer.as_ref(),
        )?;
        let checksums = Checksum {
            checksum_crc32: input.checksum_crc32.clone(),
            checksum_crc32c: input.checksum_crc32c.clone(),
            checksum_crc64nvme: input.checksum_crc64nvme.clone(),
            checksum_sha1: input.checksum_sha1.clone(),
            checksum_sha256: input.checksum_sha256.clone(),
            checksum_type: None,
        };
        let condition = condition(
            req.input.if_match.as_ref(),
            req.input.if_none_match.as_ref(),
        )?;
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
        if let Some(plan) = plan {
            headers.sse = Some(plan.sealed.clone());
            plan.encrypt(&mut upload, 0);
        }
        let info = self
            .storage
            .provider()
            .put_object(&bucket, &req.input.key, upload, headers, &actor(&principal))
            .await
            .map_err(|e| write_error(e, &failure))?;
        let described = encryption::describe(info.headers.sse.as_ref(), customer.as_ref());
        let c = &info.headers.checksums;
        Ok(S3Response::new(PutObjectOutput {
            e_tag: Some(etag(&info)),
            checksum_crc32: c.get("crc32").cloned(),
            checksum_crc32c: c.get("crc32c").cloned(),
            checksum_crc64nvme: c.get("crc64nvme").cloned(),
            checksum_sha1: c.get("sha1").cloned(),
            checksum_sha256: c.get("sha256").cloned(),
            server_side_encryption: described.method,
            sse_customer_algorithm: described.algorithm,
            sse_customer_key_md5: described.key_md5,
            ..Default::default()
        }))
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        super::read::get(self, req).await
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        super::read::head(self, req).await
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let (principal, bucket) = self.bucket(&req, &req.input.bucket, true).await?;
        let input = &req.input;
        if input.if_match.is_some()
            || input.if_match_last_modified_time.is_some()
            || input.if_match_size.is_some()
        {
            // Refused rather than ignored: the delete would not be conditional.
            return Err(S3Error::with_message(
                S3ErrorCode::NotImplemented,
                "conditional DeleteObject (If-Match) is not supported",
            ));
        }
        self.storage
            .provider()
            .delete_object(&bucket, &req.input.key, &actor(&principal))
            .await
            .map_err(s3_error)?;
        let mut out = S3Response::new(DeleteObjectOutput::default());
        out.status = Some(http::StatusCode::NO_CONTENT);
        Ok(out)
    }

    async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let (principal, bucket) = self.bucket(&req, &req.input.bucket, true).await?;
        if req.input.delete.objects.len() > 1000 {
            return Err(S3Error::with_message(
                S3ErrorCode::MalformedXML,
                "at most 1000 keys may be deleted at once",
            ));
        }
        let quiet = req.input.delete.quiet.unwrap_or(false);
        let mut deleted = Vec::new();
        let mut errors = Vec::new();
        for object in &req.input.delete.objects {
            match self
                .storage
                .provider()
                .delete_object(&bucket, &object.key, &actor(&principal))
                .await
            {
                Ok(_) => {
                    if !quiet {
                        deleted.push(DeletedObject {
                            key: Some(object.key.clone()),
                            ..Default::default()
                        });
                    }
                }
                Err(e) => {
                    let err = s3_error(e);
                    errors.push(s3s::dto::Error {
                        code: Some(err.code().as_str().to_owned()),
                        key: Some(object.key.clone()),
                        message: err.message().map(str::to_owned),
                        version_id: None,
                    });
                }
            }
        }
        Ok(S3Response::new(DeleteObjectsOutput {
            deleted: Some(deleted),
            errors: (!errors.is_empty()).then_some(errors),
            ..Default::default()
        }))
    }

    async fn copy_object(
        &self,
        req: S3Request<CopyObjectInput>,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        super::copy::copy(self, req).await
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        super::list::v2(self, req).await
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        super::list::v1(self, req).await
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        super::multipart::create(self, req).await
    }

    async fn upload_part(
        &self,
        req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        super::multipart::upload_part(self, req).await
    }

    async fn complete_multipart_upload(
        &self,
        req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        super::multipart::complete(self, req).await
    }

    async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        super::multipart::abort(self, req).await
    }

    async fn list_parts(
        &self,
        req: S3Request<ListPartsInput>,
    ) -> S3Result<S3Response<ListPartsOutput>> {
        super::multipart::list_parts(self, req).await
    }

    async fn list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        super::multipart::list_uploads(self, req).await
    }
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
