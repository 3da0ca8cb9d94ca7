//! Bearer secrets: API tokens (`plt_`), connect-grant secrets (`pltc_`) and
//! admin sessions. Only a SHA-256 hash of a secret is ever stored; the
//! secrets carry about 238 bits of randomness, so a fast hash is enough.

use rand::Rng;
use rand::distr::Alphanumeric;
use sha2::{Digest, Sha256};

/// Prefix of API tokens.
pub const TOKEN_PREFIX: &str = "plt_";
/// Prefix of connect-grant secrets, accepted only on `POST /connect/token`.
pub const GRANT_PREFIX: &str = "pltc_";
/// Prefix of invitation secrets, the last part of an invitation link.
pub const INVITE_PREFIX: &str = "plti_";
/// Prefix of admin session cookies.
pub const SESSION_PREFIX: &str = "plts_";

/// Random characters after the prefix.
pub const SECRET_LEN: usize = 40;

/// A new random secret with the given prefix.
pub fn generate(prefix: &str) -> String {
    let random: String = rand::rng()
        .sample_iter(Alphanumeric)
        .take(SECRET_LEN)
        .map(char::from)
        .collect();
    format!("{prefix}{random}")
}

/// Whether `secret` is the prefix followed by exactly [`SECRET_LEN`] ASCII
/// letters and digits.
pub fn is_well_formed(secret: &str, prefix: &str) -> bool {
    secret.strip_prefix(prefix).is_some_and(|rest| {
        rest.len() == SECRET_LEN && rest.bytes().all(|b| b.is_ascii_alphanumeric())
    })
}

/// The stored form of a secret.
pub fn hash(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// What lists show instead of the secret: the prefix and the last four
/// characters, `plt_…Xk3d`.
pub fn mask(secret: &str, prefix: &str) -> String {
    let tail = &secret[secret.len().saturating_sub(4)..];
    format!("{prefix}…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_secrets_are_well_formed_and_distinct() {
        let a = generate(TOKEN_PREFIX);
        let b = generate(TOKEN_PREFIX);
        assert_ne!(a, b);
        assert!(is_well_formed(&a, TOKEN_PREFIX));
        assert!(!is_well_formed(&a, GRANT_PREFIX));
        assert!(!is_well_formed("plt_short", TOKEN_PREFIX));
        assert_eq!(hash(&a).len(), 64);
        assert!(mask(&a, TOKEN_PREFIX).ends_with(&a[a.len() - 4..]));
        assert!(!mask(&a, TOKEN_PREFIX).contains(&a[4..20]));
    }
}
