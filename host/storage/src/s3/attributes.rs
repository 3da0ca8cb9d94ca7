//! GetObjectAttributes: what is known of an object without its bytes
//! (entity tag, size, stored checksums, its parts' numbers and sizes),
//! each attribute only when asked for.

use s3s::dto::*;
use s3s::{S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use super::fields::set_checksums;
use super::headers::last_modified;
use super::{Front, encryption};

/// The most parts a page lists (S3's default and limit).
const MAX_PARTS: i32 = 1000;

pub(super) async fn get(
    front: &Front,
    req: S3Request<GetObjectAttributesInput>,
) -> S3Result<S3Response<GetObjectAttributesOutput>> {
    let input = &req.input;
    let (_, bucket) = front.bucket(&req, &input.bucket, false).await?;
    let info = front
        .version(&bucket, &input.key, input.version_id.as_deref())
        .await?;
    // An SSE-C object is described only to whoever has its key.
    let customer = encryption::customer(
        input.sse_customer_algorithm.as_deref(),
        input.sse_customer_key.as_deref(),
        input.sse_customer_key_md5.as_deref(),
    )?;
    encryption::key_of(&front.storage, info.headers.sse.as_ref(), customer.as_ref())?;
    // One header of comma-separated names, or several headers.
    let wants = |a: &str| {
        input
            .object_attributes
            .iter()
            .flat_map(|x| x.as_str().split(','))
            .any(|x| x.trim() == a)
    };
    if input.object_attributes.is_empty() {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidArgument,
            "x-amz-object-attributes: at least one attribute is required",
        ));
    }
    let mut out = GetObjectAttributesOutput {
        last_modified: Some(last_modified(&info)),
        version_id: info.version_id.clone(),
        ..Default::default()
    };
    if wants(ObjectAttributes::ETAG) {
        out.e_tag = Some(ETag::Strong(info.etag.clone()));
    }
    if wants(ObjectAttributes::OBJECT_SIZE) {
        out.object_size = Some(info.size as i64);
    }
    if wants(ObjectAttributes::STORAGE_CLASS) {
        out.storage_class = Some(StorageClass::from_static(StorageClass::STANDARD));
    }
    let c = &info.headers.checksums;
    if wants(ObjectAttributes::CHECKSUM) && !c.is_empty() {
        let composite = c.values().any(|v| v.contains('-'));
        let mut sums = Checksum {
            checksum_type: Some(ChecksumType::from_static(if composite {
                ChecksumType::COMPOSITE
            } else {
                ChecksumType::FULL_OBJECT
            })),
            ..Default::default()
        };
        set_checksums!(sums, map c);
        out.checksum = Some(sums);
    }
    let numbers = info.headers.parts.clone();
    if wants(ObjectAttributes::OBJECT_PARTS) && numbers.len() == info.segments.len() {
        let marker = input.part_number_marker.unwrap_or(0);
        let max = input.max_parts.unwrap_or(MAX_PARTS).clamp(0, MAX_PARTS);
        let after: Vec<(i64, u64)> = numbers
            .iter()
            .copied()
            .zip(info.segments.iter().copied())
            .filter(|(n, _)| *n > i64::from(marker))
            .collect();
        let page: Vec<ObjectPart> = after
            .iter()
            .take(max as usize)
            .map(|(n, size)| ObjectPart {
                part_number: i32::try_from(*n).ok(),
                size: Some(*size as i64),
                ..Default::default()
            })
            .collect();
        let truncated = after.len() > page.len();
        out.object_parts = Some(GetObjectAttributesParts {
            is_truncated: Some(truncated),
            max_parts: Some(max),
            part_number_marker: Some(marker),
            next_part_number_marker: page.last().and_then(|p| p.part_number),
            total_parts_count: i32::try_from(numbers.len()).ok(),
            parts: Some(page),
        });
    }
    Ok(S3Response::new(out))
}

/// Whether a request is a GetObjectAttributes (`GET ?attributes`).
pub(super) fn asked<B>(req: &http::Request<B>) -> bool {
    req.method() == http::Method::GET
        && req.uri().query().is_some_and(|q| {
            q.split('&')
                .any(|p| p.split('=').next() == Some("attributes"))
        })
}

/// GetObjectAttributes names the entity tag bare in its XML (S3 does, and
/// SDKs compare it so); s3s quotes every `ETag` it writes, so the answer
/// is rewritten.
pub(super) fn bare_etag(response: &mut s3s::HttpResponse) {
    let Some(bytes) = response.body().bytes() else {
        return;
    };
    let xml = String::from_utf8_lossy(&bytes);
    let bare = xml
        .replace("<ETag>&quot;", "<ETag>")
        .replace("&quot;</ETag>", "</ETag>")
        .replace("<ETag>\"", "<ETag>")
        .replace("\"</ETag>", "</ETag>");
    if bare.len() == xml.len() {
        return;
    }
    if let Ok(len) = http::HeaderValue::from_str(&bare.len().to_string()) {
        response
            .headers_mut()
            .insert(http::header::CONTENT_LENGTH, len);
    }
    *response.body_mut() = s3s::Body::from(bare);
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_attributes_etag_is_bare() {
        let xml = "<GetObjectAttributesResponse><ETag>&quot;abc&quot;</ETag><ObjectSize>3\
                   </ObjectSize></GetObjectAttributesResponse>";
        let mut response = http::Response::new(s3s::Body::from(xml.to_owned()));
        super::bare_etag(&mut response);
        let got = String::from_utf8(response.body().bytes().unwrap().to_vec()).unwrap();
        assert!(got.contains("<ETag>abc</ETag>"), "{got}");
        let req = http::Request::get("/b/k?attributes").body(()).unwrap();
        assert!(super::asked(&req));
        let req = http::Request::get("/b/k?attributes-x=1").body(()).unwrap();
        assert!(!super::asked(&req));
    }
}
