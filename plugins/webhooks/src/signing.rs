//! An endpoint's secrets: issued as `whsec_` secrets (shown once, stored
//! sealed with the host key for the organisation), rotated with the old one
//! still signing for a grace window, and the `webhook-signature` value of a
//! delivery: one `v1,` signature per secret that has not expired,
//! space-separated, as the Standard Webhooks specification allows.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use plateau_sdk::{ApiError, Namespace, secrets, webhooks};

use crate::record::{Endpoint, SealedSecret};

/// How long the previous secret keeps signing after a rotation, unless
/// the request says: a day.
pub const DEFAULT_GRACE_SECONDS: u64 = 86_400;
/// The longest grace window: a week.
pub const MAX_GRACE_SECONDS: u64 = 7 * 86_400;

/// A new secret sealed for `org`: the sealed form, and the secret to show
/// once.
pub fn issue(org: &str, now: u64) -> Result<(SealedSecret, String), ApiError> {
    let secret = webhooks::new_secret();
    let sealed = secrets::seal_str(&Namespace::Organization(org.to_owned()), &secret)?;
    Ok((
        SealedSecret {
            sealed: BASE64.encode(sealed),
            created_at: now,
            expires_at: None,
        },
        secret,
    ))
}

/// Puts `fresh` first; the secrets before it expire at `now + grace_ms` at
/// the latest, and those already expired go.
pub fn rotate(endpoint: &mut Endpoint, fresh: SealedSecret, now: u64, grace_ms: u64) {
    let until = now.saturating_add(grace_ms);
    let mut kept: Vec<SealedSecret> = std::mem::take(&mut endpoint.secrets)
        .into_iter()
        .map(|mut s| {
            s.expires_at = Some(s.expires_at.map_or(until, |at| at.min(until)));
            s
        })
        .filter(|s| s.expires_at.is_some_and(|at| at > now))
        .collect();
    kept.insert(0, fresh);
    endpoint.secrets = kept;
}

/// The secrets of `endpoint` that sign at `now`, opened.
pub fn signing(org: &str, endpoint: &Endpoint, now: u64) -> Result<Vec<String>, ApiError> {
    let namespace = Namespace::Organization(org.to_owned());
    endpoint
        .secrets
        .iter()
        .filter(|s| s.expires_at.is_none_or(|at| at > now))
        .map(|s| {
            let sealed = BASE64.decode(&s.sealed).map_err(|e| {
                ApiError::internal(format!("a sealed webhook secret is not base64: {e}"))
            })?;
            Ok(secrets::open_str(&namespace, &sealed)?)
        })
        .collect()
}

/// The `webhook-signature` value: a `v1,` signature for each of `secrets`.
pub fn header(secrets: &[String], id: &str, timestamp: u64, body: &[u8]) -> Option<String> {
    let signatures: Option<Vec<String>> = secrets
        .iter()
        .map(|s| webhooks::sign(s, id, timestamp, body))
        .collect();
    signatures.filter(|s| !s.is_empty()).map(|s| s.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(created_at: u64, expires_at: Option<u64>) -> SealedSecret {
        SealedSecret {
            sealed: String::new(),
            created_at,
            expires_at,
        }
    }

    #[test]
    fn a_rotation_keeps_the_old_secret_for_the_window_only() {
        let mut endpoint: Endpoint = serde_json::from_value(serde_json::json!({
            "id": "whep_x", "url": "https://x.example", "description": "", "eventTypes": ["*"],
            "status": "enabled", "disabledReason": null, "disabledAt": null,
            "secrets": [], "createdAt": 0, "updatedAt": 0,
        }))
        .unwrap();
        endpoint.secrets = vec![sealed(1, None), sealed(0, Some(50))];
        rotate(&mut endpoint, sealed(100, None), 100, 1000);
        // The expired one went; the current one signs until 1100.
        assert_eq!(
            endpoint.secrets,
            vec![sealed(100, None), sealed(1, Some(1100))]
        );
        rotate(&mut endpoint, sealed(200, None), 200, 5000);
        assert_eq!(endpoint.secrets[2], sealed(1, Some(1100)));
        assert_eq!(endpoint.secrets[1], sealed(100, Some(5200)));
    }

    #[test]
    fn both_secrets_sign() {
        let a = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".to_owned();
        let b = webhooks::new_secret();
        let value = header(&[a.clone(), b.clone()], "msg_1", 10, b"{}").unwrap();
        assert!(webhooks::verify(&a, "msg_1", 10, b"{}", &value));
        assert!(webhooks::verify(&b, "msg_1", 10, b"{}", &value));
        assert_eq!(value.split(' ').count(), 2);
        assert!(header(&[], "msg_1", 10, b"{}").is_none());
    }
}
