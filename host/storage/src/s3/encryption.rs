//! Server-side encryption as S3 asks for it: SSE-C headers (the key, its
//! algorithm and MD5, all checked), `x-amz-server-side-encryption:
//! AES256` (SSE-S3) and `aws:kms` with its key id (SSE-KMS, under the
//! built-in KMS, [`crate::kms`]). The cipher itself is [`crate::sse`].

use std::sync::{Arc, Mutex};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use futures::StreamExt;
use md5::{Digest as _, Md5};
use s3s::dto::{SSECustomerAlgorithm, ServerSideEncryption};
use s3s::{S3Error, S3ErrorCode, S3Result};

use super::bucket_encryption::ByDefault;
use super::internal;
use crate::Storage;
use crate::error::Error;
use crate::kms::{KeyError, KmsKey};
use crate::provider::{ByteStream, ETAG_DIGEST, ObjectInfo, Upload};
use crate::sse::{self, Kind, Sealed};

/// A customer key a request sent (SSE-C), checked against its MD5.
pub(super) struct Customer {
    key: sse::Key,
    /// The key's MD5 in base64, echoed in responses.
    pub md5: String,
}

fn invalid(message: &str) -> S3Error {
    S3Error::with_message(S3ErrorCode::InvalidArgument, message.to_owned())
}

/// The SSE-C key of a request's three headers, or None without them.
pub(super) fn customer(
    algorithm: Option<&str>,
    key: Option<&str>,
    md5: Option<&str>,
) -> S3Result<Option<Customer>> {
    let (algorithm, key, md5) = match (algorithm, key, md5) {
        (None, None, None) => return Ok(None),
        (Some(a), Some(k), Some(m)) => (a, k, m),
        (None, _, _) => {
            return Err(invalid(
                "requests specifying server side encryption with customer provided keys must \
                 provide a valid encryption algorithm",
            ));
        }
        (_, None, _) => {
            return Err(invalid(
                "requests specifying server side encryption with customer provided keys must \
                 provide an appropriate secret key",
            ));
        }
        (_, _, None) => {
            return Err(invalid(
                "requests specifying server side encryption with customer provided keys must \
                 provide the client calculated MD5 of the secret key",
            ));
        }
    };
    if algorithm != "AES256" {
        return Err(invalid(
            "the encryption algorithm of a customer provided key must be AES256",
        ));
    }
    let key: [u8; 32] = BASE64
        .decode(key)
        .ok()
        .and_then(|k| k.try_into().ok())
        .ok_or_else(|| invalid("the secret key was invalid for the specified algorithm"))?;
    if BASE64.encode(Md5::digest(key)) != md5 {
        return Err(invalid(
            "the calculated MD5 hash of the key did not match the hash that was provided",
        ));
    }
    Ok(Some(Customer {
        key: sse::Key(key),
        md5: md5.to_owned(),
    }))
}

/// How a new object (or upload) is encrypted: its stored description and
/// its key.
pub(super) struct Plan {
    pub sealed: Sealed,
    key: sse::Key,
}

/// The encryption a write asks for, from its headers.
pub(super) struct Asked<'a> {
    /// `x-amz-server-side-encryption`.
    pub method: Option<&'a ServerSideEncryption>,
    /// `x-amz-server-side-encryption-aws-kms-key-id`.
    pub kms_key_id: Option<&'a str>,
    /// `x-amz-server-side-encryption-bucket-key-enabled`.
    pub bucket_key: Option<bool>,
    /// `x-amz-server-side-encryption-context`.
    pub kms_context: Option<&'a str>,
    pub customer: Option<&'a Customer>,
}

/// The [`Asked`] of an s3s write input (PutObject, CopyObject,
/// CreateMultipartUpload: the same field names).
macro_rules! asked {
    ($input:expr, $customer:expr) => {
        super::encryption::Asked {
            method: $input.server_side_encryption.as_ref(),
            kms_key_id: $input.ssekms_key_id.as_deref(),
            bucket_key: $input.bucket_key_enabled,
            kms_context: $input.ssekms_encryption_context.as_deref(),
            customer: $customer,
        }
    };
}
pub(super) use asked;

