//! Stored shapes and their keys: an endpoint `e/{id}`, and its deliveries
//! `d/{endpointId}/{newest-first}` (a delivery's message id with its ULID
//! inverted, so a prefix list reads newest first).

use plateau_sdk::ids;
use serde::{Deserialize, Serialize};

/// The prefix of an endpoint's id.
pub const ENDPOINT_PREFIX: &str = "whep";
/// The prefix of a message id (the `webhook-id` header).
pub const MESSAGE_PREFIX: &str = "msg";
/// The attempts a delivery keeps in its log (its count goes on).
pub const KEPT_ATTEMPTS: usize = 20;
/// The response body bytes an attempt keeps.
pub const KEPT_BODY: usize = 1024;

pub fn endpoint_key(id: &str) -> String {
    format!("e/{id}")
}

pub const ENDPOINTS: &str = "e/";

/// The key of delivery `message` of endpoint `endpoint`.
pub fn delivery_key(endpoint: &str, message: &str) -> String {
    format!("d/{endpoint}/{}", newest_first(message))
}

pub fn deliveries_prefix(endpoint: &str) -> String {
    format!("d/{endpoint}/")
}

/// The durable job of one delivery's next attempt.
pub fn job_key(endpoint: &str, message: &str) -> String {
    format!("dlv:{endpoint}:{message}")
}

/// `id`'s characters mirrored in the ULID alphabet, so that later ids sort
/// first; its own inverse.
pub fn newest_first(id: &str) -> String {
    const ALPHABET: &[u8] = b"0123456789abcdefghjkmnpqrstvwxyz";
    id.bytes()
        .map(|b| {
            let lower = b.to_ascii_lowercase();
            match ALPHABET.iter().position(|c| *c == lower) {
                Some(i) => ALPHABET[31 - i] as char,
                None => b as char,
            }
        })
        .collect()
}

pub fn new_endpoint_id(now: u64) -> String {
    ids::new_id(ENDPOINT_PREFIX, now)
}

pub fn is_endpoint_id(id: &str) -> bool {
    ids::is_id(id, ENDPOINT_PREFIX)
}

/// The message id of timeline event `event_id`: the same ULID under
/// `msg_`, so every endpoint receives one event as one message, and an
/// event delivered to the plugin twice makes one delivery.
pub fn message_id(event_id: &str, now: u64) -> String {
    match event_id.split_once('_') {
        Some((_, ulid)) if ids::is_id(event_id, "evt") => format!("{MESSAGE_PREFIX}_{ulid}"),
        _ => ids::new_id(MESSAGE_PREFIX, now),
    }
}

pub fn is_message_id(id: &str) -> bool {
    ids::is_id(id, MESSAGE_PREFIX)
}

/// A signing secret, sealed with the host key for the organisation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SealedSecret {
    /// Base64 of the sealed `whsec_` secret.
    pub sealed: String,
    pub created_at: u64,
    /// Set on the previous secret by a rotation: it signs until then.
    pub expires_at: Option<u64>,
}

/// An endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    pub id: String,
    pub url: String,
    pub description: String,
    /// Event types, exact or ending in `*` (`app.*`, `*`).
    pub event_types: Vec<String>,
    /// Who hears by email that the endpoint was disabled.
    #[serde(default)]
    pub alert_emails: Vec<String>,
    /// `enabled`, or `disabled` (by hand, or after a delivery failed all
    /// its attempts).
    pub status: String,
    pub disabled_reason: Option<String>,
    pub disabled_at: Option<u64>,
    /// The newest first; every one not expired signs.
    pub secrets: Vec<SealedSecret>,
    pub created_at: u64,
    pub updated_at: u64,
}

impl Endpoint {
    pub fn enabled(&self) -> bool {
        self.status == "enabled"
    }

    /// Whether the endpoint subscribes to `event_type`.
    pub fn wants(&self, event_type: &str) -> bool {
        self.event_types
            .iter()
            .any(|pattern| crate::input::matches(pattern, event_type))
    }
}

/// One attempt at a delivery: what came back (the response head and the
/// first bytes of its body) or why nothing did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub number: u32,
    pub at: u64,
    pub status_code: Option<u16>,
    pub latency_ms: u64,
    pub error: Option<String>,
    pub response_headers: Vec<(String, String)>,
    pub response_body: Option<String>,
    /// `event` or `replay`.
    pub trigger: String,
}

/// One message to one endpoint, with its attempts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    /// The message id, sent as `webhook-id` on every attempt.
    pub id: String,
    pub endpoint_id: String,
    pub event_id: String,
    pub event_type: String,
    /// The JSON body sent.
    pub payload: String,
    /// `pending`, `succeeded` or `failed`.
    pub status: String,
    /// Attempts so far, including those the log no longer keeps.
    pub attempts: u32,
    /// Attempts of the current round (a replay starts a new round, with
    /// the whole retry schedule ahead of it).
    pub round_attempts: u32,
    /// What started the current round: `event` or `replay`.
    pub round_trigger: String,
    pub next_attempt_at: Option<u64>,
    pub log: Vec<Attempt>,
    pub created_at: u64,
    pub updated_at: u64,
}
