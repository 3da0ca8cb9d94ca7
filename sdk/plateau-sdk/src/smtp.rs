//! Outbound SMTP submission (the `smtp` capability, WIT 0.2.0). The host
//! builds the message from these parts (addresses checked, headers encoded,
//! so nothing can inject a header), holds the connection and its TLS, and
//! reports the server's reply. The plugin never opens a socket.

use crate::sys;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// TLS from the first byte (usually port 465).
    Implicit,
    /// STARTTLS, required (usually port 587).
    StartTls,
    /// No TLS.
    None,
}

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

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attachment {
    pub filename: String,
    pub content_type: String,
    pub content: Vec<u8>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Message {
    /// `a@example.com` or `Name <a@example.com>`; also the envelope sender.
    pub sender: String,
    pub reply_to: Option<String>,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    /// Envelope recipients that do not appear in the headers.
    pub bcc: Vec<String>,
    pub subject: String,
    pub text: Option<String>,
    pub html: Option<String>,
    /// Extra headers; the host refuses the ones it sets itself.
    pub headers: Vec<(String, String)>,
    pub attachments: Vec<Attachment>,
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

/// Header names the host sets itself or that record trust and trace;
/// [`Message::headers`] may not name them, nor any name starting with
/// `content-`, `resent-` or `arc-`. The host refuses them; check with
/// [`is_reserved_header`] to answer 400 before anything is queued. The
/// host's own list (`plateau-plugin-runtime`, `egress/mail.rs`) is the one
/// enforced; guests cannot link the host crate, so this copy follows it.
const RESERVED_HEADERS: &[&str] = &[
    "from",
    "sender",
    "reply-to",
    "to",
    "cc",
    "bcc",
    "subject",
    "date",
    "message-id",
    "mime-version",
    "return-path",
    "received",
    "received-spf",
    "delivered-to",
    "authentication-results",
    "dkim-signature",
];
const RESERVED_PREFIXES: &[&str] = &["content-", "resent-", "arc-"];

/// Whether the host refuses `name` (any case) as a custom header.
pub fn is_reserved_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    RESERVED_HEADERS.contains(&lower.as_str())
        || RESERVED_PREFIXES.iter().any(|p| lower.starts_with(p))
}

/// Submits `message` to `server`.
pub fn send(server: &SmtpServer, message: &Message) -> Result<Sent, SmtpError> {
    sys::smtp_send(server, message)
}
