//! Signed webhooks in the Standard Webhooks format
//! (<https://www.standardwebhooks.com>): a `whsec_` secret, and the headers
//! `webhook-id`, `webhook-timestamp` and `webhook-signature`
//! (`v1,` + base64 of HMAC-SHA256 over `id.timestamp.body`).
//!
//! ```no_run
//! # fn run() -> Result<(), plateau_sdk::ApiError> {
//! use plateau_sdk::webhooks;
//! let secret = webhooks::new_secret(); // show it once, store it sealed
//! let body = serde_json::json!({"type": "check.down"});
//! let res = webhooks::send("https://hooks.example.com/x", &secret, "msg_1", &body, 5_000)?;
//! # Ok(()) }
//! ```

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, Mac};
use serde::Serialize;
use sha2::Sha256;

use crate::outbound::{HttpError, IncomingResponse, OutgoingRequest};

/// The prefix of a webhook secret.
pub const SECRET_PREFIX: &str = "whsec_";

/// A new secret: `whsec_` and 32 random bytes in base64.
pub fn new_secret() -> String {
    let mut key = [0u8; 32];
    getrandom::fill(&mut key).expect("the host provides randomness");
    format!("{SECRET_PREFIX}{}", BASE64.encode(key))
}

/// The secret's key bytes; `None` if it is not `whsec_` and base64.
fn key(secret: &str) -> Option<Vec<u8>> {
    BASE64.decode(secret.strip_prefix(SECRET_PREFIX)?).ok()
}

/// The `webhook-signature` value of `body` sent as message `id` at
/// `timestamp` (seconds since the Unix epoch).
pub fn sign(secret: &str, id: &str, timestamp: u64, body: &[u8]) -> Option<String> {
    let mut mac = Hmac::<Sha256>::new_from_slice(&key(secret)?).ok()?;
    mac.update(format!("{id}.{timestamp}.").as_bytes());
    mac.update(body);
    Some(format!("v1,{}", BASE64.encode(mac.finalize().into_bytes())))
}

/// Whether `signature` (one or more space-separated `v1,...` values)
/// signs `body` as message `id` at `timestamp`.
pub fn verify(secret: &str, id: &str, timestamp: u64, body: &[u8], signature: &str) -> bool {
    let Some(key) = key(secret) else {
        return false;
    };
    signature.split(' ').any(|candidate| {
        let Some(b64) = candidate.strip_prefix("v1,") else {
            return false;
        };
        let Ok(expected) = BASE64.decode(b64) else {
            return false;
        };
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).expect("hmac takes any key length");
        mac.update(format!("{id}.{timestamp}.").as_bytes());
        mac.update(body);
        mac.verify_slice(&expected).is_ok()
    })
}

/// The request that delivers `body` as JSON, signed with `secret`.
pub fn request<T: Serialize + ?Sized>(
    url: &str,
    secret: &str,
    id: &str,
    body: &T,
    timeout_ms: u32,
) -> Result<OutgoingRequest, HttpError> {
    let body = serde_json::to_vec(body).map_err(|e| HttpError::InvalidRequest(e.to_string()))?;
    let timestamp = crate::clock::now_millis() / 1000;
    let signature = sign(secret, id, timestamp, &body).ok_or_else(|| {
        HttpError::InvalidRequest("the webhook secret is not a whsec_ secret".to_owned())
    })?;
    Ok(OutgoingRequest::post(url)
        .header("content-type", "application/json")
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature)
        .body(body)
        .timeout_ms(timeout_ms))
}

/// Sends `body` to `url`, signed; the caller decides what a non-2xx answer
/// means (retry with the same `id`, so receivers can deduplicate).
pub fn send<T: Serialize + ?Sized>(
    url: &str,
    secret: &str,
    id: &str,
    body: &T,
    timeout_ms: u32,
) -> Result<IncomingResponse, HttpError> {
    request(url, secret, id, body, timeout_ms)?.send()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signs_like_the_standard_webhooks_reference() {
        // The example of the Standard Webhooks specification.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let body = br#"{"test": 2432232314}"#;
        assert_eq!(
            sign(secret, id, 1614265330, body).unwrap(),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
        let sig = sign(secret, id, 1614265330, body).unwrap();
        assert!(verify(secret, id, 1614265330, body, &sig));
        assert!(!verify(secret, id, 1614265331, body, &sig));
        assert!(sign("nope", id, 1, body).is_none());
        let fresh = new_secret();
        assert!(fresh.starts_with(SECRET_PREFIX) && key(&fresh).unwrap().len() == 32);
    }
}
