//! SCRAM-SHA-256 verifiers (RFC 5802, RFC 7677) made on the host, so a
//! role's password never reaches the server in clear: `CREATE ROLE ...
//! PASSWORD 'SCRAM-SHA-256$...'` stores the verifier as is, and a statement
//! that fails or is slow, or `pg_stat_statements`, can show at most the
//! verifier. The same derivation as PostgreSQL's (`scram_build_secret`):
//! SASLprep of the password (the raw bytes when it does not apply), PBKDF2
//! over a random 16-byte salt with 4096 iterations.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

/// PostgreSQL's default `scram_iterations`.
pub const ITERATIONS: u32 = 4096;

type HmacSha256 = Hmac<Sha256>;

fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = HmacSha256::new_from_slice(key).expect("hmac takes any key length");
    for part in parts {
        mac.update(part);
    }
    mac.finalize().into_bytes().into()
}

/// PBKDF2-HMAC-SHA-256 with one output block (32 bytes).
fn salted_password(password: &[u8], salt: &[u8], iterations: u32) -> [u8; 32] {
    let mut u = hmac(password, &[salt, &1u32.to_be_bytes()]);
    let mut out = u;
    for _ in 1..iterations {
        u = hmac(password, &[&u]);
        for (o, b) in out.iter_mut().zip(u.iter()) {
            *o ^= b;
        }
    }
    out
}

/// The verifier of `password` with `salt`.
pub fn verifier_with_salt(password: &str, salt: &[u8]) -> String {
    // PostgreSQL uses the password as is when SASLprep refuses it.
    let prepared = stringprep::saslprep(password)
        .map(|p| p.into_owned())
        .unwrap_or_else(|_| password.to_owned());
    let salted = salted_password(prepared.as_bytes(), salt, ITERATIONS);
    let client_key = hmac(&salted, &[b"Client Key"]);
    let stored_key = Sha256::digest(client_key);
    let server_key = hmac(&salted, &[b"Server Key"]);
    format!(
        "SCRAM-SHA-256${ITERATIONS}:{}${}:{}",
        BASE64.encode(salt),
        BASE64.encode(stored_key),
        BASE64.encode(server_key)
    )
}

/// The verifier of `password` with a fresh random salt.
pub fn verifier(password: &str) -> String {
    let salt: [u8; 16] = rand::random();
    verifier_with_salt(password, &salt)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Verifiers PostgreSQL 15 made (`CREATE ROLE ... PASSWORD`), rebuilt
    /// from their salts; the second goes through SASLprep (NFKC).
    #[test]
    fn matches_postgresql() {
        for (password, made) in [
            (
                "correct horse",
                "SCRAM-SHA-256$4096:g/HdhSscOstqxMio/pi1dw==$X+RCmjhRoTQX/Hf8I9leznmizdPT7cElTn5iCIOZnSo=:eYdaAqkhHBvAe+qPikB2JAFopRS/Hdn4Eg0RzpCAIN4=",
            ),
            (
                "p\u{e4}ssw\u{f6}rd \u{fb01}x",
                "SCRAM-SHA-256$4096:4ieLUzaUEVmQ/HDtWEryig==$YAbkAHL8Ohodf7BTtEA4WhWeAjN4VFGZX6GXmrVUODk=:s85pmb6hKF3rhGJs4OKxSef1L/k4xKVjkl7fAQfaOZo=",
            ),
        ] {
            let salt_b64 = made.split(['$', ':']).nth(2).unwrap();
            let salt = BASE64.decode(salt_b64).unwrap();
            assert_eq!(verifier_with_salt(password, &salt), made);
        }
    }

    #[test]
    fn only_base64_and_separators() {
        let v = verifier("x\\'; ALTER ROLE a SUPERUSER; --");
        assert!(
            v.chars()
                .all(|c| c.is_ascii_alphanumeric() || "$:+/=-".contains(c)),
            "{v}"
        );
    }
}