fn kms_error(e: KeyError) -> S3Error {
    match e {
        KeyError::Invalid => S3Error::with_message(S3ErrorCode::InvalidArgument, e.to_string()),
        KeyError::OtherOrganisation => {
            S3Error::with_message(S3ErrorCode::AccessDenied, e.to_string())
        }
    }
}

/// The named key of organisation `org` a key id names (None: the
/// default key), as an S3 error.
pub(super) fn kms_key(org: &str, id: Option<&str>, bucket_key: bool) -> S3Result<KmsKey> {
    KmsKey::resolve(org, id, bucket_key).map_err(kms_error)
}

/// The encryption of a write by organisation `org`: SSE-C, SSE-S3,
/// SSE-KMS or none; the bucket's default (`by_default`) when it asks for
/// none.
pub(super) fn plan(
    storage: &Storage,
    org: &str,
    by_default: Option<&ByDefault>,
    asked: Asked<'_>,
) -> S3Result<Option<Plan>> {
    if asked.kms_context.is_some() {
        return Err(S3Error::with_message(
            S3ErrorCode::NotImplemented,
            "x-amz-server-side-encryption-context is not supported by the built-in KMS",
        ));
    }
    let method = asked.method.map(ServerSideEncryption::as_str);
    let kms = match (method, asked.customer) {
        (Some(_), Some(_)) => {
            return Err(invalid(
                "server side encryption with customer provided keys cannot be combined with \
                 x-amz-server-side-encryption",
            ));
        }
        (None, Some(c)) if asked.kms_key_id.is_none() => {
            return Ok(Some(Plan {
                sealed: Sealed::customer(&c.key),
                key: c.key.clone(),
            }));
        }
        (Some("aws:kms"), None) => Some(kms_key(
            org,
            asked.kms_key_id,
            asked.bucket_key.unwrap_or(false),
        )?),
        (_, _) if asked.kms_key_id.is_some() => {
            return Err(invalid(
                "x-amz-server-side-encryption-aws-kms-key-id is only allowed with \
                 x-amz-server-side-encryption: aws:kms",
            ));
        }
        (Some("AES256"), None) => None,
        (Some("aws:kms:dsse"), None) => {
            return Err(S3Error::with_message(
                S3ErrorCode::NotImplemented,
                "dual-layer SSE-KMS is not offered; use aws:kms",
            ));
        }
        (Some(_), None) => return Err(invalid("the encryption method specified is not supported")),
        (None, _) => match by_default {
            None => return Ok(None),
            Some(ByDefault::S3) => None,
            Some(ByDefault::Kms(key)) => Some(key.clone()),
        },
    };
    let (sealed, key) = Sealed::host(storage.keys().sealer(), kms)
        .ok_or_else(|| internal(Error::Internal("sealing an object key failed".into())))?;
    Ok(Some(Plan { sealed, key }))
}

/// The key of an existing object (or upload) encrypted as `sealed`,
/// with the customer key the request sent.
pub(super) fn key_of(
    storage: &Storage,
    sealed: Option<&Sealed>,
    customer: Option<&Customer>,
) -> S3Result<Option<sse::Key>> {
    match (sealed, customer) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(S3Error::with_message(
            S3ErrorCode::InvalidRequest,
            "the object was not stored with a customer provided key",
        )),
        (Some(s), Some(c)) if s.kind == Kind::Customer => {
            if s.accepts(&c.key) {
                Ok(Some(c.key.clone()))
            } else {
                // 400, as s3-tests finds of S3.
                Err(S3Error::with_message(
                    S3ErrorCode::InvalidRequest,
                    "the customer provided key is not the one the object was stored with",
                ))
            }
        }
        (Some(s), None) if s.kind == Kind::Customer => Err(S3Error::with_message(
            S3ErrorCode::InvalidRequest,
            "the object was stored using a form of server side encryption; the correct \
             parameters must be provided to retrieve the object",
        )),
        (Some(_), Some(_)) => Err(S3Error::with_message(
            S3ErrorCode::InvalidRequest,
            "the object was not stored with a customer provided key",
        )),
        (Some(s), None) => s.open(storage.keys().sealer()).map(Some).ok_or_else(|| {
            internal(Error::Internal(
                "opening an object's sealed key failed".into(),
            ))
        }),
    }
}

