//! Encryption under a key only the host holds (the `secrets` capability,
//! WIT 0.2.0): store credentials sealed, open them when needed. A value
//! sealed for one namespace opens only there, and only for this plugin.
//!
//! In a native build this is a reversible stand-in that keeps the same
//! binding rules; it is not encryption.

use crate::error::ApiError;
use crate::kv::Namespace;
use crate::sys;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("secret refused: {0}")]
pub struct SecretError(pub String);

impl From<SecretError> for ApiError {
    fn from(error: SecretError) -> ApiError {
        ApiError::internal(error.to_string())
    }
}

pub fn seal(namespace: &Namespace, plaintext: &[u8]) -> Result<Vec<u8>, SecretError> {
    sys::secret_seal(namespace, plaintext).map_err(SecretError)
}

pub fn open(namespace: &Namespace, sealed: &[u8]) -> Result<Vec<u8>, SecretError> {
    sys::secret_open(namespace, sealed).map_err(SecretError)
}

/// [`seal`] for text.
pub fn seal_str(namespace: &Namespace, plaintext: &str) -> Result<Vec<u8>, SecretError> {
    seal(namespace, plaintext.as_bytes())
}

/// [`open`] for text sealed with [`seal_str`].
pub fn open_str(namespace: &Namespace, sealed: &[u8]) -> Result<String, SecretError> {
    String::from_utf8(open(namespace, sealed)?)
        .map_err(|_| SecretError("the sealed value is not text".into()))
}
