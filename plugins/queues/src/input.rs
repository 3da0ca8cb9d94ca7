//! The request bodies and their rules, reported all at once as
//! `validation_failed`. Pure: no storage, no clock.

use plateau_sdk::{ApiError, Validator};
use serde::{Deserialize, Deserializer};
use utoipa::ToSchema;

/// Limits, as SQS standard queues have them.
pub const MAX_BODY_BYTES: usize = 256 * 1024;
pub const MAX_DELAY_SECONDS: u32 = 900;
pub const MAX_VISIBILITY_SECONDS: u32 = 43_200;
pub const DEFAULT_VISIBILITY_SECONDS: u32 = 30;
pub const MIN_RETENTION_SECONDS: u32 = 60;
pub const MAX_RETENTION_SECONDS: u32 = 1_209_600;
pub const DEFAULT_RETENTION_SECONDS: u32 = 345_600;
pub const MAX_RECEIVES: u32 = 1000;
pub const MAX_BATCH: usize = 10;
/// The longest a receive waits for a message (long polling).
pub const MAX_WAIT_SECONDS: u32 = 20;
pub const MAX_NAME_CHARS: usize = 80;
pub const MAX_DEDUPE_CHARS: usize = 128;

/// A queue name: 1 to 80 of `A-Z a-z 0-9 - _`.
pub fn is_queue_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_CHARS
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

const NAME_RULE: &str = "must be 1 to 80 characters of letters, digits, - and _";

/// `POST /queues`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewQueue {
    pub name: Option<String>,
    pub visibility_timeout_seconds: Option<u32>,
    pub retention_seconds: Option<u32>,
    pub max_receives: Option<u32>,
    pub dead_letter_queue: Option<String>,
}

/// `PATCH /queues/{name}`: `null` clears `maxReceives` and `deadLetterQueue`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QueuePatch {
    pub visibility_timeout_seconds: Option<u32>,
    pub retention_seconds: Option<u32>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<u32>)]
    pub max_receives: Option<Option<u32>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>)]
    pub dead_letter_queue: Option<Option<String>>,
}

fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// A queue's settings after the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub visibility_timeout_seconds: u32,
    pub retention_seconds: u32,
    pub max_receives: Option<u32>,
    pub dead_letter_queue: Option<String>,
}

impl Settings {
    /// Checks settings of queue `name`; the dead-letter queue's existence
    /// is checked by the caller.
    pub fn check(self, name: &str, v: &mut Validator) -> Option<Settings> {
        let before = !v.is_valid();
        v.check(
            self.visibility_timeout_seconds <= MAX_VISIBILITY_SECONDS,
            "visibilityTimeoutSeconds",
            "must be 0 to 43200",
        );
        v.check(
            (MIN_RETENTION_SECONDS..=MAX_RETENTION_SECONDS).contains(&self.retention_seconds),
            "retentionSeconds",
            "must be 60 to 1209600",
        );
        if let Some(max) = self.max_receives {
            v.check(
                (1..=MAX_RECEIVES).contains(&max),
                "maxReceives",
                "must be 1 to 1000",
            );
        }
        if let Some(dlq) = &self.dead_letter_queue {
            if !is_queue_name(dlq) {
                v.error("deadLetterQueue", NAME_RULE);
            } else if dlq == name {
                v.error("deadLetterQueue", "must be another queue");
            }
            v.check(
                self.max_receives.is_some(),
                "maxReceives",
                "must be set with deadLetterQueue",
            );
        }
        (v.is_valid() || before).then_some(self)
    }
}

impl NewQueue {
    pub fn check(self) -> Result<(String, Settings), ApiError> {
        let mut v = Validator::new();
        let name = self.name.clone().unwrap_or_default();
        v.check(is_queue_name(&name), "name", NAME_RULE);
        let settings = Settings {
            visibility_timeout_seconds: self
                .visibility_timeout_seconds
                .unwrap_or(DEFAULT_VISIBILITY_SECONDS),
            retention_seconds: self.retention_seconds.unwrap_or(DEFAULT_RETENTION_SECONDS),
            max_receives: self.max_receives,
            dead_letter_queue: self.dead_letter_queue,
        }
        .check(&name, &mut v);
        v.finish()?;
        Ok((name, settings.expect("valid settings")))
    }
}

impl QueuePatch {
    /// The settings `current` becomes.
    pub fn apply(&self, name: &str, current: Settings) -> Result<Settings, ApiError> {
        let next = Settings {
            visibility_timeout_seconds: self
                .visibility_timeout_seconds
                .unwrap_or(current.visibility_timeout_seconds),
            retention_seconds: self.retention_seconds.unwrap_or(current.retention_seconds),
            max_receives: self.max_receives.unwrap_or(current.max_receives),
            dead_letter_queue: self
                .dead_letter_queue
                .clone()
                .unwrap_or(current.dead_letter_queue),
        };
        let mut v = Validator::new();
        let checked = next.check(name, &mut v);
        v.finish()?;
        Ok(checked.expect("valid settings"))
    }
}

/// One message to send.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewMessage {
    pub body: Option<String>,
    pub delay_seconds: Option<u32>,
    pub dedupe_id: Option<String>,
}

/// `POST /queues/{name}/messages/batch`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NewBatch {
    pub messages: Vec<NewMessage>,
}

/// A message that passed the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    pub body: String,
    pub delay_seconds: u32,
    pub dedupe_id: Option<String>,
}

