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
    Reply, Sent, SmtpError, TlsMode, is_header_name, is_reserved_header,
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

/// Submits `message` to `server`.
pub fn send(server: &SmtpServer, message: &Message) -> Result<Sent, SmtpError> {
    sys::smtp_send(server, message)
}
