//! Stored shapes and their keys: a drain `d/{id}` (what the API changes)
//! and its delivery state `s/{id}` (what its job changes: cursor, buffer,
//! counters, last attempt), kept apart so that an edit and a run never
//! overwrite each other.

use plateau_sdk::ids;
use serde::{Deserialize, Serialize};

/// The prefix of a drain's id.
pub const DRAIN_PREFIX: &str = "drn";
pub const DRAINS: &str = "d/";

/// Lines a drain's buffer holds while its destination fails; the oldest
/// go first, counted in `dropped`.
pub const MAX_BUFFERED_LINES: usize = 2000;
/// Bytes of messages the buffer holds (a stored value is at most 1 MiB).
pub const MAX_BUFFERED_BYTES: usize = 512 << 10;
/// The longest message kept of one line; the rest is cut.
pub const MAX_MESSAGE_BYTES: usize = 8 << 10;

pub fn drain_key(id: &str) -> String {
    format!("d/{id}")
}

pub fn state_key(id: &str) -> String {
    format!("s/{id}")
}

/// The drain's repeating job.
pub fn job_key(id: &str) -> String {
    format!("drain:{id}")
}

pub fn new_drain_id(now: u64) -> String {
    ids::new_id(DRAIN_PREFIX, now)
}

pub fn is_drain_id(id: &str) -> bool {
    ids::is_id(id, DRAIN_PREFIX)
}

/// A signing secret, sealed with the host key for the organisation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SealedSecret {
    /// Base64 of the sealed `whsec_` secret.
    pub sealed: String,
    pub created_at: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Drain {
    pub id: String,
    pub name: String,
    pub url: String,
    pub sources: Vec<String>,
    pub apps: Vec<String>,
    pub min_level: String,
    pub enabled: bool,
    /// HTTPS drains sign each batch; syslog drains have none.
    pub secret: Option<SealedSecret>,
    pub created_at: u64,
    pub updated_at: u64,
}

/// One line waiting in the buffer, as read (formatted when sent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Buffered {
    pub id: String,
    /// `app` or `event`.
    pub source: String,
    pub at: u64,
    pub level: String,
    /// The app's id and name, or the event's resource id and type.
    pub resource_id: String,
    pub resource_name: String,
    pub deployment: Option<String>,
    pub replica: Option<String>,
    pub channel: String,
    pub message: String,
}

/// Where a drain's forwarding stands.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct DeliveryState {
    /// The `logs` cursor after the last line read into the buffer.
    pub cursor: String,
    pub buffer: Vec<Buffered>,
    /// Lines forwarded and acknowledged (2xx, or written to syslog).
    pub delivered: u64,
    pub batches: u64,
    /// Lines dropped because the buffer was full.
    pub dropped: u64,
    /// Failed attempts since the last success.
    pub failures: u32,
    pub last_attempt_at: Option<u64>,
    pub last_success_at: Option<u64>,
    pub last_error: Option<String>,
    pub last_status_code: Option<u16>,
    pub last_latency_ms: Option<u64>,
    /// No attempt before this time (the backoff after failures).
    pub next_attempt_at: Option<u64>,
}

impl DeliveryState {
    /// Adds lines, dropping the oldest beyond the bounds; answers how many
    /// were dropped.
    pub fn push(&mut self, lines: impl IntoIterator<Item = Buffered>) -> u64 {
        self.buffer.extend(lines);
        let mut bytes: usize = self.buffer.iter().map(|b| b.message.len()).sum();
        let mut cut = 0;
        while self.buffer.len() - cut > MAX_BUFFERED_LINES
            || (bytes > MAX_BUFFERED_BYTES && self.buffer.len() - cut > 1)
        {
            bytes -= self.buffer[cut].message.len();
            cut += 1;
        }
        self.buffer.drain(..cut);
        self.dropped += cut as u64;
        cut as u64
    }
}

/// The largest stored delivery state: a stored value is at most 1 MiB.
pub const MAX_STATE_BYTES: usize = 900 << 10;

impl DeliveryState {
    /// Drops the oldest buffered lines, counted in `dropped`, until the
    /// state serializes within [`MAX_STATE_BYTES`] (messages full of
    /// characters JSON escapes can outgrow the byte bound of [`push`]).
    ///
    /// [`push`]: DeliveryState::push
    pub fn fit(&mut self) {
        while !self.buffer.is_empty()
            && serde_json::to_vec(self).map_or(0, |v| v.len()) > MAX_STATE_BYTES
        {
            let cut = self.buffer.len().div_ceil(10);
            self.buffer.drain(..cut);
            self.dropped += cut as u64;
        }
    }
}

/// The wait after `failures` failed attempts in a row: 1 s doubling, at
/// most 5 minutes.
pub fn backoff_ms(failures: u32) -> u64 {
    1000u64
        .saturating_mul(1 << failures.saturating_sub(1).min(9))
        .min(300_000)
}

/// Cuts `message` to [`MAX_MESSAGE_BYTES`] on a character boundary.
pub fn cap_message(mut message: String) -> String {
    if message.len() > MAX_MESSAGE_BYTES {
        let mut end = MAX_MESSAGE_BYTES;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(i: usize, bytes: usize) -> Buffered {
        Buffered {
            id: format!("l{i}"),
            source: "app".into(),
            at: i as u64,
            level: "info".into(),
            resource_id: String::new(),
            resource_name: String::new(),
            deployment: None,
            replica: None,
            channel: "stdout".into(),
            message: "x".repeat(bytes),
        }
    }

    #[test]
    fn the_buffer_keeps_the_newest_within_its_bounds() {
        let mut s = DeliveryState::default();
        assert_eq!(s.push((0..MAX_BUFFERED_LINES + 5).map(|i| line(i, 1))), 5);
        assert_eq!(s.buffer.len(), MAX_BUFFERED_LINES);
        assert_eq!(s.buffer[0].id, "l5");
        let mut s = DeliveryState::default();
        let big = MAX_BUFFERED_BYTES / 4 + 1;
        assert_eq!(s.push((0..4).map(|i| line(i, big))), 1);
        assert_eq!(s.dropped, 1);
        assert_eq!(s.buffer[0].id, "l1");
        // Escaped control characters grow sixfold in JSON.
        let mut s = DeliveryState::default();
        let mut escaped = line(0, 0);
        escaped.message = "\u{1}".repeat(4000);
        s.push((0..MAX_BUFFERED_LINES).map(|_| escaped.clone()));
        s.fit();
        assert!(serde_json::to_vec(&s).unwrap().len() <= MAX_STATE_BYTES);
        assert_eq!(s.dropped as usize + s.buffer.len(), MAX_BUFFERED_LINES);
    }

    #[test]
    fn backoff_doubles_up_to_five_minutes() {
        assert_eq!(backoff_ms(1), 1000);
        assert_eq!(backoff_ms(2), 2000);
        assert_eq!(backoff_ms(5), 16_000);
        assert_eq!(backoff_ms(30), 300_000);
        assert_eq!(
            cap_message("é".repeat(MAX_MESSAGE_BYTES)).len(),
            MAX_MESSAGE_BYTES
        );
    }
}