impl NewMessage {
    /// Checks one message; `field` prefixes the field names of a batch entry.
    fn check_into(self, field: &str, v: &mut Validator) -> Outgoing {
        let body = self.body.unwrap_or_default();
        if body.is_empty() {
            v.error(format!("{field}body"), "is required");
        }
        if body.len() > MAX_BODY_BYTES {
            v.error(
                format!("{field}body"),
                "must be at most 262144 bytes of UTF-8",
            );
        }
        let delay_seconds = self.delay_seconds.unwrap_or(0);
        v.check(
            delay_seconds <= MAX_DELAY_SECONDS,
            format!("{field}delaySeconds"),
            "must be 0 to 900",
        );
        if let Some(id) = &self.dedupe_id {
            v.check(
                !id.is_empty()
                    && id.chars().count() <= MAX_DEDUPE_CHARS
                    && id.bytes().all(|b| b.is_ascii_graphic() && b != b'/'),
                format!("{field}dedupeId"),
                "must be 1 to 128 printable ASCII characters without /",
            );
        }
        Outgoing {
            body,
            delay_seconds,
            dedupe_id: self.dedupe_id,
        }
    }

    pub fn check(self) -> Result<Outgoing, ApiError> {
        let mut v = Validator::new();
        let out = self.check_into("", &mut v);
        v.finish()?;
        Ok(out)
    }
}

impl NewBatch {
    pub fn check(self) -> Result<Vec<Outgoing>, ApiError> {
        let mut v = Validator::new();
        v.check(
            (1..=MAX_BATCH).contains(&self.messages.len()),
            "messages",
            "must hold 1 to 10 messages",
        );
        let out: Vec<Outgoing> = self
            .messages
            .into_iter()
            .enumerate()
            .map(|(i, m)| m.check_into(&format!("messages[{i}]."), &mut v))
            .collect();
        v.finish()?;
        Ok(out)
    }
}

/// `POST /queues/{name}/receive`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReceiveRequest {
    pub max_messages: Option<u32>,
    pub visibility_timeout_seconds: Option<u32>,
    pub wait_seconds: Option<u32>,
}

/// A receive as checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receive {
    pub max: usize,
    /// Overrides the queue's visibility timeout.
    pub visibility: Option<u32>,
    /// How long to wait for a message when none is visible (long polling).
    pub wait_seconds: u32,
}

impl ReceiveRequest {
    pub fn check(self) -> Result<Receive, ApiError> {
        let mut v = Validator::new();
        let max = self.max_messages.unwrap_or(1);
        v.check(
            (1..=MAX_BATCH as u32).contains(&max),
            "maxMessages",
            "must be 1 to 10",
        );
        if let Some(t) = self.visibility_timeout_seconds {
            v.check(
                t <= MAX_VISIBILITY_SECONDS,
                "visibilityTimeoutSeconds",
                "must be 0 to 43200",
            );
        }
        let wait_seconds = self.wait_seconds.unwrap_or(0);
        v.check(
            wait_seconds <= MAX_WAIT_SECONDS,
            "waitSeconds",
            "must be 0 to 20",
        );
        v.finish()?;
        Ok(Receive {
            max: max as usize,
            visibility: self.visibility_timeout_seconds,
            wait_seconds,
        })
    }
}

/// `POST /queues/{name}/ack`: one handle, or a batch of up to 10.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AckRequest {
    pub receipt_handle: Option<String>,
    pub receipt_handles: Option<Vec<String>>,
}

/// What an ack asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acks {
    One(String),
    Batch(Vec<String>),
}

impl AckRequest {
    pub fn check(self) -> Result<Acks, ApiError> {
        match (self.receipt_handle, self.receipt_handles) {
            (Some(one), None) => Ok(Acks::One(one)),
            (None, Some(many)) if (1..=MAX_BATCH).contains(&many.len()) => Ok(Acks::Batch(many)),
            (None, Some(_)) => Err(ApiError::validation(
                "receiptHandles",
                "must hold 1 to 10 receipt handles",
            )),
            _ => Err(ApiError::validation(
                "receiptHandle",
                "send either receiptHandle or receiptHandles",
            )),
        }
    }
}

/// `POST /queues/{name}/visibility`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VisibilityRequest {
    pub receipt_handle: String,
    pub visibility_timeout_seconds: u32,
}

impl VisibilityRequest {
    pub fn check(self) -> Result<(String, u32), ApiError> {
        if self.visibility_timeout_seconds > MAX_VISIBILITY_SECONDS {
            return Err(ApiError::validation(
                "visibilityTimeoutSeconds",
                "must be 0 to 43200",
            ));
        }
        Ok((self.receipt_handle, self.visibility_timeout_seconds))
    }
}

/// `POST /queues/{name}/redrive`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RedriveRequest {
    pub target_queue: Option<String>,
    pub max_messages: Option<u32>,
}

/// The most messages one redrive call moves.
pub const MAX_REDRIVE: u32 = 200;

impl RedriveRequest {
    pub fn check(self) -> Result<(Option<String>, usize), ApiError> {
        let mut v = Validator::new();
        if let Some(target) = &self.target_queue {
            v.check(is_queue_name(target), "targetQueue", NAME_RULE);
        }
        let max = self.max_messages.unwrap_or(100);
        v.check(
            (1..=MAX_REDRIVE).contains(&max),
            "maxMessages",
            "must be 1 to 200",
        );
        v.finish()?;
        Ok((self.target_queue, max as usize))
    }
}
