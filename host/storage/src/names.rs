//! Bucket names (spec section 4.9: `<prefix>-<org>-<name>-<suffix>`) and
//! access key credentials.

use rand::Rng;

/// The first part of every bucket name.
pub const PREFIX: &str = "plt";
/// The longest name an organisation may choose.
pub const MAX_NAME: usize = 30;

/// The part of a bucket name that stands for the organisation: the last
/// ten characters of its id (the ULID's random part), lowercase.
pub fn org_part(org_id: &str) -> String {
    let tail: String = org_id
        .chars()
        .rev()
        .take(10)
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    tail.to_ascii_lowercase()
}

/// The bucket-name prefix of an organisation: `plt-<org>-`.
pub fn org_prefix(org_id: &str) -> String {
    format!("{PREFIX}-{}-", org_part(org_id))
}

/// Why a chosen name is refused, or None.
pub fn check_name(name: &str) -> Option<String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--");
    if ok {
        None
    } else {
        Some(format!(
            "name must be 1 to {MAX_NAME} lowercase letters, digits and single hyphens, \
             starting and ending with a letter or digit"
        ))
    }
}

/// Why a bucket name a client chose (CreateBucket over S3) is not one the
/// organisation may create.
#[derive(Debug, PartialEq, Eq)]
pub enum S3NameError {
    /// Not a valid S3 bucket name.
    Invalid,
    /// Valid, but outside the organisation's `plt-<org>-` names.
    NotOurs,
}

/// Checks `bucket`, an S3 name organisation `org_id` asks to create:
/// 3 to 63 lowercase letters, digits, hyphens and dots, starting and
/// ending with a letter or digit, no `..`, `.-` or `-.` (S3's rules), and
/// under the organisation's prefix (spec section 4.9) with at least one
/// character of its own.
pub fn check_s3_name(org_id: &str, bucket: &str) -> Result<(), S3NameError> {
    let b = bucket.as_bytes();
    let valid = (3..=63).contains(&b.len())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-' || *c == b'.')
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && !["..", ".-", "-."].iter().any(|p| bucket.contains(p));
    if !valid {
        return Err(S3NameError::Invalid);
    }
    match bucket.strip_prefix(&org_prefix(org_id)) {
        Some(rest) if !rest.is_empty() => Ok(()),
        _ => Err(S3NameError::NotOurs),
    }
}

/// A full bucket name for `name`, with a random suffix.
pub fn bucket_name(org_id: &str, name: &str) -> String {
    format!("{}{name}-{}", org_prefix(org_id), random(6, LOWER))
}

const LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
const UPPER: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const SECRET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";

/// A new access key id: `PLTK` and 16 uppercase letters or digits, the
/// shape of an AWS key id.
pub fn access_key_id() -> String {
    format!("PLTK{}", random(16, UPPER))
}

/// A new secret access key: 40 letters or digits.
pub fn secret() -> String {
    random(40, SECRET)
}

fn random(n: usize, alphabet: &[u8]) -> String {
    let mut rng = rand::rng();
    (0..n)
        .map(|_| alphabet[rng.random_range(0..alphabet.len())] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_names_are_valid_s3_names() {
        let org = "org_01jf3k8x2y9z7w6v5t4s3r2q1p";
        let name = bucket_name(org, "my-photos");
        assert!(name.starts_with("plt-5t4s3r2q1p-my-photos-"), "{name}");
        assert!(name.len() <= 63);
        assert!(check_name("my-photos").is_none());
        for bad in ["", "My", "a_b", "-a", "a-", "a--b", &"x".repeat(31)] {
            assert!(check_name(bad).is_some(), "{bad}");
        }
        let ours = format!("{}aaa.111", org_prefix(org));
        assert_eq!(check_s3_name(org, &ours), Ok(()));
        assert_eq!(check_s3_name(org, &name), Ok(()));
        assert_eq!(
            check_s3_name(org, &org_prefix(org)),
            Err(S3NameError::Invalid)
        );
        assert_eq!(
            check_s3_name(org, "plt-aaaaaaaaaa-x"),
            Err(S3NameError::NotOurs)
        );
        assert_eq!(check_s3_name(org, "foo"), Err(S3NameError::NotOurs));
        for bad in ["foo.-bar", "foo-.bar", "a..b", "ab", "Abc", &"a".repeat(64)] {
            assert_eq!(check_s3_name(org, bad), Err(S3NameError::Invalid), "{bad}");
        }
        assert_eq!(access_key_id().len(), 20);
        assert_eq!(secret().len(), 40);
    }
}
