//! Presigned URLs: SigV4 in the query string (`X-Amz-*` parameters), as
//! S3 clients make them, signed with one of the organisation's keys.

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// The longest a presigned URL may live (S3's limit): 7 days.
pub const MAX_EXPIRES: u64 = 7 * 24 * 60 * 60;

/// What to presign.
pub struct Presign<'a> {
    pub method: &'a str,
    /// `http://host:port`, without a trailing slash.
    pub endpoint: &'a str,
    pub bucket: &'a str,
    pub key: &'a str,
    pub access_key_id: &'a str,
    pub secret: &'a str,
    pub region: &'a str,
    /// Seconds since the epoch.
    pub now: i64,
    pub expires: u64,
}

/// Percent-encodes everything but unreserved characters (and `/` when
/// `keep_slash`), as SigV4 canonicalisation asks.
pub fn uri_encode(s: &str, keep_slash: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b'/' if keep_slash => out.push('/'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn hmac(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("hmac takes any key length");
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// The presigned URL (path style).
pub fn url(p: &Presign<'_>) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp(p.now)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let date = format!("{:04}{:02}{:02}", at.year(), u8::from(at.month()), at.day());
    let stamp = format!(
        "{date}T{:02}{:02}{:02}Z",
        at.hour(),
        at.minute(),
        at.second()
    );
    let scope = format!("{date}/{}/s3/aws4_request", p.region);
    let host = p
        .endpoint
        .split_once("://")
        .map_or(p.endpoint, |(_, h)| h)
        .trim_end_matches('/');
    let path = format!("/{}/{}", p.bucket, uri_encode(p.key, true));
    let mut query = [
        ("X-Amz-Algorithm", "AWS4-HMAC-SHA256".to_owned()),
        ("X-Amz-Credential", format!("{}/{scope}", p.access_key_id)),
        ("X-Amz-Date", stamp.clone()),
        ("X-Amz-Expires", p.expires.to_string()),
        ("X-Amz-SignedHeaders", "host".to_owned()),
    ]
    .iter()
    .map(|(k, v)| format!("{}={}", uri_encode(k, false), uri_encode(v, false)))
    .collect::<Vec<_>>();
    query.sort();
    let query = query.join("&");
    let canonical = format!(
        "{}\n{path}\n{query}\nhost:{host}\n\nhost\nUNSIGNED-PAYLOAD",
        p.method
    );
    let to_sign = format!(
        "AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    );
    let mut key = hmac(format!("AWS4{}", p.secret).as_bytes(), &date);
    for part in [p.region, "s3", "aws4_request"] {
        key = hmac(&key, part);
    }
    let signature = hex::encode(hmac(&key, &to_sign));
    format!(
        "{}{path}?{query}&X-Amz-Signature={signature}",
        p.endpoint.trim_end_matches('/')
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of AWS's "Authenticating Requests: Using Query
    /// Parameters" page.
    #[test]
    fn matches_the_aws_example() {
        let url = url(&Presign {
            method: "GET",
            endpoint: "https://examplebucket.s3.amazonaws.com",
            bucket: "",
            key: "test.txt",
            access_key_id: "AKIAIOSFODNN7EXAMPLE",
            secret: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            region: "us-east-1",
            now: 1_369_353_600,
            expires: 86400,
        });
        // Path style puts the bucket in the path; the example is virtual
        // host style, so only the shape is compared here.
        assert!(url.contains(
            "X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request"
        ));
        assert!(url.contains("X-Amz-Date=20130524T000000Z"));
        assert_eq!(uri_encode("a b/c", true), "a%20b/c");
    }
}
