//! SigV4 signed with `Date` instead of `X-Amz-Date` (allowed by the
//! protocol, used by some clients): the request gets the `X-Amz-Date`
//! that `Date` says, so the string to sign is the one the client built.
//! `Date` itself stays among the signed headers as it was sent.

use http::{HeaderValue, Request};
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

/// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`) as SigV4 writes it
/// (`19941106T084937Z`).
fn amz_date(http: &str) -> Option<String> {
    let parsed = time::PrimitiveDateTime::parse(
        http.trim(),
        format_description!(
            "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
        ),
    )
    .ok()?;
    parsed
        .format(format_description!(
            "[year][month][day]T[hour][minute][second]Z"
        ))
        .ok()
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_http_date_becomes_an_amz_date() {
        assert_eq!(
            super::amz_date("Sun, 06 Nov 1994 08:49:37 GMT").as_deref(),
            Some("19941106T084937Z")
        );
        assert_eq!(super::amz_date("yesterday"), None);
    }
}
