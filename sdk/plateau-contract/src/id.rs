//! The one id scheme of the platform: a short lowercase type prefix, `_`,
//! and a ULID (48 bits of milliseconds since the Unix epoch, then 80
//! random bits) in 26 lowercase Crockford base-32 digits:
//! `hb_01jf3k8x2y9z7w6v5t4s3r2q1p`.
//!
//! Ids sort by creation time as strings, so keyset pagination orders by id
//! alone. The host (`plateau-core`, with a monotonic generator) and every
//! plugin (through `plateau-sdk`, with the host's randomness) format ids
//! here; neither side draws randomness in this crate.
//!
//! Ids made before the scheme was one rule were upper case (`hb_01JF...`).
//! [`is_id`] and [`id_time`] accept them, and they still sort before every
//! later lowercase id: at the first digit where two ids differ, a digit
//! sorts before any letter and an upper-case letter before any lowercase
//! one, so an older id stays first.

/// Crockford's base-32 alphabet, lowercase.
const DIGITS: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// The ULID of `millis` and 80 random bits (the low 80 of `random`).
pub fn ulid(millis: u64, random: u128) -> u128 {
    (u128::from(millis & 0xFFFF_FFFF_FFFF) << 80) | (random & ((1u128 << 80) - 1))
}

/// `prefix`, `_`, and `ulid` in 26 lowercase digits.
pub fn format(prefix: &str, ulid: u128) -> String {
    let mut id = String::with_capacity(prefix.len() + 27);
    id.push_str(prefix);
    id.push('_');
    id.extend(
        (0..26)
            .rev()
            .map(|i| DIGITS[((ulid >> (5 * i)) & 31) as usize] as char),
    );
    id
}

/// A new id of `prefix` made at `millis` with 80 bits of `random`.
pub fn new_id(prefix: &str, millis: u64, random: [u8; 10]) -> String {
    let random = random
        .iter()
        .fold(0u128, |acc, byte| (acc << 8) | u128::from(*byte));
    format(prefix, ulid(millis, random))
}

/// The smallest id with `prefix` made at `millis`: every id made earlier
/// sorts before it.
pub fn time_boundary(prefix: &str, millis: u64) -> String {
    format(prefix, ulid(millis, 0))
}

/// Whether `id` is `prefix`, `_` and a ULID, in either case (ids made
/// before the scheme was lowercase keep working).
pub fn is_id(id: &str, prefix: &str) -> bool {
    ulid_part(id, prefix).is_some_and(|part| decode(part).is_some())
}

/// The creation time (milliseconds) of an id of `prefix`; `None` when
/// `id` is not one.
pub fn id_time(id: &str, prefix: &str) -> Option<u64> {
    let value = decode(ulid_part(id, prefix)?)?;
    Some((value >> 80) as u64)
}

fn ulid_part<'a>(id: &'a str, prefix: &str) -> Option<&'a str> {
    id.strip_prefix(prefix)?.strip_prefix('_')
}

/// The value of 26 Crockford digits of either case; 26 digits hold 130
/// bits, so a ULID's first digit is at most 7.
fn decode(part: &str) -> Option<u128> {
    if part.len() != 26 || part.as_bytes()[0] > b'7' {
        return None;
    }
    part.bytes().try_fold(0u128, |acc, c| {
        let digit = DIGITS.iter().position(|&d| d == c.to_ascii_lowercase())?;
        Some((acc << 5) | digit as u128)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_lowercase_prefixed_ulids_that_sort_by_time() {
        let a = new_id("hb", 1_000, [0xff; 10]);
        let b = new_id("hb", 1_001, [0; 10]);
        assert!(a < b, "{a} < {b}");
        assert_eq!(a.len(), 3 + 26);
        assert_eq!(a, a.to_ascii_lowercase());
        assert!(is_id(&a, "hb"));
        assert!(!is_id(&a, "h"));
        assert!(!is_id(&a, "run"));
        assert_eq!(id_time(&a, "hb"), Some(1_000));
        assert_eq!(time_boundary("hb", 1_001), "hb_00000000z90000000000000000");
        assert!(a < time_boundary("hb", 1_001) && time_boundary("hb", 1_001) <= b);
    }

    #[test]
    fn upper_case_ids_of_before_still_parse_and_sort_first() {
        let old = "hb_01JF3K8X2Y9Z7W6V5T4S3R2Q1P";
        assert!(is_id(old, "hb"));
        assert_eq!(id_time(old, "hb"), id_time(&old.to_ascii_lowercase(), "hb"));
        let later = new_id("hb", id_time(old, "hb").unwrap() + 1, [0; 10]);
        assert!(old < later.as_str());
        // The same millisecond in both cases: upper case first.
        let same = new_id("hb", id_time(old, "hb").unwrap(), [0; 10]);
        assert!(old < same.as_str());
    }

    #[test]
    fn malformed_ids_are_refused() {
        for bad in [
            "hb_short",
            "hb_81arz3ndektsv4rrffq69g5fav",
            "hb_01arz3ndektsv4rrffq69g5fa!",
            "hb_01arz3ndektsv4rrffq69g5fau",
            "hb01arz3ndektsv4rrffq69g5fav",
            "hb_../../../../../../../../..",
        ] {
            assert!(!is_id(bad, "hb"), "{bad}");
            assert_eq!(id_time(bad, "hb"), None, "{bad}");
        }
    }
}
