//! Identifiers and randomness for plugins: prefixed ULIDs (time-ordered
//! ids), unguessable tokens, and random picks, from the host's randomness.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

pub use plateau_contract::id::{id_time, is_id, time_boundary};

/// A new id: `prefix`, `_` and a lowercase ULID of `now_ms` and 80 random
/// bits from the host (`run_01j...`), the platform's one id scheme
/// ([`plateau_contract::id`]), so ids sort by creation time like the
/// host's. [`is_id`] and [`id_time`] also accept the upper-case ids plugins
/// made before.
pub fn new_id(prefix: &str, now_ms: u64) -> String {
    plateau_contract::id::new_id(prefix, now_ms, random::<10>())
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
    fn ids_sort_by_time_and_check_their_shape() {
        let a = new_id("run", 1_000);
        let b = new_id("run", 2_000);
        assert!(a < b);
        assert_eq!(a, a.to_ascii_lowercase());
        assert!(is_id(&a, "run"));
        assert!(!is_id(&a, "msg"));
        assert!(!is_id("run_short", "run"));
        assert!(is_id("run_01ARZ3NDEKTSV4RRFFQ69G5FAV", "run"));
        assert_eq!(id_time(&a, "run"), Some(1_000));
        assert_eq!(id_time(&a, "msg"), None);
        assert_eq!(token().len(), 22);
        assert_eq!(random_below(0), 0);
        assert!(random_below(3) < 3);
    }
}
