//! Raw bytes to a TCP or TLS server for plugins (the `tcp` capability):
//! syslog over TCP and TLS, and other line protocols without an answer.
//! The host opens the connection as for SMTP: the host must be granted,
//! its name is resolved once, every address is checked, and the
//! connection goes to a checked address. TLS is the guard's (rustls with
//! ring, its roots, no ALPN).

use std::time::{Duration, Instant};

use rustls::pki_types::ServerName;
use tokio::io::{AsyncWrite, AsyncWriteExt};

use super::client::{EgressGuard, HttpError, connect};
use super::host_granted;

/// The largest payload of one send.
pub const MAX_STREAM_PAYLOAD: usize = 4 << 20;

/// Where the bytes go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StreamDestination {
    pub host: String,
    pub port: u16,
    pub tls: bool,
    /// The whole exchange; capped by the plugin's outbound timeout.
    pub timeout: Duration,
}

/// Why a send failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    #[error("host `{0}` is not granted to the plugin")]
    HostNotAllowed(String),
    #[error("address refused: {0}")]
    AddressRefused(String),
    #[error("connection failed: {0}")]
    ConnectionFailed(String),
    #[error("tls failed: {0}")]
    TlsFailed(String),
    #[error("the send timed out")]
    Timeout,
    #[error("{0}")]
    Invalid(String),
}

fn from_http(e: HttpError) -> StreamError {
    match e {
        HttpError::HostNotAllowed(m) => StreamError::HostNotAllowed(m),
        HttpError::AddressRefused(m) => StreamError::AddressRefused(m),
        HttpError::Timeout => StreamError::Timeout,
        HttpError::ConnectionFailed(m) => StreamError::ConnectionFailed(m),
        HttpError::InvalidRequest(m) => StreamError::Invalid(m),
        HttpError::ResponseTooLarge => StreamError::Invalid("the payload is too large".into()),
    }
}

/// Writes everything, then closes: a TLS close-notify, then FIN.
async fn write_all_and_close<S: AsyncWrite + Unpin>(
    stream: &mut S,
    payload: &[u8],
) -> std::io::Result<()> {
    stream.write_all(payload).await?;
    stream.flush().await?;
    stream.shutdown().await
}

impl EgressGuard {
    /// Writes `payload` to `destination` if its host is among `granted` and
    /// resolves to an allowed address; answers the bytes written. The
    /// exchange takes at most the destination's timeout, capped by `limit`.
    pub async fn send_stream(
        &self,
        granted: &[String],
        destination: StreamDestination,
        payload: &[u8],
        limit: Duration,
    ) -> Result<u64, StreamError> {
        let host = destination
            .host
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if host.is_empty() || destination.port == 0 {
            return Err(StreamError::Invalid(
                "the destination needs a host and a port other than 0".into(),
            ));
        }
        if payload.len() > MAX_STREAM_PAYLOAD {
            return Err(StreamError::Invalid(format!(
                "the payload is {} bytes, over the {MAX_STREAM_PAYLOAD} of one send",
                payload.len()
            )));
        }
        if !host_granted(&host, destination.port, granted) {
            return Err(StreamError::HostNotAllowed(host));
        }
        let timeout = match destination.timeout {
            t if t.is_zero() => limit,
            t => t.min(limit),
        };
        let deadline = Instant::now() + timeout;
        let addrs = self
            .resolve(&host, destination.port, timeout)
            .await
            .map_err(from_http)?;
        let mut tcp = connect(&addrs, deadline).await.map_err(from_http)?;
        let exchange = async {
            if destination.tls {
                let name = ServerName::try_from(host.clone()).map_err(|_| {
                    StreamError::Invalid(format!("the host `{host}` is not a TLS server name"))
                })?;
                let mut tls = self
                    .smtp_tls()
                    .connect(name, tcp)
                    .await
                    .map_err(|e| StreamError::TlsFailed(e.to_string()))?;
                write_all_and_close(&mut tls, payload).await
            } else {
                write_all_and_close(&mut tcp, payload).await
            }
            .map_err(|e| StreamError::ConnectionFailed(e.to_string()))
        };
        tokio::time::timeout_at(deadline.into(), exchange)
            .await
            .map_err(|_| StreamError::Timeout)??;
        Ok(payload.len() as u64)
    }
}
