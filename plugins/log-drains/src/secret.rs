//! An HTTPS drain's signing secret: a `whsec_` secret (shown once, stored
//! sealed with the host key for the organisation) that signs each batch
//! per Standard Webhooks, over the NDJSON before gzip.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use plateau_sdk::{ApiError, Namespace, secrets, webhooks};

use crate::record::{Drain, SealedSecret};

/// A new secret sealed for `org`: the sealed form, and the secret to show
/// once.
pub fn issue(org: &str, now: u64) -> Result<(SealedSecret, String), ApiError> {
    let secret = webhooks::new_secret();
    let sealed = secrets::seal_str(&Namespace::Organization(org.to_owned()), &secret)?;
    Ok((
        SealedSecret {
            sealed: BASE64.encode(sealed),
            created_at: now,
        },
        secret,
    ))
}

/// The drain's secret, opened; `None` for a drain without one.
pub fn open(org: &str, drain: &Drain) -> Result<Option<String>, ApiError> {
    let Some(s) = &drain.secret else {
        return Ok(None);
    };
    let sealed = BASE64
        .decode(&s.sealed)
        .map_err(|e| ApiError::internal(format!("a sealed drain secret is not base64: {e}")))?;
    Ok(Some(secrets::open_str(
        &Namespace::Organization(org.to_owned()),
        &sealed,
    )?))
}
