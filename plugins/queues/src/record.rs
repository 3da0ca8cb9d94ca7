//! The stored shapes and their keys, in the caller organisation's bucket.
//!
//! | Key | Value |
//! |---|---|
//! | `q/{name}` | the [`Queue`] and its settings |
//! | `g/{name}` | a counter: the last generation the name was given |
//! | `m/{name}.{gen}/{id}` | a [`Message`] of generation `gen` |
//! | `v/{name}.{gen}/{visibleAt:015}/{id}` | the visibility index: [`IndexEntry`] |
//! | `d/{name}.{gen}/{dedupeId}` | a [`Dedupe`] record, for 5 minutes |
//! | `c/{name}/dead` | a counter: messages moved to the dead-letter queue |
//!
//! A queue's messages live under its generation: purging and deleting a
//! queue move it to a new generation (or none) at once, and a job removes
//! the old generation's keys in chunks. The visibility index sorts a
//! queue's messages by the time they become visible, so a receive reads
//! only the head of it.
//!
//! **Architecture Invariant:** a message and its index entry change
//! together, in the compare-and-swap on the message: the index key is
//! derived from the very version the swap replaces, so the index never
//! points at a version that is gone.

use plateau_sdk::ids;
use serde::{Deserialize, Serialize};

/// A queue and its settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Queue {
    pub name: String,
    /// Where its messages are stored; changed by a purge.
    pub generation: i64,
    pub visibility_timeout_seconds: u32,
    pub retention_seconds: u32,
    pub max_receives: Option<u32>,
    pub dead_letter_queue: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    pub updated_at: String,
}

impl Queue {
    pub fn key(name: &str) -> String {
        format!("q/{name}")
    }

    /// The storage id of the queue's current generation.
    pub fn sid(&self) -> String {
        sid(&self.name, self.generation)
    }
}

/// The storage id of generation `generation` of queue `name`.
pub fn sid(name: &str, generation: i64) -> String {
    format!("{name}.{generation}")
}

pub fn generation_key(name: &str) -> String {
    format!("g/{name}")
}

pub fn dead_counter_key(name: &str) -> String {
    format!("c/{name}/dead")
}

/// A stored message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub id: String,
    pub body: String,
    /// Milliseconds since the Unix epoch.
    pub sent_at: u64,
    /// When it can next be received.
    pub visible_at: u64,
    /// How many times it was received.
    pub receives: u32,
    /// The token of the latest receive; only its handle acknowledges.
    pub receipt: Option<String>,
    pub first_received_at: Option<u64>,
    /// The queue a dead-lettered message came from, for redrive.
    pub source_queue: Option<String>,
}

impl Message {
    pub fn key(sid: &str, id: &str) -> String {
        format!("m/{sid}/{id}")
    }

    /// Its visibility index key.
    pub fn index_key(&self, sid: &str) -> String {
        index_key(sid, self.visible_at, &self.id)
    }

    /// Its visibility index value.
    pub fn index_entry(&self) -> IndexEntry {
        IndexEntry {
            sent_at: self.sent_at,
            in_flight: self.receipt.is_some(),
        }
    }
}

pub fn index_key(sid: &str, visible_at: u64, id: &str) -> String {
    format!("v/{sid}/{visible_at:015}/{id}")
}

/// The prefix of a generation's visibility index.
pub fn index_prefix(sid: &str) -> String {
    format!("v/{sid}/")
}

/// Reads `(visibleAt, id)` back from an index key.
pub fn parse_index_key(key: &str) -> Option<(u64, &str)> {
    let mut parts = key.rsplitn(3, '/');
    let id = parts.next()?;
    let at = parts.next()?.parse().ok()?;
    Some((at, id))
}

/// What the index keeps beside the key, so stats need not read bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexEntry {
    #[serde(rename = "s")]
    pub sent_at: u64,
    /// Received at least once: hidden by a receive rather than a delay.
    #[serde(rename = "f")]
    pub in_flight: bool,
}

/// A `dedupeId` seen on a send.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Dedupe {
    pub message_id: String,
    pub at: u64,
}

impl Dedupe {
    pub fn key(sid: &str, dedupe_id: &str) -> String {
        format!("d/{sid}/{dedupe_id}")
    }
}

/// How long a `dedupeId` drops duplicates.
pub const DEDUPE_WINDOW_MS: u64 = 5 * 60 * 1000;

/// The prefixes holding generation `sid`'s data.
pub fn generation_prefixes(sid: &str) -> [String; 3] {
    [format!("m/{sid}/"), index_prefix(sid), format!("d/{sid}/")]
}

/// A receipt handle: the message id and the receive's token.
pub fn receipt_handle(id: &str, token: &str) -> String {
    format!("{id}.{token}")
}

/// `(message id, token)` of a receipt handle, if it has the shape of one.
pub fn parse_receipt_handle(handle: &str) -> Option<(&str, &str)> {
    let (id, token) = handle.split_once('.')?;
    (is_message_id(id) && token.len() == 22 && token.bytes().all(is_url_safe))
        .then_some((id, token))
}

fn is_url_safe(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-' || b == b'_'
}

/// A fresh token of 128 random bits.
pub fn new_token() -> String {
    ids::token()
}

/// A new message id: `msg_` and a ULID (send time, then 80 random bits).
pub fn new_message_id(now_ms: u64) -> String {
    ids::new_id("msg", now_ms)
}

pub fn is_message_id(id: &str) -> bool {
    ids::is_id(id, "msg")
}

pub use ids::random_below;
