//! The built-in KMS of SSE-KMS, as MinIO's: named keys per organisation,
//! with no key service of their own. A key id is a name the organisation
//! chooses (`reports`, `alias/reports`, or the ARN
//! `arn:aws:kms:<region>:<organisation id>:key/reports`); a name is the
//! organisation's key from its first use, and `aws:kms` without a key id
//! uses the organisation's default key, `alias/aws/s3`, as S3 does.
//!
//! A named key's material is the host's key bound to the organisation and
//! the name: an object's data key (random, AES-256) is sealed under the
//! host's key (AES-256-GCM, [`crate::keys::Sealing`]) with the
//! organisation, the name and the object's nonce as associated data, so
//! it opens only as that organisation's key of that name. An ARN of
//! another organisation's key is refused (AccessDenied): no key is shared
//! across organisations. Reading an object needs no key id, only the
//! right to read it, as with SSE-S3.

use serde::{Deserialize, Serialize};

/// The longest key id.
pub const MAX_ID: usize = 256;

/// The key `aws:kms` without a key id uses.
pub const DEFAULT_ID: &str = "alias/aws/s3";

/// An organisation's named key, as an object stores it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KmsKey {
    /// The organisation whose key it is.
    pub org: String,
    /// The key's name (the id without `alias/` or the ARN around it).
    pub name: String,
    /// The id as the client named it, echoed in responses.
    pub id: String,
    /// `x-amz-server-side-encryption-bucket-key-enabled` as asked.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub bucket_key: bool,
}

/// Why a key id names no key of the organisation.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error(
        "the KMS key id is not valid: 1 to 256 letters, digits and -_/:. naming a key, an alias/ \
         or a key ARN"
    )]
    Invalid,
    #[error("the KMS key belongs to another account")]
    OtherOrganisation,
}

fn allowed(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_/:.".contains(&b)
}

impl KmsKey {
    /// The key `id` names for organisation `org` (None: the default key).
    pub fn resolve(org: &str, id: Option<&str>, bucket_key: bool) -> Result<KmsKey, KeyError> {
        let id = id.unwrap_or(DEFAULT_ID);
        if id.is_empty() || id.len() > MAX_ID || !id.bytes().all(allowed) {
            return Err(KeyError::Invalid);
        }
        let name = match id.strip_prefix("arn:") {
            Some(rest) => {
                let parts: Vec<&str> = rest.splitn(5, ':').collect();
                let [_partition, "kms", _region, account, resource] = parts.as_slice() else {
                    return Err(KeyError::Invalid);
                };
                if *account != org {
                    return Err(KeyError::OtherOrganisation);
                }
                resource
                    .strip_prefix("key/")
                    .or_else(|| resource.strip_prefix("alias/"))
                    .ok_or(KeyError::Invalid)?
            }
            None => id.strip_prefix("alias/").unwrap_or(id),
        };
        if name.is_empty() {
            return Err(KeyError::Invalid);
        }
        Ok(KmsKey {
            org: org.to_owned(),
            name: name.to_owned(),
            id: id.to_owned(),
            bucket_key,
        })
    }

    /// What an object's data key is sealed with: the key's organisation
    /// and name, and the object's nonce.
    pub fn context(&self, nonce: &str) -> String {
        format!(
            "storage-kms\u{1f}{}\u{1f}{}\u{1f}{nonce}",
            self.org, self.name
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_aliases_and_arns_resolve_to_the_organisations_key() {
        let k = KmsKey::resolve("org_a", Some("reports"), false).unwrap();
        assert_eq!((k.name.as_str(), k.id.as_str()), ("reports", "reports"));
        let alias = KmsKey::resolve("org_a", Some("alias/reports"), false).unwrap();
        let arn = KmsKey::resolve(
            "org_a",
            Some("arn:aws:kms:us-east-1:org_a:key/reports"),
            true,
        )
        .unwrap();
        assert_eq!(alias.context("n"), k.context("n"));
        assert_eq!(arn.context("n"), k.context("n"));
        assert!(arn.bucket_key);
        let other = KmsKey::resolve("org_b", Some("reports"), false).unwrap();
        assert_ne!(other.context("n"), k.context("n"));
        let default = KmsKey::resolve("org_a", None, false).unwrap();
        assert_eq!(default.name, "aws/s3");
        assert_eq!(
            KmsKey::resolve(
                "org_a",
                Some("arn:aws:kms:us-east-1:org_b:key/reports"),
                false
            ),
            Err(KeyError::OtherOrganisation)
        );
        for bad in [
            "",
            "a b",
            "arn:aws:s3:::bucket",
            "alias/",
            "arn:aws:kms:r:org_a:other/x",
        ] {
            assert_eq!(
                KmsKey::resolve("org_a", Some(bad), false),
                Err(KeyError::Invalid),
                "{bad}"
            );
        }
        assert!(KmsKey::resolve("org_a", Some(&"k".repeat(MAX_ID + 1)), false).is_err());
    }
}
