//! Encryption at rest. SSE-C: the customer's AES-256 key comes with every
//! request and is never stored; only an HMAC of it under the object's
//! nonce is, to tell a later key that is not the same. SSE-S3: a random
//! key per object, sealed under the host's key ([`Sealing`]). SSE-KMS:
//! the same, sealed as an organisation's named key ([`crate::kms`]).
//!
//! Bytes are AES-256-CTR, each segment (the one blob of a PutObject, or
//! one per multipart part) under a counter block derived from the
//! object's nonce and its part number, so that a part is encrypted before
//! its place in the object is known and any range decrypts on its own.

use aws_lc_rs::cipher::{AES_256, DecryptionContext, StreamingDecryptingKey, UnboundCipherKey};
use aws_lc_rs::iv::FixedLength;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use futures::StreamExt;
use hmac::{Hmac, Mac};
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::keys::Sealing;
use crate::kms::KmsKey;
use crate::provider::ByteStream;

/// Whose key encrypts an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// SSE-C: the customer's.
    Customer,
    /// SSE-S3: a key of the object's, sealed under the host's.
    Host,
    /// SSE-KMS: a key of the object's, sealed as a named key of an
    /// organisation ([`crate::kms`]).
    Kms,
}

/// What is stored of an encrypted object's key.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sealed {
    pub kind: Kind,
    /// 16 random bytes, hex.
    pub nonce: String,
    /// SSE-C: HMAC-SHA256 of the customer's key under the nonce, hex.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<String>,
    /// SSE-S3 and SSE-KMS: the object's key sealed under the host's key,
    /// base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed: Option<String>,
    /// SSE-KMS: the named key the object's key is sealed as.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kms: Option<KmsKey>,
}

/// An AES-256 key.
#[derive(Clone)]
pub struct Key(pub [u8; 32]);

fn nonce() -> String {
    let mut n = [0u8; 16];
    rand::rng().fill_bytes(&mut n);
    hex::encode(n)
}

fn check(nonce: &str, key: &Key) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(nonce.as_bytes()).expect("any key size");
    mac.update(&key.0);
    hex::encode(mac.finalize().into_bytes())
}

fn context(nonce: &str) -> String {
    format!("storage-sse\u{1f}{nonce}")
}

impl Sealed {
    /// A new object under the customer's `key`.
    pub fn customer(key: &Key) -> Sealed {
        let nonce = nonce();
        Sealed {
            kind: Kind::Customer,
            check: Some(check(&nonce, key)),
            nonce,
            sealed: None,
            kms: None,
        }
    }

    /// A new object under a fresh key sealed with the host's key: as
    /// SSE-S3 without `kms`, as that named key with it.
    pub fn host(sealer: &dyn Sealing, kms: Option<KmsKey>) -> Option<(Sealed, Key)> {
        let nonce = nonce();
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        let mut sealed = Sealed {
            kind: if kms.is_some() { Kind::Kms } else { Kind::Host },
            nonce,
            check: None,
            sealed: None,
            kms,
        };
        sealed.sealed = Some(BASE64.encode(sealer.seal(&sealed.context(), &key)?));
        Some((sealed, Key(key)))
    }

    /// What the object's key is sealed with.
    fn context(&self) -> String {
        match &self.kms {
            Some(k) => k.context(&self.nonce),
            None => context(&self.nonce),
        }
    }

    /// Whether `key` is the customer key the object was written with.
    pub fn accepts(&self, key: &Key) -> bool {
        self.check
            .as_ref()
            .is_some_and(|c| bool::from(c.as_bytes().ct_eq(check(&self.nonce, key).as_bytes())))
    }

    /// The object's key of an SSE-S3 or SSE-KMS object.
    pub fn open(&self, sealer: &dyn Sealing) -> Option<Key> {
        let sealed = BASE64.decode(self.sealed.as_ref()?).ok()?;
        let key = sealer.open(&self.context(), &sealed)?;
        Some(Key(key.try_into().ok()?))
    }

    /// The first counter block of the segment of part `part`.
    pub fn iv(&self, part: i64) -> [u8; 16] {
        let mut h = Sha256::new();
        h.update(self.nonce.as_bytes());
        h.update(part.to_be_bytes());
        let d = h.finalize();
        let mut iv = [0u8; 16];
        // The low 64 bits count blocks from zero: no carry ever reaches
        // the derived half.
        iv[..8].copy_from_slice(&d[..8]);
        iv
    }
}

