//! What the routes answer, as types: the handlers serialize these, and the
//! router declares them, so the OpenAPI document shows the answers the
//! plugin really gives.

use serde::Serialize;
use utoipa::ToSchema;

use crate::record::Queue;

/// A queue and its settings.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueView {
    pub name: String,
    pub visibility_timeout_seconds: u32,
    pub retention_seconds: u32,
    /// Receives before a message is dead-lettered; none: unlimited.
    pub max_receives: Option<u32>,
    pub dead_letter_queue: Option<String>,
    /// RFC 3339.
    pub created_at: String,
    pub updated_at: String,
}

impl From<&Queue> for QueueView {
    fn from(queue: &Queue) -> QueueView {
        QueueView {
            name: queue.name.clone(),
            visibility_timeout_seconds: queue.visibility_timeout_seconds,
            retention_seconds: queue.retention_seconds,
            max_receives: queue.max_receives,
            dead_letter_queue: queue.dead_letter_queue.clone(),
            created_at: queue.created_at.clone(),
            updated_at: queue.updated_at.clone(),
        }
    }
}

/// A message sent.
#[derive(Debug, Serialize, ToSchema)]
pub struct Sent {
    pub id: String,
    /// True when `dedupeId` was sent in the last 5 minutes: `id` is the
    /// first message's.
    pub duplicate: bool,
}

/// The messages of a batch, in order.
#[derive(Debug, Serialize, ToSchema)]
pub struct SentBatch {
    pub messages: Vec<Sent>,
}

/// A message received, hidden for the visibility timeout.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Received {
    pub id: String,
    pub body: String,
    /// Acknowledges or re-hides this receive of the message.
    pub receipt_handle: String,
    /// How many times it was received, this one included.
    pub receives: u32,
    /// RFC 3339.
    pub sent_at: String,
    pub first_received_at: Option<String>,
}

/// What a receive got: none when no message was visible.
#[derive(Debug, Serialize, ToSchema)]
pub struct ReceivedBatch {
    pub messages: Vec<Received>,
}

/// A batch acknowledgement, per handle.
#[derive(Debug, Serialize, ToSchema)]
pub struct Acked {
    /// The receipt handles acknowledged.
    pub acked: Vec<String>,
    pub failed: Vec<AckFailure>,
}

/// A receipt handle not acknowledged, and why.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AckFailure {
    pub receipt_handle: String,
    /// The problem code the single ack would answer.
    pub code: String,
    pub detail: String,
}

/// A queue's messages by state.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Stats {
    pub visible: u64,
    pub in_flight: u64,
    /// Sent with a delay not yet over.
    pub delayed: u64,
    pub total: u64,
    /// Moved to the dead-letter queue (or dropped) since the queue was made.
    pub dead_lettered: i64,
    pub oldest_age_seconds: u64,
}

/// What a redrive moved.
#[derive(Debug, Serialize, ToSchema)]
pub struct Redriven {
    pub moved: u64,
    pub skipped: u64,
    /// True when messages are left to move: call it again.
    pub remaining: bool,
}
