//! ListObjects and ListObjectsV2. With `EncodingType=url` (which botocore
//! and the AWS CLI always ask for) every key, prefix, delimiter and marker
//! in the answer is percent-encoded, so that a `+` or a control character
//! in a key comes back as it was stored.

use std::fmt::Write as _;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::headers::{etag, last_modified};
use super::{Front, s3_error};
use crate::provider::{ListQuery, ObjectInfo};

/// The most keys one listing returns.
const MAX_KEYS: usize = 1000;

/// How names are written in a listing.
pub(super) struct Encoding {
    url: bool,
}

impl Encoding {
    pub(super) fn of(asked: Option<&EncodingType>) -> S3Result<Encoding> {
        match asked.map(EncodingType::as_str) {
            None => Ok(Encoding { url: false }),
            Some(t) if t.eq_ignore_ascii_case(EncodingType::URL) => Ok(Encoding { url: true }),
            Some(_) => Err(S3Error::with_message(
                S3ErrorCode::InvalidArgument,
                "invalid encoding type: only url is supported",
            )),
        }
    }

    pub(super) fn name(&self, s: &str) -> String {
        if !self.url {
            return s.to_owned();
        }
        let mut out = String::with_capacity(s.len());
        for b in s.bytes() {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'/') {
                out.push(b as char);
            } else {
                let _ = write!(out, "%{b:02X}");
            }
        }
        out
    }

    pub(super) fn opt(&self, s: &Option<String>) -> Option<String> {
        s.as_deref().map(|s| self.name(s))
    }
}

/// An object as listed; with its owner for the v1 listing and a v2 one
/// with `FetchOwner` (`owned`).
fn s3_object(info: ObjectInfo, enc: &Encoding, owned: Option<&crate::provider::Bucket>) -> Object {
    Object {
        owner: owned.map(|b| super::acl::owner_of(&info.headers, b)),
        e_tag: Some(etag(&info)),
        last_modified: Some(last_modified(&info)),
        size: Some(info.size as i64),
        storage_class: Some(ObjectStorageClass::from_static(
            ObjectStorageClass::STANDARD,
        )),
        key: Some(enc.name(&info.key)),
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

pub(super) fn max_keys(asked: Option<i32>) -> S3Result<usize> {
    match asked {
        None => Ok(MAX_KEYS),
        Some(n) if n < 0 => Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "max-keys must not be negative",
        )),
        Some(n) => Ok((n as usize).min(MAX_KEYS)),
    }
}

pub(super) fn prefixes(list: Vec<String>, enc: &Encoding) -> Option<CommonPrefixList> {
    (!list.is_empty()).then(|| {
        list.into_iter()
            .map(|p| CommonPrefix {
                prefix: Some(enc.name(&p)),
            })
            .collect()
    })
}

pub(super) async fn v2(
    front: &Front,
    req: S3Request<ListObjectsV2Input>,
) -> S3Result<S3Response<ListObjectsV2Output>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let input = &req.input;
    let owner = (input.fetch_owner == Some(true)).then_some(&bucket);
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
    let listing = front
        .storage
        .provider()
        .list_objects(&bucket, &query)
        .await
        .map_err(s3_error)?;
    let count = listing.objects.len() + listing.prefixes.len();
    let enc = Encoding::of(input.encoding_type.as_ref())?;
    Ok(S3Response::new(ListObjectsV2Output {
        name: Some(input.bucket.clone()),
        prefix: enc.opt(&input.prefix),
        delimiter: enc.opt(&input.delimiter.clone().filter(|d| !d.is_empty())),
        max_keys: Some(max as i32),
        key_count: Some(count as i32),
        continuation_token: input.continuation_token.clone(),
        start_after: enc.opt(&input.start_after),
        encoding_type: input.encoding_type.clone(),
        is_truncated: Some(listing.truncated),
        next_continuation_token: listing
            .truncated
            .then(|| listing.next_after.as_deref().map(encode_token))
            .flatten(),
        contents: Some(
            listing
                .objects
                .into_iter()
                .map(|o| s3_object(o, &enc, owner))
                .collect(),
        ),
        common_prefixes: prefixes(listing.prefixes, &enc),
        ..Default::default()
    }))
}

pub(super) async fn v1(
    front: &Front,
    req: S3Request<ListObjectsInput>,
) -> S3Result<S3Response<ListObjectsOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let input = &req.input;
    let max = max_keys(input.max_keys)?;
    let query = ListQuery {
        prefix: input.prefix.clone().unwrap_or_default(),
        delimiter: input.delimiter.clone(),
        after: input.marker.clone().unwrap_or_default(),
        max_keys: max,
    };
    let listing = front
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
    let enc = Encoding::of(input.encoding_type.as_ref())?;
    Ok(S3Response::new(ListObjectsOutput {
        name: Some(input.bucket.clone()),
        prefix: enc.opt(&input.prefix),
        delimiter: enc.opt(&input.delimiter.clone().filter(|d| !d.is_empty())),
        // S3 always gives the marker of a v1 listing, empty without one.
        marker: enc.opt(&input.marker).or_else(|| Some(String::new())),
        max_keys: Some(max as i32),
        encoding_type: input.encoding_type.clone(),
        is_truncated: Some(listing.truncated),
        next_marker: enc.opt(&next_marker),
        contents: Some(
            listing
                .objects
                .into_iter()
                .map(|o| s3_object(o, &enc, Some(&bucket)))
                .collect(),
        ),
        common_prefixes: prefixes(listing.prefixes, &enc),
        ..Default::default()
    }))
}
