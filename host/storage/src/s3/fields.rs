//! The checksum and encryption fields that many s3s inputs and outputs
//! share (they are plain struct fields, not a shared type), set in one place.

/// Sets the `checksum_*` fields of an s3s struct: from stored checksums
/// by algorithm (`map`), or moved from another struct with such fields
/// (`from`, with its `checksum_type`).
macro_rules! set_checksums {
    ($out:expr, map $sums:expr) => {{
        let sums: &std::collections::BTreeMap<String, String> = $sums;
        $out.checksum_crc32 = sums.get("crc32").cloned();
        $out.checksum_crc32c = sums.get("crc32c").cloned();
        $out.checksum_crc64nvme = sums.get("crc64nvme").cloned();
        $out.checksum_sha1 = sums.get("sha1").cloned();
        $out.checksum_sha256 = sums.get("sha256").cloned();
    }};
    ($out:expr, from $sums:expr) => {{
        let sums: s3s::dto::Checksum = $sums;
        $out.checksum_crc32 = sums.checksum_crc32;
        $out.checksum_crc32c = sums.checksum_crc32c;
        $out.checksum_crc64nvme = sums.checksum_crc64nvme;
        $out.checksum_sha1 = sums.checksum_sha1;
        $out.checksum_sha256 = sums.checksum_sha256;
        $out.checksum_type = sums.checksum_type;
    }};
}

/// The checksums a request sent in its headers (`x-amz-checksum-*`).
macro_rules! sent_checksums {
    ($input:expr) => {
        s3s::dto::Checksum {
            checksum_crc32: $input.checksum_crc32.clone(),
            checksum_crc32c: $input.checksum_crc32c.clone(),
            checksum_crc64nvme: $input.checksum_crc64nvme.clone(),
            checksum_sha1: $input.checksum_sha1.clone(),
            checksum_sha256: $input.checksum_sha256.clone(),
            checksum_type: None,
        }
    };
}

/// Sets the server-side encryption fields of an s3s output from
/// [`super::encryption::describe`].
macro_rules! set_encryption {
    ($out:expr, $described:expr) => {{
        let described: super::encryption::Described = $described;
        $out.server_side_encryption = described.method;
        $out.sse_customer_algorithm = described.algorithm;
        $out.sse_customer_key_md5 = described.key_md5;
        $out.ssekms_key_id = described.kms_key_id;
        $out.bucket_key_enabled = described.bucket_key;
    }};
}

pub(super) use {sent_checksums, set_checksums, set_encryption};
