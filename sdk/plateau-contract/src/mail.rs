//! Outgoing email (the `smtp` capability, WIT 0.2.0): the message a plugin
//! hands to the host, and the limits and reserved headers the host
//! enforces, so a plugin checks them before anything is queued and answers
//! 400 instead of a late failure; and what the host answers.

use std::fmt;

/// The largest message the host sends, headers and encoded parts included
/// (attachments grow by a third in base64): 25 MiB, what most providers
/// accept.
pub const MAX_MESSAGE_BYTES: usize = 25 * 1024 * 1024;
/// The most envelope recipients (to, cc and bcc together) of one message;
/// RFC 5321 asks servers to accept at least 100.
pub const MAX_RECIPIENTS: usize = 100;
/// The most custom headers of one message.
pub const MAX_CUSTOM_HEADERS: usize = 50;
/// The longest subject or custom header value, in bytes (RFC 5322's line
/// limit; longer values are folded by the host anyway).
pub const MAX_HEADER_VALUE: usize = 998;
/// The longest custom header name, in bytes.
pub const MAX_HEADER_NAME: usize = 76;

/// Header names the host sets itself, or that record the message's trust
/// and trace; a plugin may not set them. Names starting with one of
/// [`RESERVED_HEADER_PREFIXES`] are refused too.
pub const RESERVED_HEADERS: &[&str] = &[
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
pub const RESERVED_HEADER_PREFIXES: &[&str] = &["content-", "resent-", "arc-"];

/// A plain `local@domain` address, as alert recipients are given: no
/// display name, no spaces, no control or header characters, a dotted
/// domain of valid labels.
pub fn is_email(email: &str) -> bool {
    let Some((local, domain)) = email.rsplit_once('@') else {
        return false;
    };
    let atom = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~.".contains(c);
    email.len() <= 254
        && !local.is_empty()
        && local.len() <= 64
        && local.chars().all(atom)
        && !local.starts_with('.')
        && !local.ends_with('.')
        && !local.contains("..")
        && domain.contains('.')
        && domain.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
}

/// Whether the host refuses `name` (any case) as a custom header because it
/// sets it itself.
pub fn is_reserved_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    RESERVED_HEADERS.contains(&lower.as_str())
        || RESERVED_HEADER_PREFIXES
            .iter()
            .any(|p| lower.starts_with(p))
}

/// Whether `name` has the shape of a custom header name: 1 to
/// [`MAX_HEADER_NAME`] letters, digits or `-`.
pub fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_HEADER_NAME
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// How the connection to the submission server is encrypted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsMode {
    /// TLS from the first byte (usually port 465).
    Implicit,
    /// Plain, then upgraded with STARTTLS (usually port 587); a server that
    /// does not offer it is refused.
    StartTls,
    /// No TLS, credentials included: the caller's explicit choice, for a
    /// server the operator trusts the path to.
    None,
}

/// The submission server and how to reach it. The password is never
/// printed by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct SmtpServer {
    pub host: String,
    pub port: u16,
    pub tls: TlsMode,
    pub username: Option<String>,
    pub password: Option<String>,
    /// For the whole exchange, from resolving the name to the last reply;
    /// capped by the host.
    pub timeout_ms: Option<u32>,
}

impl SmtpServer {
    /// The exchange's time limit: the server's own, at most `cap`.
    pub fn timeout_within(&self, cap: std::time::Duration) -> std::time::Duration {
        self.timeout_ms.map_or(cap, |ms| {
            std::time::Duration::from_millis(ms.into()).min(cap)
        })
    }
}

impl fmt::Debug for SmtpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SmtpServer")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("tls", &self.tls)
            .field("username", &self.username)
            .field("password", &self.password.as_ref().map(|_| "<redacted>"))
            .field("timeout_ms", &self.timeout_ms)
            .finish()
    }
}

/// A file attached to a message.
#[derive(Clone, PartialEq, Eq)]
pub struct Attachment {
    pub filename: String,
    /// A MIME type such as `application/pdf` or `text/csv; charset=utf-8`.
    pub content_type: String,
    pub content: Vec<u8>,
}

impl std::fmt::Debug for Attachment {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attachment")
            .field("filename", &self.filename)
            .field("content_type", &self.content_type)
            .field("bytes", &self.content.len())
            .finish()
    }
}

/// An email to send. Addresses are `user@example.com` or
/// `Name <user@example.com>`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Message {
    /// The `From` header and the envelope sender.
    pub sender: String,
    pub reply_to: Option<String>,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    /// Envelope recipients only: never written in the headers.
    pub bcc: Vec<String>,
    pub subject: String,
    pub text: Option<String>,
    pub html: Option<String>,
    /// Extra headers: [`is_header_name`], and not [`is_reserved_header`].
    pub headers: Vec<(String, String)>,
    pub attachments: Vec<Attachment>,
}

/// An SMTP reply: its code and its text (lines joined by spaces).
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

impl fmt::Display for Reply {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code, self.message)
    }
}

/// A message the server accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sent {
    /// The `Message-ID` header the host gave the message.
    pub message_id: String,
    /// The server's reply to the end of the data.
    pub reply: Reply,
}

/// Why a message was not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SmtpError {
    /// The message, an address or the server settings are invalid; nothing
    /// was sent.
    Invalid(String),
    HostNotAllowed(String),
    AddressRefused(String),
    ConnectionFailed(String),
    /// The handshake failed, or STARTTLS was required and not offered.
    TlsFailed(String),
    Timeout,
    /// A 4xx (temporary) or 5xx (permanent) reply, authentication included.
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

impl fmt::Display for SmtpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SmtpError::Invalid(why) => write!(f, "the message is not valid: {why}"),
            SmtpError::HostNotAllowed(host) => {
                write!(f, "host `{host}` is not granted to the plugin")
            }
            SmtpError::AddressRefused(why) => write!(f, "address refused: {why}"),
            SmtpError::ConnectionFailed(why) => write!(f, "connection failed: {why}"),
            SmtpError::TlsFailed(why) => write!(f, "TLS failed: {why}"),
            SmtpError::Timeout => f.write_str("the SMTP exchange timed out"),
            SmtpError::Rejected(reply) => write!(f, "the server refused: {reply}"),
        }
    }
}

impl std::error::Error for SmtpError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reserved_and_shaped_headers() {
        for name in ["From", "subject", "Content-Type", "RESENT-TO", "arc-seal"] {
            assert!(is_reserved_header(name), "{name}");
        }
        for name in ["X-Campaign", "List-Unsubscribe", "contents"] {
            assert!(!is_reserved_header(name), "{name}");
        }
        assert!(is_header_name("X-Tag-1"));
        assert!(!is_header_name(""));
        assert!(!is_header_name("X Tag"));
        assert!(!is_header_name("X:Tag"));
        assert!(!is_header_name(&"x".repeat(MAX_HEADER_NAME + 1)));
    }

    #[test]
    fn plain_addresses_only() {
        for good in ["ops+alerts@example.co.uk", "a.b@x-y.io"] {
            assert!(is_email(good), "{good}");
        }
        for bad in [
            "ops",
            "@x.io",
            "a@b",
            "a b@x.io",
            "A <a@x.io>",
            "a@x.io\r\nBcc: b@y.io",
            ".a@x.io",
            "a..b@x.io",
            "a@-x.io",
            "a@x..io",
        ] {
            assert!(!is_email(bad), "{bad}");
        }
    }
}
