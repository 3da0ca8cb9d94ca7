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
    Reply, Sent, SmtpError, SmtpServer, TlsMode, is_header_name, is_reserved_header,
};

/// Submits `message` to `server`.
pub fn send(server: &SmtpServer, message: &Message) -> Result<Sent, SmtpError> {
    sys::smtp_send(server, message)
}
