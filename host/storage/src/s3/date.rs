//! SigV4 signed with `Date` instead of `X-Amz-Date` (allowed by the
//! protocol, used by some clients): the request gets the `X-Amz-Date`
//! that `Date` says, so the string to sign is the one the client built.
//! `Date` itself stays among the signed headers as it was sent.
//!
//! SigV2 (`Authorization: AWS <key>:<signature>`) gets the date check
//! SigV4 has in `s3s`: a request without a valid `Date` or `x-amz-date`
//! is refused, one more than 15 minutes off is RequestTimeTooSkewed. A
//! path-style SigV2 request to a bucket (`/<bucket>`) is read as
//! `/<bucket>/`, the resource botocore and the AWS CLI sign for it
//! ([`v2_bucket_path`]).

use http::{HeaderValue, Request, Response, StatusCode};
use time::macros::format_description;

/// Adds `x-amz-date` to a SigV4 request that signs with `Date` only.
pub fn with_amz_date<B>(mut req: Request<B>) -> Request<B> {
    let h = req.headers();
    let sigv4 = h
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("AWS4-HMAC-SHA256"));
    if !sigv4 || h.contains_key("x-amz-date") {
        return req;
    }
    let amz = h
        .get(http::header::DATE)
        .and_then(|v| v.to_str().ok())
        .and_then(amz_date);
    if let Some(v) = amz.and_then(|a| HeaderValue::from_str(&a).ok()) {
        req.headers_mut().insert("x-amz-date", v);
    }
    req
}

/// Gives a path-style SigV2 request to a bucket (`/<bucket>`, on a host
/// outside the storage `domain`) the trailing slash its signature covers.
pub fn v2_bucket_path<B>(mut req: Request<B>, domain: &str) -> Request<B> {
    let h = req.headers();
    let v2 = h
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("AWS "));
    let virtual_host = h
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(|host| host.rsplit_once(':').map_or(host, |(h, _)| h))
        .is_some_and(|host| host.to_ascii_lowercase().ends_with(&format!(".{domain}")));
    let path = req.uri().path();
    let bucket_only = path.len() > 1 && !path[1..].contains('/');
    if !v2 || virtual_host || !bucket_only {
        return req;
    }
    let with_slash = match req.uri().query() {
        Some(q) => format!("{path}/?{q}"),
        None => format!("{path}/"),
    };
    let mut parts = req.uri().clone().into_parts();
    if let Ok(pq) = with_slash.parse() {
        parts.path_and_query = Some(pq);
        if let Ok(uri) = http::Uri::from_parts(parts) {
            *req.uri_mut() = uri;
        }
    }
    req
}

/// The most a SigV2 request's date may differ from the host's clock.
const MAX_SKEW: time::Duration = time::Duration::minutes(15);

/// The refusal of a SigV2 request whose authorization is malformed
/// (InvalidArgument) or whose date is missing, invalid or skewed; None
/// for any other request.
pub fn check_v2<B>(req: &Request<B>) -> Option<Response<s3s::Body>> {
    let h = req.headers();
    let auth = h
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("AWS "))?;
    if !auth.contains(':') {
        return Some(super::form::xml_error(
            StatusCode::BAD_REQUEST,
            "InvalidArgument",
            "AWS authorization header is invalid: expected AWS <access key id>:<signature>",
        ));
    }
    // x-amz-date, when sent (even empty), is the request's date.
    let date = h
        .get("x-amz-date")
        .or_else(|| h.get(http::header::DATE))
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .and_then(http_date);
    let denied = |code: &str, message: &str| {
        Some(super::form::xml_error(StatusCode::FORBIDDEN, code, message))
    };
    match date {
        None => denied(
            "AccessDenied",
            "AWS authentication requires a valid Date or x-amz-date header",
        ),
        Some(d) if d.year() < 1970 => denied(
            "AccessDenied",
            "AWS authentication requires a valid Date or x-amz-date header",
        ),
        Some(d) if (d - time::OffsetDateTime::now_utc()).abs() > MAX_SKEW => denied(
            "RequestTimeTooSkewed",
            "the difference between the request time and the current time is too large",
        ),
        Some(_) => None,
    }
}

/// An HTTP date: `GMT` as HTTP writes it, or a numeric zone as RFC 2822
/// does (`-0000`, which Python's `formatdate` and so botocore's SigV4
/// signer write).
fn http_date(http: &str) -> Option<time::OffsetDateTime> {
    let http = http.trim();
    time::PrimitiveDateTime::parse(
        http,
        format_description!(
            "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
        ),
    )
    .map(time::PrimitiveDateTime::assume_utc)
    .or_else(|_| {
        time::OffsetDateTime::parse(
            http,
            format_description!(
                "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] [offset_hour sign:mandatory][offset_minute]"
            ),
        )
    })
    .ok()
    .map(|d| d.to_offset(time::UtcOffset::UTC))
}

/// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`) as SigV4 writes it
/// (`19941106T084937Z`).
fn amz_date(http: &str) -> Option<String> {
    http_date(http)?
        .format(format_description!(
            "[year][month][day]T[hour][minute][second]Z"
        ))
        .ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn sigv2_needs_a_well_formed_header_and_a_date() {
        let now = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc2822)
            .unwrap()
            .replace("+0000", "GMT");
        let status = |auth: &str, amz_date: Option<&str>| {
            let mut req = http::Request::builder()
                .uri("/b/k")
                .header("authorization", auth)
                .header("date", now.as_str());
            if let Some(d) = amz_date {
                req = req.header("x-amz-date", d);
            }
            super::check_v2(&req.body(()).unwrap()).map(|r| r.status().as_u16())
        };
        assert_eq!(status("AWS key:sig", None), None);
        assert_eq!(status("AWS HAHAHA", None), Some(400));
        assert_eq!(status("AWS key:sig", Some("")), Some(403));
        assert_eq!(status("AWS4-HMAC-SHA256 x", Some("")), None);
    }

    #[test]
    fn a_path_style_v2_bucket_request_gets_its_slash() {
        let req = |uri: &str, host: &str, auth: &str| {
            let req = http::Request::builder()
                .uri(uri)
                .header("host", host)
                .header("authorization", auth)
                .body(())
                .unwrap();
            super::v2_bucket_path(req, "s3.example").uri().to_string()
        };
        assert_eq!(req("/b?acl", "127.0.0.1:9000", "AWS k:s"), "/b/?acl");
        assert_eq!(req("/b", "127.0.0.1:9000", "AWS k:s"), "/b/");
        assert_eq!(req("/b/key", "127.0.0.1:9000", "AWS k:s"), "/b/key");
        assert_eq!(req("/b", "127.0.0.1:9000", "AWS4-HMAC-SHA256 x"), "/b");
        assert_eq!(req("/", "b.s3.example", "AWS k:s"), "/");
        assert_eq!(req("/b", "s3.example", "AWS k:s"), "/b/");
    }

    #[test]
    fn an_http_date_becomes_an_amz_date() {
        assert_eq!(
            super::amz_date("Sun, 06 Nov 1994 08:49:37 GMT").as_deref(),
            Some("19941106T084937Z")
        );
        assert_eq!(
            super::amz_date("Sun, 06 Nov 1994 08:49:37 -0000").as_deref(),
            Some("19941106T084937Z")
        );
        assert_eq!(
            super::amz_date("Sun, 06 Nov 1994 10:49:37 +0200").as_deref(),
            Some("19941106T084937Z")
        );
        assert_eq!(super::amz_date("yesterday"), None);
    }
}
