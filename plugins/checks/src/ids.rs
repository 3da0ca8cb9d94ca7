//! Identifiers in the platform's one scheme (`chk_` and a lowercase ULID, so
//! ids sort by creation time) and unguessable ping tokens.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

pub use plateau_sdk::ids::{is_id as is_well_formed, new_id};

/// 32 random bytes, URL-safe base64: a ping token.
pub fn new_token() -> String {
    URL_SAFE_NO_PAD.encode(plateau_sdk::ids::random::<32>())
}

/// The SHA-256 of a token in hex: what the ping index stores, so the index
/// alone does not reveal tokens.
pub fn token_digest(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_sort_by_time_and_are_well_formed() {
        let a = new_id("chk", 1_700_000_000_000);
        let b = new_id("chk", 1_700_000_000_001);
        assert!(a < b, "{a} < {b}");
        assert_eq!(a.len(), 4 + 26);
        assert!(is_well_formed(&a, "chk"));
        assert!(!is_well_formed(&a, "res"));
        assert!(!is_well_formed("chk_../../x", "chk"));
        // The time is the ULID's first 10 characters.
        assert_eq!(&new_id("x", 0)[2..12], "0000000000");
    }

    #[test]
    fn tokens_are_long_and_digests_stable() {
        let t = new_token();
        assert_eq!(t.len(), 43);
        assert_ne!(t, new_token());
        assert_eq!(
            token_digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