impl Plan {
    /// Encrypts `upload` as the segment of part `part` (0 for a PutObject).
    pub fn encrypt(&self, upload: &mut Upload, part: i64) {
        encrypt(upload, &self.sealed, self.key.clone(), part);
    }
}

/// Encrypts `upload` as segment `part` of an object of `sealed`. An
/// SSE-S3 or SSE-KMS object's entity tag stays the MD5 of its plaintext,
/// as S3's SSE-S3 one.
pub(super) fn encrypt(upload: &mut Upload, sealed: &Sealed, key: sse::Key, part: i64) {
    let body = std::mem::replace(&mut upload.body, futures::stream::empty().boxed());
    let body = if sealed.kind != Kind::Customer {
        let md5 = Arc::new(Mutex::new(Some(Md5::new())));
        let end = md5.clone();
        let digests = upload.digests.clone();
        body.map(move |chunk| {
            if let (Ok(c), Some(h)) = (
                &chunk,
                md5.lock().unwrap_or_else(|p| p.into_inner()).as_mut(),
            ) {
                h.update(c);
            }
            chunk
        })
        .chain(futures::stream::once(async move {
            if let Some(h) = end.lock().unwrap_or_else(|p| p.into_inner()).take() {
                digests
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(ETAG_DIGEST.to_owned(), hex::encode(h.finalize()));
            }
            Ok(Bytes::new())
        }))
        .filter(|c| futures::future::ready(!matches!(c, Ok(b) if b.is_empty())))
        .boxed()
    } else {
        body
    };
    upload.body = sse::apply(body, key, vec![(u64::MAX, sealed.iv(part))], 0);
}

/// Decrypts `stream`, the bytes from `start` of `info`.
pub(super) fn decrypt(
    stream: ByteStream,
    key: sse::Key,
    info: &ObjectInfo,
    start: u64,
) -> ByteStream {
    let Some(sealed) = &info.headers.sse else {
        return stream;
    };
    let numbers = info.headers.part_numbers(info.segments.len());
    let segments = info
        .segments
        .iter()
        .zip(numbers)
        .map(|(size, part)| (*size, sealed.iv(part)))
        .collect();
    sse::apply(stream, key, segments, start)
}

/// What responses say of an object's encryption: the method, for SSE-C
/// the algorithm and the key's MD5, for SSE-KMS the key id and whether a
/// bucket key was asked for.
pub(super) struct Described {
    pub method: Option<ServerSideEncryption>,
    pub algorithm: Option<SSECustomerAlgorithm>,
    pub key_md5: Option<String>,
    pub kms_key_id: Option<String>,
    pub bucket_key: Option<bool>,
}

pub(super) fn describe(sealed: Option<&Sealed>, customer: Option<&Customer>) -> Described {
    let mut d = Described {
        method: None,
        algorithm: None,
        key_md5: None,
        kms_key_id: None,
        bucket_key: None,
    };
    match sealed.map(|s| (s.kind, s.kms.as_ref())) {
        Some((Kind::Host, _)) => {
            d.method = Some(ServerSideEncryption::from_static(
                ServerSideEncryption::AES256,
            ));
        }
        Some((Kind::Kms, key)) => {
            d.method = Some(ServerSideEncryption::from_static(
                ServerSideEncryption::AWS_KMS,
            ));
            d.kms_key_id = key.map(|k| k.id.clone());
            d.bucket_key = key.and_then(|k| k.bucket_key.then_some(true));
        }
        Some((Kind::Customer, _)) => {
            d.algorithm = Some("AES256".to_owned());
            d.key_md5 = customer.map(|c| c.md5.clone());
        }
        None => {}
    }
    d
}
