//! S3's composite checksum of a multipart object, one rule for the
//! provider that stores it and the S3 front that checks the one a
//! CompleteMultipartUpload sends.

/// The checksum of a multipart object: the checksum of its parts'
/// checksums, and `-<parts>` (S3's composite checksum).
pub fn composite(algorithm: &str, sums: &[String]) -> Option<String> {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD as BASE64;
    use s3s::crypto::{Checksum as _, Crc32, Crc32c, Crc64Nvme, Sha1, Sha256};
    let mut joined = Vec::new();
    for sum in sums {
        joined.extend(BASE64.decode(sum).ok()?);
    }
    fn of<H: s3s::crypto::Checksum>(mut h: H, data: &[u8]) -> Vec<u8> {
        h.update(data);
        h.finalize().as_ref().to_vec()
    }
    let digest = match algorithm {
        "crc32" => of(Crc32::new(), &joined),
        "crc32c" => of(Crc32c::new(), &joined),
        "crc64nvme" => of(Crc64Nvme::new(), &joined),
        "sha1" => of(Sha1::new(), &joined),
        "sha256" => of(Sha256::new(), &joined),
        _ => return None,
    };
    Some(format!("{}-{}", BASE64.encode(digest), sums.len()))
}
