//! Reading the platform's own logs of an organisation after a cursor (the
//! `logs` capability, WIT 0.5.1): its apps' runtime lines and its
//! timeline's events, oldest first. A reader keeps the cursor each read
//! answers and passes it to the next, so it sees every line once, in
//! order, without storing any itself.

use crate::sys;

/// Whose logs: the caller's organisation, or (in a job, a tick or an
/// event, which have no caller) an organisation named by id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Owner {
    Caller,
    Organization(String),
}

/// Where a line comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Source {
    /// What an app's replicas printed.
    App,
    /// An event of the organisation's timeline, as JSON.
    Event,
}

/// One line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Line {
    pub source: Option<Source>,
    /// The line's own id, increasing within its source.
    pub id: String,
    /// The app's id, or the event's resource id (empty if none).
    pub resource_id: String,
    /// The app's name, or the event's type.
    pub resource_name: String,
    pub deployment: Option<String>,
    pub replica: Option<String>,
    /// `stdout` or `stderr` for app lines, `event` for events.
    pub channel: String,
    /// The line as printed, or the event as JSON.
    pub message: String,
    /// Milliseconds since the Unix epoch.
    pub at: u64,
}

/// One read.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Page {
    /// Oldest first.
    pub lines: Vec<Line>,
    /// Where the next read starts; pass it back unchanged.
    pub cursor: String,
    /// Whether more lines were there than the limit allowed.
    pub more: bool,
}

/// Why a read failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogsError {
    AccessDenied(String),
    Invalid(String),
    Unavailable(String),
}

impl std::fmt::Display for LogsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LogsError::AccessDenied(m) => write!(f, "access denied: {m}"),
            LogsError::Invalid(m) => write!(f, "invalid: {m}"),
            LogsError::Unavailable(m) => write!(f, "unavailable: {m}"),
        }
    }
}

impl std::error::Error for LogsError {}

/// The lines of `sources` after `cursor` (empty: start at the end, now),
/// at most `limit` (the host caps it at 1,000).
pub fn read(
    owner: &Owner,
    sources: &[Source],
    cursor: &str,
    limit: u32,
) -> Result<Page, LogsError> {
    sys::platform_logs_read(owner, sources, cursor, limit)
}
