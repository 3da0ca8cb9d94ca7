//! The headers of object requests: entity tags and dates, read
//! preconditions, write conditions, canned ACLs and stored content headers.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Result};

use super::timestamp;
use crate::provider::{Condition, ObjectHeaders, ObjectInfo};

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

/// The condition of a write: `If-Match` and `If-None-Match` (an entity
/// tag or `*`).
pub(super) fn condition(
    if_match: Option<&ETagCondition>,
    if_none_match: Option<&ETagCondition>,
) -> S3Result<Condition> {
    let text = |c: &ETagCondition| match c {
        ETagCondition::Any => "*".to_owned(),
        ETagCondition::ETag(e) => e.value().to_owned(),
    };
    let if_none_match = if_none_match.map(text);
    let if_match = if_match.map(text);
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
    // aws-chunked names the framing of the request body, not the content;
    // the rest is kept as it was sent.
    let chunked = |t: &str| t.trim().eq_ignore_ascii_case("aws-chunked");
    let content_encoding = content_encoding
        .map(|e| {
            if !e.split(',').any(chunked) {
                return e;
            }
            e.split(',')
                .filter(|t| !t.trim().is_empty() && !chunked(t))
                .map(str::trim)
                .collect::<Vec<_>>()
                .join(", ")
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
