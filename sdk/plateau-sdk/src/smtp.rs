//! Outbound SMTP submission (the `smtp` capability, WIT 0.2.0). The host
//! builds the message from these parts (addresses checked, headers encoded,
//! so nothing can inject a header), holds the connection and its TLS, and
//! reports the server's reply. The plugin never opens a socket.

use crate::sys;

/// The message, its limits and the reserved headers are the host's own
/// (`plateau-contract`): check [`is_reserved_header`] and the limits to
/// answer 400 before anything is queued.
pub use plateau_contract::mail::{
    Attachment, MAX_CUSTOM_HEADERS, MAX_HEADER_VALUE, MAX_MESSAGE_BYTES, MAX_RECIPIENTS, Message,
    TlsMode, is_header_name, is_reserved_header,
};

#[derive(Clone, PartialEq, Eq)]
pub struct SmtpServer {
    pub host: String,
    pub port: u16,
    pub tls: TlsMode,
    pub username: Option<String>,
    pub password: Option<String>,
    /// Capped by the host.
    pub timeout_ms: Option<u32>,
}

impl std::fmt::Debug for SmtpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SmtpServer")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .finish()
    }
}

/// An SMTP reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub code: u16,
    pub message: String,
}

impl Reply {
    /// A 4xx reply: try again later.
    pub fn is_temporary(&self) -> bool {
        (400..500).contains(&self.code)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    pub message_id: String,
    pub reply: Reply,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SmtpError {
    #[error("the message is not valid: {0}")]
    Invalid(String),
    #[error("host `{0}` is not granted to the plugin")]
    HostNotAllowed(String),
    #[error("address refused: {0}")]
    AddressRefused(String),
    #[error("connection failed: {0}")]
    ConnectionFailed(String),
    #[error("TLS failed: {0}")]
    TlsFailed(String),
    #[error("the SMTP exchange timed out")]
    Timeout,
    #[error("the server refused: {} {}", .0.code, .0.message)]
    Rejected(Reply),
}

impl SmtpError {
    /// Whether trying again later may succeed: network trouble, a timeout
    /// or a 4xx reply. A 5xx reply, an invalid message or a refused
    /// address will fail again.
    pub fn is_temporary(&self) -> bool {
        match self {
            SmtpError::ConnectionFailed(_) | SmtpError::Timeout => true,
            SmtpError::Rejected(reply) => reply.is_temporary(),
            _ => false,
        }
    }
}

/// Submits `message` to `server`.
pub fn send(server: &SmtpServer, message: &Message) -> Result<Sent, SmtpError> {
    sys::smtp_send(server, message)
}
