//! CopyObject: the blobs are copied when the bytes stay the same; an
//! encrypted source (its SSE-C key given as the copy source's) or an
//! encrypted target is read, decrypted and written again as a new object.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::encryption;
use super::fields::set_encryption;
use super::headers::{etag, headers_of, last_modified, preconditions};
use super::{Front, actor, denied, s3_error};
use crate::provider::{Condition, Digests, Upload};

pub(super) async fn copy(
    front: &Front,
    req: S3Request<CopyObjectInput>,
) -> S3Result<S3Response<CopyObjectOutput>> {
    let (principal, to) = front.writer(&req, &req.input.bucket).await?;
    let CopySource::Bucket {
        bucket,
        key,
        version_id,
    } = &req.input.copy_source
    else {
        return Err(denied());
    };
    let version = version_id.as_deref();
    let (_, from) = front.bucket(&req, bucket, false).await?;
    let input = &req.input;
    let provider = front.storage.provider();
    let source = provider
        .open(&from, key, version)
        .await
        .map_err(s3_error)?
        .info;
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
    let mut headers = replace.then(|| {
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
    // Tags are the source's unless the tagging directive replaces them.
    if input
        .tagging_directive
        .as_ref()
        .is_some_and(|d| d.as_str() == TaggingDirective::REPLACE)
    {
        let tags = super::tagging::from_header(input.tagging.as_deref())?;
        headers.get_or_insert_with(|| source.headers.clone()).tags = tags;
    } else if let Some(h) = headers.as_mut() {
        h.tags = source.headers.tags.clone();
    }
    // A copy is private unless it asks otherwise, as in S3.
    let acl = super::acl::for_object(
        front,
        &principal,
        &to,
        input.acl.as_ref(),
        [
            &input.grant_full_control,
            &input.grant_read,
            &input.grant_read_acp,
            &input.grant_write_acp,
        ],
    )
    .await?;
    if acl != source.headers.acl {
        headers.get_or_insert_with(|| source.headers.clone()).acl = acl;
    } else if let Some(h) = headers.as_mut() {
        h.acl = acl;
    }
    // The copy's lock is its own (asked for, or the bucket's default
    // retention), never the source's.
    let h = headers.get_or_insert_with(|| source.headers.clone());
    h.retention = None;
    h.legal_hold = false;
    let defaults = super::bucket_encryption::defaults(front, &to).await?;
    super::lock::for_write(
        defaults.lock.as_ref(),
        input.object_lock_mode.as_ref(),
        input.object_lock_retain_until_date.as_ref(),
        input.object_lock_legal_hold_status.as_ref(),
        h,
    )?;
    let source_customer = encryption::customer(
        input.copy_source_sse_customer_algorithm.as_deref(),
        input.copy_source_sse_customer_key.as_deref(),
        input.copy_source_sse_customer_key_md5.as_deref(),
    )?;
    let source_key = encryption::key_of(
        &front.storage,
        source.headers.sse.as_ref(),
        source_customer.as_ref(),
    )?;
    let customer = encryption::customer(
        input.sse_customer_algorithm.as_deref(),
        input.sse_customer_key.as_deref(),
        input.sse_customer_key_md5.as_deref(),
    )?;
    let plan = encryption::plan(
        &front.storage,
        &principal.org_id,
        defaults.encryption.as_ref(),
        encryption::asked!(input, customer.as_ref()),
    )?;
    let info = if source_key.is_none() && plan.is_none() {
        // The same bytes: the blobs are copied, what describes them kept.
        if let Some(h) = headers.as_mut() {
            h.checksums = source.headers.checksums.clone();
            h.parts = source.headers.parts.clone();
            h.upload_id = source.headers.upload_id.clone();
        }
        provider
            .copy_object(
                (&from, &**key, version),
                (&to, input.key.as_str()),
                headers,
                &actor(&principal),
            )
            .await
            .map_err(s3_error)?
    } else {
        // Decrypted (and encrypted again) on the way: a new object.
        let opened = provider.open(&from, key, version).await.map_err(s3_error)?;
        let (found, stream) = opened.read(None).map_err(s3_error)?;
        let stream = match source_key {
            Some(k) => encryption::decrypt(stream, k, &found, 0),
            None => stream,
        };
        let mut headers = headers.unwrap_or_else(|| found.headers.clone());
        headers.sse = None;
        headers.parts = Vec::new();
        headers.upload_id = None;
        headers.checksums = found
            .headers
            .checksums
            .clone()
            .into_iter()
            .filter(|(_, v)| !v.contains('-'))
            .collect();
        let mut upload = Upload {
            body: stream,
            length: Some(found.size),
            digests: Digests::default(),
            condition: Condition::default(),
        };
        if let Some(plan) = &plan {
            headers.sse = Some(plan.sealed.clone());
            plan.encrypt(&mut upload, 0);
        }
        provider
            .put_object(&to, &input.key, upload, headers, &actor(&principal))
            .await
            .map_err(s3_error)?
    };
    let described = encryption::describe(info.headers.sse.as_ref(), customer.as_ref());
    let mut out = CopyObjectOutput {
        copy_object_result: Some(CopyObjectResult {
            e_tag: Some(etag(&info)),
            last_modified: Some(last_modified(&info)),
            ..Default::default()
        }),
        copy_source_version_id: version.map(str::to_owned),
        version_id: info.version_id.clone(),
        ..Default::default()
    };
    set_encryption!(out, described);
    Ok(S3Response::new(out))
}
