//! The service behind the `logs` capability: the platform's own logs of an
//! organisation (its apps' runtime lines, its timeline), read after a
//! cursor. The host implements [`PlatformLogs`] on its store; this crate
//! only checks who may ask and caps the page.

use async_trait::async_trait;

/// The most lines one read answers.
pub const MAX_LINES: u32 = 1000;

/// Where a line comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LogSource {
    App,
    Event,
}

/// One line as a reader sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlatformLine {
    pub source: LogSource,
    pub id: String,
    pub resource_id: String,
    pub resource_name: String,
    pub deployment: Option<String>,
    pub replica: Option<String>,
    pub channel: String,
    pub message: String,
    pub at: u64,
}

/// One read: lines oldest first, the cursor to pass next, and whether the
/// limit cut it short.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogPage {
    pub lines: Vec<PlatformLine>,
    pub cursor: String,
    pub more: bool,
}

/// Why a read failed; each is a WIT error value for the guest.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LogsError {
    #[error("{0}")]
    AccessDenied(String),
    #[error("{0}")]
    Invalid(String),
    #[error("{0}")]
    Unavailable(String),
}

/// Reads the platform's logs; the host implements it.
#[async_trait]
pub trait PlatformLogs: Send + Sync {
    /// The lines of `sources` of organisation `org_id` after `cursor`
    /// (empty: the end, now), oldest first, at most `limit` (at most
    /// [`MAX_LINES`]).
    async fn read(
        &self,
        org_id: &str,
        sources: &[LogSource],
        cursor: &str,
        limit: u32,
    ) -> Result<LogPage, LogsError>;
}
