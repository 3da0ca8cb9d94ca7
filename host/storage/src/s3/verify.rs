//! Checks a request body against the checksums its client sent, in
//! headers (`Content-MD5`, `x-amz-checksum-*`) or in the trailer of an
//! aws-chunked body, while it streams. A mismatch ends the body with an
//! error before its end, so the provider never commits it.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use futures::Stream;
use md5::{Digest as _, Md5};
use s3s::checksum::ChecksumHasher;
use s3s::crypto::{Checksum as _, Crc32, Crc32c, Crc64Nvme, Sha1, Sha256};
use s3s::dto::{Checksum, StreamingBlob};
use s3s::{S3Error, S3ErrorCode, TrailingHeaders};

use crate::provider::{ByteStream, Digests};

/// What the client said the body hashes to.
#[derive(Default)]
pub struct Expected {
    pub content_md5: Option<String>,
    pub checksums: Checksum,
    /// The aws-chunked trailer, read once the body has ended.
    pub trailer: Option<TrailingHeaders>,
    /// The trailer names (`x-amz-trailer`) the client announced.
    pub trailer_names: Vec<String>,
    /// Where the checksums the body was found to have are recorded, by
    /// algorithm (`crc32`...), once they are checked.
    pub digests: Digests,
}

/// Set when the body did not match.
pub type Failure = Arc<Mutex<Option<S3Error>>>;

const NAMES: [&str; 5] = [
    "x-amz-checksum-crc32",
    "x-amz-checksum-crc32c",
    "x-amz-checksum-crc64nvme",
    "x-amz-checksum-sha1",
    "x-amz-checksum-sha256",
];

fn field<'a>(c: &'a mut Checksum, name: &str) -> &'a mut Option<String> {
    match name {
        "x-amz-checksum-crc32" => &mut c.checksum_crc32,
        "x-amz-checksum-crc32c" => &mut c.checksum_crc32c,
        "x-amz-checksum-crc64nvme" => &mut c.checksum_crc64nvme,
        "x-amz-checksum-sha1" => &mut c.checksum_sha1,
        _ => &mut c.checksum_sha256,
    }
}

struct Verifier {
    inner: StreamingBlob,
    expected: Expected,
    hasher: ChecksumHasher,
    md5: Option<Md5>,
    failure: Failure,
    done: bool,
}

/// Wraps `body`; returns the stream for the provider and where a
/// mismatch is reported.
pub fn verify(
    body: StreamingBlob,
    mut expected: Expected,
) -> Result<(ByteStream, Failure), S3Error> {
    let mut hasher = ChecksumHasher::default();
    let mut wanted = Checksum::default();
    for name in NAMES {
        let announced = expected
            .trailer_names
            .iter()
            .any(|t| t.eq_ignore_ascii_case(name));
        let sent = field(&mut expected.checksums, name).is_some();
        *field(&mut wanted, name) = (announced || sent).then(String::new);
    }
    if wanted.checksum_crc32.is_some() {
        hasher.crc32 = Some(Crc32::new());
    }
    if wanted.checksum_crc32c.is_some() {
        hasher.crc32c = Some(Crc32c::new());
    }
    if wanted.checksum_crc64nvme.is_some() {
        hasher.crc64nvme = Some(Crc64Nvme::new());
    }
    if wanted.checksum_sha1.is_some() {
        hasher.sha1 = Some(Sha1::new());
    }
    if wanted.checksum_sha256.is_some() {
        hasher.sha256 = Some(Sha256::new());
    }
    if let Some(md5) = &expected.content_md5
        && BASE64.decode(md5).map_or(true, |d| d.len() != 16)
    {
        return Err(S3Error::with_message(
            S3ErrorCode::InvalidDigest,
            "Content-MD5 must be the base64 of 16 bytes",
        ));
    }
    let failure: Failure = Arc::default();
    let verifier = Verifier {
        inner: body,
        md5: expected.content_md5.as_ref().map(|_| Md5::new()),
        expected,
        hasher,
        failure: failure.clone(),
        done: false,
    };
    Ok((Box::pin(verifier), failure))
}

impl Verifier {
    /// The first mismatch between what was sent and what arrived.
    fn check(&mut self) -> Option<S3Error> {
        if let (Some(md5), Some(sent)) = (self.md5.take(), &self.expected.content_md5)
            && BASE64.encode(md5.finalize()) != *sent
        {
            return Some(S3Error::with_message(
                S3ErrorCode::BadDigest,
                "the Content-MD5 you specified did not match what was received",
            ));
        }
        let got = std::mem::take(&mut self.hasher).finalize();
        let trailers = self.expected.trailer.as_ref().and_then(|t| t.take());
        for name in NAMES {
            let mut got = got.clone();
            let Some(computed) = field(&mut got, name).clone() else {
                continue;
            };
            let sent = field(&mut self.expected.checksums, name)
                .clone()
                .or_else(|| {
                    trailers
                        .as_ref()
                        .and_then(|h| h.get(name))
                        .and_then(|v| v.to_str().ok())
                        .map(str::to_owned)
                });
            match sent {
                Some(sent) if sent == computed => {
                    let algorithm = name.trim_start_matches("x-amz-checksum-").to_owned();
                    self.expected
                        .digests
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .insert(algorithm, computed);
                }
                Some(_) => {
                    return Some(S3Error::with_message(
                        S3ErrorCode::BadDigest,
                        format!("the {name} you specified did not match the calculated checksum"),
                    ));
                }
                None => {
                    return Some(S3Error::with_message(
                        S3ErrorCode::InvalidRequest,
                        format!("the announced trailer {name} is missing"),
                    ));
                }
            }
        }
        None
    }
}

impl Stream for Verifier {
    type Item = std::io::Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.inner).poll_next(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Some(Ok(chunk))) => {
                this.hasher.update(&chunk);
                if let Some(md5) = this.md5.as_mut() {
                    md5.update(&chunk);
                }
                Poll::Ready(Some(Ok(chunk)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.done = true;
                *this.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(
                    S3Error::with_message(S3ErrorCode::IncompleteBody, e.to_string()),
                );
                Poll::Ready(Some(Err(std::io::Error::other(e.to_string()))))
            }
            Poll::Ready(None) => {
                this.done = true;
                match this.check() {
                    None => Poll::Ready(None),
                    Some(err) => {
                        *this.failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(err);
                        Poll::Ready(Some(Err(std::io::Error::other("checksum mismatch"))))
                    }
                }
            }
        }
    }
}
