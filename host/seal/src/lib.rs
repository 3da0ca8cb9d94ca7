//! [`Sealer`]: authenticated encryption under a key only the host holds:
//! plugins' secrets (the `secrets` capability) and the passwords of every
//! managed service.
//!
//! A sealed value is `version (1) || nonce (12) || ciphertext || tag (16)`,
//! AES-256-GCM with a random nonce. The additional data binds it to a
//! context (a plugin and its namespace, or a resource and which of its
//! passwords), so a value sealed for one organisation does not open as
//! another's, nor for another plugin or resource.

use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

/// The format byte of values sealed by this version.
const FORMAT: u8 = 1;
/// The length of a key, in bytes.
pub const KEY_LEN: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    #[error("not a value sealed by this host for this plugin and namespace")]
    Invalid,
    #[error("the system's random source failed")]
    Random,
}

/// Seals and opens values under one host key.
pub struct Sealer {
    key: LessSafeKey,
    random: SystemRandom,
}

impl std::fmt::Debug for Sealer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealer(..)")
    }
}

impl Sealer {
    pub fn new(key: &[u8; KEY_LEN]) -> Self {
        let key = UnboundKey::new(&AES_256_GCM, key).expect("a 32-byte key fits AES-256");
        Sealer {
            key: LessSafeKey::new(key),
            random: SystemRandom::new(),
        }
    }

    /// A new random key.
    pub fn generate_key() -> Result<[u8; KEY_LEN], SealError> {
        let mut key = [0u8; KEY_LEN];
        SystemRandom::new()
            .fill(&mut key)
            .map_err(|_| SealError::Random)?;
        Ok(key)
    }

    pub fn seal(&self, context: &str, plaintext: &[u8]) -> Result<Vec<u8>, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        self.random
            .fill(&mut nonce)
            .map_err(|_| SealError::Random)?;
        let mut body = plaintext.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(context.as_bytes()),
                &mut body,
            )
            .map_err(|_| SealError::Invalid)?;
        let mut sealed = Vec::with_capacity(1 + NONCE_LEN + body.len());
        sealed.push(FORMAT);
        sealed.extend_from_slice(&nonce);
        sealed.extend_from_slice(&body);
        Ok(sealed)
    }

    pub fn open(&self, context: &str, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        let Some((&FORMAT, rest)) = sealed.split_first() else {
            return Err(SealError::Invalid);
        };
        if rest.len() < NONCE_LEN {
            return Err(SealError::Invalid);
        }
        let (nonce, body) = rest.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| SealError::Invalid)?;
        let mut body = body.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(context.as_bytes()), &mut body)
            .map_err(|_| SealError::Invalid)?;
        Ok(plain.to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_only_in_its_own_context_and_key() {
        let sealer = Sealer::new(&[7; KEY_LEN]);
        let sealed = sealer.seal("email\u{1f}org_a", b"hunter2").unwrap();
        assert!(!sealed.windows(7).any(|w| w == b"hunter2"));
        assert_eq!(
            sealer.open("email\u{1f}org_a", &sealed).unwrap(),
            b"hunter2"
        );
        assert_eq!(
            sealer.open("email\u{1f}org_b", &sealed),
            Err(SealError::Invalid)
        );
        let other = Sealer::new(&[8; KEY_LEN]);
        assert_eq!(
            other.open("email\u{1f}org_a", &sealed),
            Err(SealError::Invalid)
        );
        let mut edited = sealed.clone();
        *edited.last_mut().unwrap() ^= 1;
        assert_eq!(
            sealer.open("email\u{1f}org_a", &edited),
            Err(SealError::Invalid)
        );
        assert_eq!(sealer.open("x", &[]), Err(SealError::Invalid));
        assert_ne!(
            sealer.seal("c", b"same").unwrap(),
            sealer.seal("c", b"same").unwrap()
        );
    }
}