/// A segment of an object: its size and first counter block.
pub type Segment = (u64, [u8; 16]);

/// Encrypts (or decrypts: CTR is its own inverse) `stream`, whose first
/// byte is at `start` of an object made of `segments`.
pub fn apply(stream: ByteStream, key: Key, segments: Vec<Segment>, start: u64) -> ByteStream {
    let mut state = Ctr {
        key,
        segments,
        pos: start,
        cipher: None,
    };
    stream
        .map(move |chunk| chunk.and_then(|c| state.apply(&c).map_err(std::io::Error::other)))
        .boxed()
}

struct Ctr {
    key: Key,
    segments: Vec<Segment>,
    pos: u64,
    /// The cipher of the segment `pos` is in, and where that segment ends.
    cipher: Option<(StreamingDecryptingKey, u64)>,
}

impl Ctr {
    /// A cipher positioned at `pos`; where its segment ends.
    fn at(&self) -> Result<(StreamingDecryptingKey, u64), &'static str> {
        let mut begin = 0u64;
        for (size, iv) in &self.segments {
            let end = begin.saturating_add(*size);
            if self.pos < end {
                let within = self.pos - begin;
                let counter = u128::from_be_bytes(*iv).wrapping_add(u128::from(within / 16));
                let key =
                    UnboundCipherKey::new(&AES_256, &self.key.0).map_err(|_| "bad cipher key")?;
                let iv = FixedLength::from(counter.to_be_bytes());
                let mut cipher = StreamingDecryptingKey::ctr(key, DecryptionContext::Iv128(iv))
                    .map_err(|_| "cipher setup failed")?;
                let skip = (within % 16) as usize;
                if skip > 0 {
                    let mut out = [0u8; 32];
                    cipher
                        .update(&[0u8; 16][..skip], &mut out)
                        .map_err(|_| "cipher failed")?;
                }
                return Ok((cipher, end));
            }
            begin = end;
        }
        Err("read past the object's end")
    }

    fn apply(&mut self, mut input: &[u8]) -> Result<Bytes, &'static str> {
        let mut out = Vec::with_capacity(input.len());
        let mut buf = vec![0u8; input.len().min(1 << 20) + 16];
        while !input.is_empty() {
            if self.cipher.is_none() {
                self.cipher = Some(self.at()?);
            }
            let (cipher, end) = self.cipher.as_mut().expect("set above");
            let n = input
                .len()
                .min(usize::try_from(*end - self.pos).unwrap_or(usize::MAX))
                .min(buf.len() - 16);
            let done = cipher
                .update(&input[..n], &mut buf)
                .map_err(|_| "cipher failed")?;
            out.extend_from_slice(done.written());
            self.pos += n as u64;
            if self.pos == *end {
                self.cipher = None;
            }
            input = &input[n..];
        }
        Ok(Bytes::from(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(data: &[u8], key: &Key, segments: &[Segment], start: u64) -> Vec<u8> {
        let chunks: Vec<std::io::Result<Bytes>> = data
            .chunks(7)
            .map(|c| Ok(Bytes::copy_from_slice(c)))
            .collect();
        let s = apply(
            futures::stream::iter(chunks).boxed(),
            key.clone(),
            segments.to_vec(),
            start,
        );
        futures::executor::block_on(s.map(|c| c.unwrap().to_vec()).concat())
    }

    #[test]
    fn any_range_of_any_segment_decrypts_alone() {
        let key = Key([7u8; 32]);
        let sealed = Sealed::customer(&key);
        let plain: Vec<u8> = (0..1000u32).map(|i| (i * 31 % 251) as u8).collect();
        // Two parts, encrypted each on its own as uploads are.
        let (a, b) = plain.split_at(600);
        let mut cipher = run(a, &key, &[(600, sealed.iv(3))], 0);
        cipher.extend(run(b, &key, &[(400, sealed.iv(9))], 0));
        assert_ne!(cipher, plain);
        let segments = [(600, sealed.iv(3)), (400, sealed.iv(9))];
        for (from, to) in [
            (0, 1000),
            (5, 17),
            (590, 610),
            (599, 600),
            (600, 1000),
            (33, 999),
        ] {
            let got = run(&cipher[from..to], &key, &segments, from as u64);
            assert_eq!(got, plain[from..to], "range {from}..{to}");
        }
        assert!(sealed.accepts(&key));
        assert!(!sealed.accepts(&Key([8u8; 32])));
    }
}
