//! Tags: an object's (PutObjectTagging, GetObjectTagging,
//! DeleteObjectTagging, `x-amz-tagging` on PutObject, CopyObject and
//! CreateMultipartUpload, their count in GetObject's
//! `x-amz-tagging-count`), kept in its headers; a bucket's
//! (Put/Get/DeleteBucketTagging), kept as its `tagging` setting.

use std::collections::BTreeMap;
use std::sync::Arc;

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::{Front, internal, s3_error};
use crate::error::Error;

const BUCKET_KIND: &str = "tagging";
const MAX_OBJECT_TAGS: usize = 10;
const MAX_BUCKET_TAGS: usize = 50;

/// Tags by key.
pub(super) type Tags = BTreeMap<String, String>;

fn invalid(message: impl Into<String>) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidTag, message.into())
}

/// Checks a tag set as S3 does (at most `max` tags, keys of 1 to 128
/// characters and values of at most 256, no key twice).
fn check(pairs: Vec<(String, String)>, max: usize) -> S3Result<Tags> {
    if pairs.len() > max {
        return Err(invalid(format!("at most {max} tags are allowed")));
    }
    let mut tags = Tags::new();
    for (k, v) in pairs {
        if k.is_empty() || k.chars().count() > 128 {
            return Err(invalid(format!(
                "the tag key \"{k}\" must have 1 to 128 characters"
            )));
        }
        if v.chars().count() > 256 {
            return Err(invalid(format!(
                "the value of the tag \"{k}\" is longer than 256 characters"
            )));
        }
        if tags.insert(k.clone(), v).is_some() {
            return Err(invalid(format!("the tag key \"{k}\" is given twice")));
        }
    }
    Ok(tags)
}

fn from_set(tagging: &Tagging, max: usize) -> S3Result<Tags> {
    let pairs = tagging
        .tag_set
        .iter()
        .map(|t| {
            (
                t.key.clone().unwrap_or_default(),
                t.value.clone().unwrap_or_default(),
            )
        })
        .collect();
    check(pairs, max)
}

fn to_set(tags: &Tags) -> TagSet {
    tags.iter()
        .map(|(k, v)| Tag {
            key: Some(k.clone()),
            value: Some(v.clone()),
        })
        .collect()
}

/// The tags of a POST form's XML `tagging` field.
pub(super) fn from_xml(xml: &str) -> S3Result<Tags> {
    let mut d = s3s::xml::Deserializer::new(xml.as_bytes());
    let tagging = <Tagging as s3s::xml::Deserialize>::deserialize(&mut d).map_err(|_| {
        S3Error::with_message(
            S3ErrorCode::MalformedXML,
            "the form's tagging field is not a Tagging document",
        )
    })?;
    from_set(&tagging, MAX_OBJECT_TAGS)
}

/// The tags of an `x-amz-tagging` header (URL query encoded).
pub(super) fn from_header(header: Option<&str>) -> S3Result<Tags> {
    let Some(header) = header.filter(|h| !h.is_empty()) else {
        return Ok(Tags::new());
    };
    let mut pairs = Vec::new();
    for pair in header.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        pairs.push((decode(k)?, decode(v)?));
    }
    check(pairs, MAX_OBJECT_TAGS)
}

/// Percent-decoding with `+` as a space, as in a query string.
fn decode(s: &str) -> S3Result<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = s
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                out.push(hex.ok_or_else(|| invalid("x-amz-tagging: malformed percent-encoding"))?);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out).map_err(|_| invalid("x-amz-tagging: not UTF-8"))
}

/// The `x-amz-tagging-count` of an object with `tags`.
pub(super) fn count(tags: &Tags) -> Option<i32> {
    (!tags.is_empty()).then(|| i32::try_from(tags.len()).unwrap_or(i32::MAX))
}

async fn set_object_tags(
    front: &Front,
    bucket: &crate::provider::Bucket,
    key: &str,
    tags: Tags,
) -> S3Result<()> {
    front
        .storage
        .provider()
        .change_headers(bucket, key, Arc::new(move |h| h.tags = tags.clone()))
        .await
        .map_err(s3_error)?;
    Ok(())
}

