//! The S3 operations on buckets and objects; multipart ones delegate to
//! [`super::multipart`].

use std::sync::Mutex;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use bytes::Bytes;
use futures::StreamExt;
use s3s::dto::*;
use s3s::{S3, S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::verify::{self, Expected};
use super::{Front, actor, denied, s3_error, timestamp};
use crate::error::Error;
use crate::provider::{ByteStream, ListQuery, ObjectHeaders, ObjectInfo, Upload};

/// The most keys one listing returns.
const MAX_KEYS: usize = 1000;

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
    let (stream, failure) = verify::verify(
        body,
        Expected {
            content_md5,
            checksums,
            trailer: req.trailing_headers.clone(),
            trailer_names,
        },
    )?;
    Ok((
        Upload {
            body: stream,
            length: length.and_then(|l| u64::try_from(l).ok()),
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

fn etag(info: &ObjectInfo) -> ETag {
    ETag::Strong(info.etag.clone())
}

fn last_modified(info: &ObjectInfo) -> Timestamp {
    timestamp(info.modified_at)
}

fn http_date(ts: Timestamp) -> i64 {
    let t: time::OffsetDateTime = ts.into();
    (t.unix_timestamp_nanos() / 1_000_000) as i64
}

/// Applies `If-Match`, `If-None-Match`, `If-Modified-Since` and
/// `If-Unmodified-Since` to an object.
fn preconditions(
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
    if let Some(c) = if_none_match {
        if matches(c) {
            return Err(S3Error::new(S3ErrorCode::NotModified));
        }
    } else if let Some(t) = if_modified_since
        && modified <= http_date(t.clone()) / 1000
    {
        return Err(S3Error::new(S3ErrorCode::NotModified));
    }
    Ok(())
}

fn headers_of(
    content_type: Option<String>,
    content_encoding: Option<String>,
    content_disposition: Option<String>,
    content_language: Option<String>,
    cache_control: Option<String>,
    expires: Option<Timestamp>,
    metadata: Option<Metadata>,
) -> ObjectHeaders {
    ObjectHeaders {
        content_type,
        content_encoding,
        content_disposition,
        content_language,
        cache_control,
        expires: expires.map(http_date),
        metadata: metadata.unwrap_or_default().into_iter().collect(),
    }
}

fn metadata(h: &ObjectHeaders) -> Option<Metadata> {
    (!h.metadata.is_empty()).then(|| h.metadata.clone().into_iter().collect())
}

fn s3_object(info: ObjectInfo) -> Object {
    Object {
        e_tag: Some(etag(&info)),
        last_modified: Some(last_modified(&info)),
        size: Some(info.size as i64),
        storage_class: Some(ObjectStorageClass::from_static(
            ObjectStorageClass::STANDARD,
        )),
        key: Some(info.key),
        ..Default::default()
    }
}

fn encode_token(after: &str) -> String {
    B64.encode(after.as_bytes())
}

fn decode_token(token: &str) -> S3Result<String> {
    B64.decode(token)
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(|| {
            S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "the continuation token is not valid",
            )
        })
}

fn max_keys(asked: Option<i32>) -> S3Result<usize> {
    match asked {
        None => Ok(MAX_KEYS),
        Some(n) if n < 0 => Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "max-keys must not be negative",
        )),
        Some(n) => Ok((n as usize).min(MAX_KEYS)),
    }
}

fn prefixes(list: Vec<String>) -> Option<CommonPrefixList> {
    (!list.is_empty()).then(|| {
        list.into_iter()
            .map(|p| CommonPrefix { prefix: Some(p) })
            .collect()
    })
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

    async fn create_bucket(
        &self,
        _req: S3Request<CreateBucketInput>,
    ) -> S3Result<S3Response<CreateBucketOutput>> {
        Err(S3Error::with_message(
            S3ErrorCode::AccessDenied,
            "buckets are created over the API: POST /api/v1/storage/buckets",
        ))
    }

    async fn delete_bucket(
        &self,
        _req: S3Request<DeleteBucketInput>,
    ) -> S3Result<S3Response<DeleteBucketOutput>> {
        Err(S3Error::with_message(
            S3ErrorCode::AccessDenied,
            "buckets are deleted over the API: DELETE /api/v1/storage/buckets/{id}",
        ))
    }

    async fn put_object(
        &self,
        req: S3Request<PutObjectInput>,
    ) -> S3Result<S3Response<PutObjectOutput>> {
        let (principal, bucket) = self.bucket(&req, &req.input.bucket, true).await?;
        let input = req.input.clone_headers();
        let checksums = Checksum {
            checksum_crc32: input.checksum_crc32.clone(),
            checksum_crc32c: input.checksum_crc32c.clone(),
            checksum_crc64nvme: input.checksum_crc64nvme.clone(),
            checksum_sha1: input.checksum_sha1.clone(),
            checksum_sha256: input.checksum_sha256.clone(),
            checksum_type: None,
        };
        let mut req = req;
        let data = req.input.body.take();
        let (upload, failure) = body(
            &req,
            data,
            input.content_md5.clone(),
            checksums,
            input.content_length,
        )?;
        let headers = headers_of(
            input.content_type,
            input.content_encoding,
            input.content_disposition,
            input.content_language,
            input.cache_control,
            input.expires,
            input.metadata,
        );
        let info = self
            .storage
            .provider()
            .put_object(&bucket, &req.input.key, upload, headers, &actor(&principal))
            .await
            .map_err(|e| write_error(e, &failure))?;
        Ok(S3Response::new(PutObjectOutput {
            e_tag: Some(etag(&info)),
            ..Default::default()
        }))
    }

    async fn get_object(
        &self,
        req: S3Request<GetObjectInput>,
    ) -> S3Result<S3Response<GetObjectOutput>> {
        let (_, bucket) = self.bucket(&req, &req.input.bucket, false).await?;
        let input = &req.input;
        let opened = self
            .storage
            .provider()
            .get_object(&bucket, &input.key)
            .await
            .map_err(s3_error)?;
        preconditions(
            &opened.info,
            input.if_match.as_ref(),
            input.if_none_match.as_ref(),
            input.if_modified_since.as_ref(),
            input.if_unmodified_since.as_ref(),
        )?;
        let range = match &input.range {
            Some(r) => Some(r.check(opened.info.size).map_err(|_| {
                S3Error::with_message(
                    S3ErrorCode::InvalidRange,
                    "the requested range is not satisfiable",
                )
            })?),
            None => None,
        };
        let (info, stream) = opened.read(range.clone()).map_err(s3_error)?;
        let (length, content_range) = match &range {
            Some(r) => (
                r.end - r.start,
                Some(format!("bytes {}-{}/{}", r.start, r.end - 1, info.size)),
            ),
            None => (info.size, None),
        };
        let h = &info.headers;
        let mut out = S3Response::new(GetObjectOutput {
            body: Some(blob(stream)),
            content_length: Some(length as i64),
            content_range,
            accept_ranges: Some("bytes".to_owned()),
            e_tag: Some(etag(&info)),
            last_modified: Some(last_modified(&info)),
            content_type: input
                .response_content_type
                .clone()
                .or_else(|| h.content_type.clone()),
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
            ..Default::default()
        });
        if range.is_some() {
            out.status = Some(http::StatusCode::PARTIAL_CONTENT);
        }
        Ok(out)
    }

    async fn head_object(
        &self,
        req: S3Request<HeadObjectInput>,
    ) -> S3Result<S3Response<HeadObjectOutput>> {
        let (_, bucket) = self.bucket(&req, &req.input.bucket, false).await?;
        let input = &req.input;
        let info = self
            .storage
            .provider()
            .head_object(&bucket, &input.key)
            .await
            .map_err(s3_error)?;
        preconditions(
            &info,
            input.if_match.as_ref(),
            input.if_none_match.as_ref(),
            input.if_modified_since.as_ref(),
            input.if_unmodified_since.as_ref(),
        )?;
        let h = &info.headers;
        Ok(S3Response::new(HeadObjectOutput {
            content_length: Some(info.size as i64),
            accept_ranges: Some("bytes".to_owned()),
            e_tag: Some(etag(&info)),
            last_modified: Some(last_modified(&info)),
            content_type: h.content_type.clone(),
            content_encoding: h.content_encoding.clone(),
            content_disposition: h.content_disposition.clone(),
            content_language: h.content_language.clone(),
            cache_control: h.cache_control.clone(),
            expires: h.expires.map(timestamp),
            metadata: metadata(h),
            ..Default::default()
        }))
    }

    async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let (principal, bucket) = self.bucket(&req, &req.input.bucket, true).await?;
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
        let (principal, to) = self.bucket(&req, &req.input.bucket, true).await?;
        let CopySource::Bucket { bucket, key, .. } = &req.input.copy_source else {
            return Err(denied());
        };
        let (_, from) = self.bucket(&req, bucket, false).await?;
        let input = &req.input;
        let provider = self.storage.provider();
        let source = provider.head_object(&from, key).await.map_err(s3_error)?;
        preconditions(
            &source,
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
        let replace = input
            .metadata_directive
            .as_ref()
            .is_some_and(|d| d.as_str() == MetadataDirective::REPLACE);
        if !replace && from.id == to.id && **key == *input.key {
            return Err(S3Error::with_message(
                S3ErrorCode::InvalidRequest,
                "copying an object to itself needs the REPLACE metadata directive",
            ));
        }
        let headers = replace.then(|| {
            headers_of(
                input.content_type.clone(),
                input.content_encoding.clone(),
                input.content_disposition.clone(),
                input.content_language.clone(),
                input.cache_control.clone(),
                input.expires.clone(),
                input.metadata.clone(),
            )
        });
        let info = provider
            .copy_object(
                (&from, &**key),
                (&to, input.key.as_str()),
                headers,
                &actor(&principal),
            )
            .await
            .map_err(s3_error)?;
        Ok(S3Response::new(CopyObjectOutput {
            copy_object_result: Some(CopyObjectResult {
                e_tag: Some(etag(&info)),
                last_modified: Some(last_modified(&info)),
                ..Default::default()
            }),
            ..Default::default()
        }))
    }

    async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let (_, bucket) = self.bucket(&req, &req.input.bucket, false).await?;
        let input = &req.input;
        let after = match (&input.continuation_token, &input.start_after) {
            (Some(token), _) => decode_token(token)?,
            (None, Some(start)) => start.clone(),
            (None, None) => String::new(),
        };
        let max = max_keys(input.max_keys)?;
        let query = ListQuery {
            prefix: input.prefix.clone().unwrap_or_default(),
            delimiter: input.delimiter.clone(),
            after,
            max_keys: max,
        };
        let listing = self
            .storage
            .provider()
            .list_objects(&bucket, &query)
            .await
            .map_err(s3_error)?;
        let count = listing.objects.len() + listing.prefixes.len();
        Ok(S3Response::new(ListObjectsV2Output {
            name: Some(input.bucket.clone()),
            prefix: input.prefix.clone(),
            delimiter: input.delimiter.clone(),
            max_keys: Some(max as i32),
            key_count: Some(count as i32),
            continuation_token: input.continuation_token.clone(),
            start_after: input.start_after.clone(),
            encoding_type: input.encoding_type.clone(),
            is_truncated: Some(listing.truncated),
            next_continuation_token: listing
                .truncated
                .then(|| listing.next_after.as_deref().map(encode_token))
                .flatten(),
            contents: Some(listing.objects.into_iter().map(s3_object).collect()),
            common_prefixes: prefixes(listing.prefixes),
            ..Default::default()
        }))
    }

    async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        let (_, bucket) = self.bucket(&req, &req.input.bucket, false).await?;
        let input = &req.input;
        let max = max_keys(input.max_keys)?;
        let query = ListQuery {
            prefix: input.prefix.clone().unwrap_or_default(),
            delimiter: input.delimiter.clone(),
            after: input.marker.clone().unwrap_or_default(),
            max_keys: max,
        };
        let listing = self
            .storage
            .provider()
            .list_objects(&bucket, &query)
            .await
            .map_err(s3_error)?;
        // NextMarker is given with a delimiter (S3 leaves it out otherwise:
        // clients continue after the last key).
        let next_marker = (listing.truncated && input.delimiter.is_some())
            .then(|| {
                listing
                    .prefixes
                    .last()
                    .cloned()
                    .max(listing.objects.last().map(|o| o.key.clone()))
            })
            .flatten();
        Ok(S3Response::new(ListObjectsOutput {
            name: Some(input.bucket.clone()),
            prefix: input.prefix.clone(),
            delimiter: input.delimiter.clone(),
            marker: input.marker.clone(),
            max_keys: Some(max as i32),
            encoding_type: input.encoding_type.clone(),
            is_truncated: Some(listing.truncated),
            next_marker,
            contents: Some(listing.objects.into_iter().map(s3_object).collect()),
            common_prefixes: prefixes(listing.prefixes),
            ..Default::default()
        }))
    }

    async fn create_multipart_upload(
        &self,
        req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        let (_, bucket) = self.bucket(&req, &req.input.bucket, true).await?;
        let input = req.input;
        let headers = headers_of(
            input.content_type,
            input.content_encoding,
            input.content_disposition,
            input.content_language,
            input.cache_control,
            input.expires,
            input.metadata,
        );
        super::multipart::create(self, bucket, input.bucket, input.key, headers).await
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
