//! Raw bytes to a TCP or TLS server through the host's egress guard (the
//! `tcp` capability, WIT 0.5.1): for line protocols without an answer,
//! such as syslog over TCP (RFC 6587) and TLS (RFC 5425).

use crate::sys;

/// Where the bytes go.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Destination {
    pub host: String,
    pub port: u16,
    /// TLS with the host's roots, the server name checked against `host`.
    pub tls: bool,
    /// The whole exchange; capped by the host.
    pub timeout_ms: u32,
}

/// Why a send failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TcpError {
    HostNotAllowed(String),
    AddressRefused(String),
    ConnectionFailed(String),
    TlsFailed(String),
    Timeout,
    Invalid(String),
}

impl std::fmt::Display for TcpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TcpError::HostNotAllowed(h) => write!(f, "host `{h}` is not allowed"),
            TcpError::AddressRefused(m) => write!(f, "address refused: {m}"),
            TcpError::ConnectionFailed(m) => write!(f, "connection failed: {m}"),
            TcpError::TlsFailed(m) => write!(f, "tls failed: {m}"),
            TcpError::Timeout => f.write_str("timed out"),
            TcpError::Invalid(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for TcpError {}

/// Connects, writes `payload`, closes cleanly; answers the bytes written.
pub fn send(destination: &Destination, payload: &[u8]) -> Result<u64, TcpError> {
    sys::tcp_send(destination, payload)
}