pub(super) async fn put_object(
    front: &Front,
    req: S3Request<PutObjectTaggingInput>,
) -> S3Result<S3Response<PutObjectTaggingOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let tags = from_set(&req.input.tagging, MAX_OBJECT_TAGS)?;
    let version = req.input.version_id.as_deref();
    super::versioning::current_only(front, &bucket, &req.input.key, version).await?;
    set_object_tags(front, &bucket, &req.input.key, tags).await?;
    Ok(S3Response::new(PutObjectTaggingOutput::default()))
}

pub(super) async fn get_object(
    front: &Front,
    req: S3Request<GetObjectTaggingInput>,
) -> S3Result<S3Response<GetObjectTaggingOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let info = front
        .version(&bucket, &req.input.key, req.input.version_id.as_deref())
        .await?;
    Ok(S3Response::new(GetObjectTaggingOutput {
        tag_set: to_set(&info.headers.tags),
        version_id: info.version_id,
    }))
}

pub(super) async fn delete_object(
    front: &Front,
    req: S3Request<DeleteObjectTaggingInput>,
) -> S3Result<S3Response<DeleteObjectTaggingOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let version = req.input.version_id.as_deref();
    super::versioning::current_only(front, &bucket, &req.input.key, version).await?;
    set_object_tags(front, &bucket, &req.input.key, Tags::new()).await?;
    let mut out = S3Response::new(DeleteObjectTaggingOutput::default());
    out.status = Some(http::StatusCode::NO_CONTENT);
    Ok(out)
}

pub(super) async fn put_bucket(
    front: &Front,
    req: S3Request<PutBucketTaggingInput>,
) -> S3Result<S3Response<PutBucketTaggingOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    let tags = from_set(&req.input.tagging, MAX_BUCKET_TAGS)?;
    let json =
        serde_json::to_string(&tags).map_err(|e| internal(Error::Internal(e.to_string())))?;
    front.put_setting(&bucket, BUCKET_KIND, Some(&json)).await?;
    let mut out = S3Response::new(PutBucketTaggingOutput::default());
    out.status = Some(http::StatusCode::NO_CONTENT);
    Ok(out)
}

pub(super) async fn get_bucket(
    front: &Front,
    req: S3Request<GetBucketTaggingInput>,
) -> S3Result<S3Response<GetBucketTaggingOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, false).await?;
    let found = front
        .storage
        .provider()
        .bucket_setting(&bucket, BUCKET_KIND)
        .await
        .map_err(internal)?;
    let tags: Tags = found
        .and_then(|json| serde_json::from_str(&json).ok())
        .ok_or_else(|| {
            S3Error::with_message(S3ErrorCode::NoSuchTagSet, "the tag set does not exist")
        })?;
    Ok(S3Response::new(GetBucketTaggingOutput {
        tag_set: to_set(&tags),
    }))
}

pub(super) async fn delete_bucket(
    front: &Front,
    req: S3Request<DeleteBucketTaggingInput>,
) -> S3Result<S3Response<DeleteBucketTaggingOutput>> {
    let (_, bucket) = front.bucket(&req, &req.input.bucket, true).await?;
    front.put_setting(&bucket, BUCKET_KIND, None).await?;
    let mut out = S3Response::new(DeleteBucketTaggingOutput::default());
    out.status = Some(http::StatusCode::NO_CONTENT);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::from_header;

    #[test]
    fn the_tagging_header_is_a_query_string() {
        let tags = from_header(Some("a=1&b%20c=x+y&empty=")).unwrap();
        assert_eq!(tags.get("b c").map(String::as_str), Some("x y"));
        assert_eq!(tags.get("empty").map(String::as_str), Some(""));
        assert!(from_header(Some("a=1&a=2")).is_err());
        assert!(
            from_header(Some(
                &(0..11)
                    .map(|i| format!("k{i}=v"))
                    .collect::<Vec<_>>()
                    .join("&")
            ))
            .is_err()
        );
    }
}
