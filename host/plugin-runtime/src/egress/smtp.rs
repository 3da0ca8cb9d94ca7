//! Outbound SMTP submission for plugins. The host opens the connection: the
//! server's host must be granted, its name is resolved once, every address
//! is checked, and the connection goes to a checked address. TLS is the
//! guard's (rustls with ring, its roots, no ALPN). lettre then speaks SMTP
//! over that stream, so it never resolves or connects anything itself.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use lettre::transport::smtp::authentication::{Credentials, Mechanism};
use lettre::transport::smtp::client::{AsyncSmtpConnection, AsyncTokioStream};
use lettre::transport::smtp::extension::ClientId;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use self::wire::{REPLAYED_GREETING, SmtpTls, starttls_prelude};
use super::client::{EgressGuard, HttpError, connect};
use super::host_granted;
use super::mail::{self, Built, MailMessage};

mod wire;

/// The server, the reply, the outcome and the errors are the guests' too.
pub use plateau_contract::mail::{Reply as SmtpReply, Sent, SmtpError, SmtpServer, TlsMode};

/// How long the connection waits for the reply to QUIT, after the send.
const QUIT_WAIT: Duration = Duration::from_secs(5);

impl EgressGuard {
    /// Sends `message` through `server` if its host is among `granted` and
    /// resolves to an allowed address. A 4xx or 5xx reply at any step is
    /// [`SmtpError::Rejected`] with the server's code and text.
    /// The exchange takes at most `timeout`, or the server's own limit if
    /// shorter.
    pub async fn send_mail(
        &self,
        granted: &[String],
        server: SmtpServer,
        message: MailMessage,
        timeout: Duration,
    ) -> Result<Sent, SmtpError> {
        let timeout = server.timeout_within(timeout);
        let start = Instant::now();
        let built = mail::build(&message)?;
        let host = server
            .host
            .trim()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        if host.is_empty() || server.port == 0 {
            return Err(SmtpError::Invalid(
                "the server needs a host and a port other than 0".into(),
            ));
        }
        if server.username.is_some() != server.password.is_some() {
            return Err(SmtpError::Invalid(
                "give the server's user name and password together, or neither".into(),
            ));
        }
        if !host_granted(&host, server.port, granted) {
            return Err(SmtpError::HostNotAllowed(host));
        }
        let addrs = self
            .resolve(&host, server.port, timeout)
            .await
            .map_err(from_http)?;
        let deadline = start + timeout;
        let tcp = connect(&addrs, deadline).await.map_err(from_http)?;
        let _ = tcp.set_nodelay(true);
        let (reply, mut conn) =
            tokio::time::timeout_at(deadline.into(), self.session(tcp, &host, &server, &built))
                .await
                .map_err(|_| SmtpError::Timeout)??;
        // The message is accepted: QUIT is a courtesy that can neither delay
        // nor fail the send.
        tokio::spawn(async move {
            let _ = tokio::time::timeout(QUIT_WAIT, conn.quit()).await;
        });
        Ok(Sent {
            message_id: built.message_id,
            reply,
        })
    }

    /// Everything after the TCP connection up to the reply to the data:
    /// TLS, greeting, EHLO, AUTH, MAIL, RCPT, DATA.
    async fn session(
        &self,
        mut tcp: TcpStream,
        host: &str,
        server: &SmtpServer,
        built: &Built,
    ) -> Result<(SmtpReply, AsyncSmtpConnection), SmtpError> {
        // The EHLO name is the address literal of this end of the connection.
        let hello = match tcp.local_addr() {
            Ok(SocketAddr::V4(addr)) => ClientId::Ipv4(*addr.ip()),
            Ok(SocketAddr::V6(addr)) => ClientId::Ipv6(*addr.ip()),
            Err(_) => ClientId::Domain("localhost".into()),
        };
        let stream: Box<dyn AsyncTokioStream> = match server.tls {
            TlsMode::None => Box::new(tcp),
            TlsMode::Implicit => Box::new(SmtpTls {
                replay: b"",
                inner: self.handshake(host, tcp).await?,
            }),
            TlsMode::StartTls => {
                starttls_prelude(&mut tcp, &hello).await?;
                Box::new(SmtpTls {
                    replay: REPLAYED_GREETING,
                    inner: self.handshake(host, tcp).await?,
                })
            }
        };
        let mut conn = AsyncSmtpConnection::connect_with_transport(stream, &hello)
            .await
            .map_err(from_lettre)?;
        if let (Some(user), Some(password)) = (&server.username, &server.password) {
            let mechanisms = [Mechanism::Plain, Mechanism::Login];
            if conn.server_info().get_auth_mechanism(&mechanisms).is_none() {
                conn.abort().await;
                return Err(SmtpError::ConnectionFailed(
                    "the server offers neither AUTH PLAIN nor AUTH LOGIN".into(),
                ));
            }
            let credentials = Credentials::new(user.clone(), password.clone());
            if let Err(e) = conn.auth(&mechanisms, &credentials).await {
                conn.abort().await;
                return Err(from_lettre(e));
            }
        }
        let response = conn
            .send(&built.envelope, &built.bytes)
            .await
            .map_err(from_lettre)?;
        let reply = SmtpReply {
            code: response.code().into(),
            message: response.message().collect::<Vec<_>>().join(" "),
        };
        Ok((reply, conn))
    }

    async fn handshake(
        &self,
        host: &str,
        tcp: TcpStream,
    ) -> Result<TlsStream<TcpStream>, SmtpError> {
        let name = ServerName::try_from(host.to_string()).map_err(|_| {
            SmtpError::Invalid(format!("the server host `{host}` is not a TLS server name"))
        })?;
        self.smtp_tls()
            .connect(name, tcp)
            .await
            .map_err(|e| SmtpError::TlsFailed(e.to_string()))
    }
}

fn from_http(e: HttpError) -> SmtpError {
    match e {
        HttpError::Timeout => SmtpError::Timeout,
        HttpError::AddressRefused(reason) => SmtpError::AddressRefused(reason),
        HttpError::HostNotAllowed(host) => SmtpError::HostNotAllowed(host),
        HttpError::ConnectionFailed(reason) => SmtpError::ConnectionFailed(reason),
        other => SmtpError::ConnectionFailed(other.to_string()),
    }
}

/// A negative reply becomes [`SmtpError::Rejected`] with its code and text.
fn from_lettre(e: lettre::transport::smtp::Error) -> SmtpError {
    if let Some(code) = e.status() {
        let message = std::error::Error::source(&e)
            .map(ToString::to_string)
            .unwrap_or_default();
        return SmtpError::Rejected(SmtpReply {
            code: code.into(),
            message,
        });
    }
    if e.is_timeout() {
        return SmtpError::Timeout;
    }
    SmtpError::ConnectionFailed(format!("smtp: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_never_debug_printed() {
        let server = SmtpServer {
            host: "smtp.example.com".into(),
            port: 587,
            tls: TlsMode::StartTls,
            username: Some("relay".into()),
            password: Some("hunter2-secret".into()),
            timeout_ms: Some(10_000),
        };
        let printed = format!("{server:?}");
        assert!(!printed.contains("hunter2"), "{printed}");
        assert!(printed.contains("<redacted>") && printed.contains("relay"));
    }

    #[test]
    fn negative_replies_keep_their_code_and_text() {
        let reply = SmtpReply {
            code: 451,
            message: "try later".into(),
        };
        assert_eq!(
            SmtpError::Rejected(reply).to_string(),
            "the server refused: 451 try later"
        );
    }
}
