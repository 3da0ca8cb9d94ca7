//! Identifiers and randomness for plugins: prefixed ULIDs (time-ordered
//! ids), unguessable tokens, and random picks, from the host's randomness.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// `prefix` and a ULID: the time in milliseconds, then 80 random bits, in
/// 26 upper-case Crockford base-32 digits (`run_01J...`).
pub fn prefixed_ulid(prefix: &str, now_ms: u64) -> String {
    let random = random::<10>();
    let mut value: u128 = u128::from(now_ms & 0xFFFF_FFFF_FFFF) << 80;
    for (i, byte) in random.iter().enumerate() {
        value |= u128::from(*byte) << (8 * (9 - i));
    }
    let ulid: String = (0..26)
        .rev()
        .map(|i| CROCKFORD[((value >> (5 * i)) & 31) as usize] as char)
        .collect();
    format!("{prefix}{ulid}")
}

/// Whether `id` is `prefix` and 26 upper-case digits, as [`prefixed_ulid`] makes.
pub fn is_prefixed_ulid(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix).is_some_and(|ulid| {
        ulid.len() == 26
            && ulid
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
    })
}

/// The creation time (milliseconds) of an id [`prefixed_ulid`] made with
/// `prefix`; `None` for anything else.
pub fn ulid_time(id: &str, prefix: &str) -> Option<u64> {
    let ulid = id.strip_prefix(prefix)?;
    // 26 digits hold 130 bits; a ULID's first digit is at most 7.
    if ulid.len() != 26 || ulid.as_bytes()[0] > b'7' {
        return None;
    }
    let mut value: u128 = 0;
    for c in ulid.bytes() {
        let digit = CROCKFORD.iter().position(|&d| d == c)?;
        value = (value << 5) | digit as u128;
    }
    Some((value >> 80) as u64)
}

/// A fresh token of 128 random bits, URL-safe base64.
pub fn token() -> String {
    URL_SAFE_NO_PAD.encode(random::<16>())
}

/// A random index below `n` (0 when `n` is 0).
pub fn random_below(n: usize) -> usize {
    if n == 0 {
        return 0;
    }
    (random_u64() % n as u64) as usize
}

/// 64 random bits.
pub fn random_u64() -> u64 {
    u64::from_le_bytes(random::<8>())
}

/// `N` random bytes from the host.
pub fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).expect("the host provides randomness");
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ulids_sort_by_time_and_check_their_shape() {
        let a = prefixed_ulid("run_", 1_000);
        let b = prefixed_ulid("run_", 2_000);
        assert!(a < b);
        assert!(is_prefixed_ulid(&a, "run_"));
        assert!(!is_prefixed_ulid(&a, "msg_"));
        assert!(!is_prefixed_ulid("run_short", "run_"));
        assert_eq!(ulid_time(&a, "run_"), Some(1_000));
        assert_eq!(ulid_time(&a, "msg_"), None);
        assert_eq!(ulid_time("run_81ARZ3NDEKTSV4RRFFQ69G5FAV", "run_"), None);
        assert_eq!(ulid_time("run_01ARZ3NDEKTSV4RRFFQ69G5FA!", "run_"), None);
        assert_eq!(token().len(), 22);
        assert_eq!(random_below(0), 0);
        assert!(random_below(3) < 3);
    }
}
