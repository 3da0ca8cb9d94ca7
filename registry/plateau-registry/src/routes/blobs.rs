//! Blobs: `GET`/`HEAD /v2/<name>/blobs/<digest>` (with `Range`) and
//! `DELETE`, which only stops the repository serving the blob; GC frees
//! the content once nothing references it.

use std::ops::Range;

use axum::body::Body;
use axum::http::request::Parts;
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use plateau_store::registry::blobs;

use super::Ctx;
use crate::error::{Error, Result};
use crate::reference::Digest;

pub async fn get(ctx: &Ctx, digest: &str, req: &Parts) -> Result<Response> {
    let digest = Digest::parse(digest)?;
    let blob = blobs::in_repository(ctx.reg.db(), &ctx.name, &digest.to_string())
        .await?
        .ok_or_else(|| unknown(&digest))?;
    let total = blob.size as u64;
    let range = match req.headers.get(header::RANGE).and_then(|v| v.to_str().ok()) {
        None => None,
        Some(spec) => match parse_range(spec, total) {
            Some(r) => Some(r),
            None => {
                return Ok((
                    StatusCode::RANGE_NOT_SATISFIABLE,
                    [(header::CONTENT_RANGE, format!("bytes */{total}"))],
                )
                    .into_response());
            }
        },
    };
    let (status, len) = match &range {
        Some(r) => (StatusCode::PARTIAL_CONTENT, r.end - r.start),
        None => (StatusCode::OK, total),
    };
    let mut builder = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/octet-stream")
        .header(header::CONTENT_LENGTH, len)
        .header(header::ACCEPT_RANGES, "bytes")
        .header("docker-content-digest", digest.to_string())
        .header(header::ETAG, format!("\"{digest}\""));
    if let Some(r) = &range {
        builder = builder.header(
            header::CONTENT_RANGE,
            format!("bytes {}-{}/{total}", r.start, r.end - 1),
        );
    }
    let body = if req.method == Method::HEAD || len == 0 {
        Body::empty()
    } else {
        let stream = ctx
            .reg
            .store()
            .read(&blob.object_key, range.or(Some(0..total)))
            .await?;
        Body::from_stream(stream)
    };
    builder
        .body(body)
        .map_err(|e| Error::Internal(e.to_string()))
}

/// `bytes=a-b`, `bytes=a-` or `bytes=-n`, within `total`; one range only.
fn parse_range(spec: &str, total: u64) -> Option<Range<u64>> {
    let spec = spec.trim().strip_prefix("bytes=")?;
    if spec.contains(',') {
        return None;
    }
    let (a, b) = spec.split_once('-')?;
    let (start, end) = match (a.trim(), b.trim()) {
        ("", n) => {
            let n: u64 = n.parse().ok()?;
            (total.saturating_sub(n), total)
        }
        (a, "") => (a.parse().ok()?, total),
        (a, b) => (
            a.parse().ok()?,
            b.parse::<u64>().ok()?.saturating_add(1).min(total),
        ),
    };
    (start < end && start < total).then_some(start..end)
}

pub async fn delete(ctx: &Ctx, digest: &str) -> Result<Response> {
    let digest = Digest::parse(digest)?;
    let mut tx = ctx.reg.db().begin().await?;
    if !blobs::unlink(&mut tx, &ctx.name, &digest.to_string()).await? {
        return Err(unknown(&digest));
    }
    tx.commit().await?;
    Ok(StatusCode::ACCEPTED.into_response())
}

fn unknown(digest: &Digest) -> Error {
    Error::BlobUnknown(format!("blob {digest} is not in this repository"))
}

#[cfg(test)]
mod tests {
    #[test]
    fn ranges() {
        use super::parse_range as p;
        assert_eq!(p("bytes=0-9", 100), Some(0..10));
        assert_eq!(p("bytes=90-", 100), Some(90..100));
        assert_eq!(p("bytes=-10", 100), Some(90..100));
        assert_eq!(p("bytes=95-200", 100), Some(95..100));
        assert_eq!(p("bytes=100-", 100), None);
        assert_eq!(p("bytes=0-1,3-4", 100), None);
        assert_eq!(p("items=0-1", 100), None);
    }
}
