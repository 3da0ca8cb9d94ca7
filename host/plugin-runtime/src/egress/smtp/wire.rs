//! The SMTP wire under lettre: the plain STARTTLS prelude, and the
//! encrypted stream lettre speaks over.

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use lettre::transport::smtp::client::AsyncTokioStream;
use lettre::transport::smtp::extension::ClientId;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

use super::{SmtpError, SmtpReply};

/// What lettre reads first: the STARTTLS prelude already consumed the real
/// greeting, so the encrypted stream replays one.
pub(super) const REPLAYED_GREETING: &[u8] = b"220 ready after STARTTLS\r\n";
/// The longest reply the STARTTLS prelude reads.
const MAX_REPLY_BYTES: usize = 64 * 1024;

/// The plain part of a STARTTLS session: greeting, EHLO, STARTTLS.
pub(super) async fn starttls_prelude(
    tcp: &mut TcpStream,
    hello: &ClientId,
) -> Result<(), SmtpError> {
    let mut buffer = Vec::new();
    let greeting = read_reply(tcp, &mut buffer).await?;
    if greeting.code != 220 {
        return Err(SmtpError::Rejected(greeting.into()));
    }
    write(tcp, format!("EHLO {hello}\r\n").as_bytes()).await?;
    let ehlo = read_reply(tcp, &mut buffer).await?;
    if ehlo.code != 250 {
        return Err(SmtpError::Rejected(ehlo.into()));
    }
    // The first line greets; each further line names one extension.
    let offered = ehlo.lines.iter().skip(1).any(|line| {
        line.split_whitespace()
            .next()
            .is_some_and(|keyword| keyword.eq_ignore_ascii_case("STARTTLS"))
    });
    if !offered {
        return Err(SmtpError::TlsFailed(
            "the server does not offer STARTTLS, which the tls mode requires".into(),
        ));
    }
    write(tcp, b"STARTTLS\r\n").await?;
    let ready = read_reply(tcp, &mut buffer).await?;
    if ready.code != 220 {
        return Err(SmtpError::TlsFailed(format!(
            "the server refused STARTTLS: {}",
            SmtpReply::from(ready)
        )));
    }
    // Anything already sent would be taken as if it came encrypted.
    if !buffer.is_empty() {
        return Err(SmtpError::TlsFailed(
            "the server sent data after its STARTTLS reply".into(),
        ));
    }
    Ok(())
}

async fn write(tcp: &mut TcpStream, bytes: &[u8]) -> Result<(), SmtpError> {
    tcp.write_all(bytes).await.map_err(io_failed)
}

/// A reply as read, line by line.
struct Lines {
    code: u16,
    lines: Vec<String>,
}

impl From<Lines> for SmtpReply {
    fn from(reply: Lines) -> Self {
        SmtpReply {
            code: reply.code,
            message: reply.lines.join(" "),
        }
    }
}

/// Reads one reply, single or multi-line; `buffer` keeps what came after it.
async fn read_reply(tcp: &mut TcpStream, buffer: &mut Vec<u8>) -> Result<Lines, SmtpError> {
    let malformed = || SmtpError::ConnectionFailed("the server sent a malformed reply".into());
    let mut reply = Lines {
        code: 0,
        lines: Vec::new(),
    };
    let mut taken = 0;
    loop {
        while let Some(end) = buffer.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = buffer.drain(..=end).collect();
            taken += line.len();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\r', '\n']);
            let code: u16 = line
                .get(..3)
                .filter(|digits| digits.bytes().all(|b| b.is_ascii_digit()))
                .and_then(|digits| digits.parse().ok())
                .ok_or_else(malformed)?;
            if reply.code != 0 && code != reply.code {
                return Err(malformed());
            }
            reply.code = code;
            reply.lines.push(line.get(4..).unwrap_or("").to_string());
            if line.as_bytes().get(3) != Some(&b'-') {
                return Ok(reply);
            }
        }
        if taken + buffer.len() > MAX_REPLY_BYTES {
            return Err(malformed());
        }
        let mut chunk = [0u8; 1024];
        let read = tcp.read(&mut chunk).await.map_err(io_failed)?;
        if read == 0 {
            return Err(SmtpError::ConnectionFailed(
                "the server closed the connection".into(),
            ));
        }
        buffer.extend_from_slice(&chunk[..read]);
    }
}

pub(super) fn io_failed(e: io::Error) -> SmtpError {
    SmtpError::ConnectionFailed(e.to_string())
}

/// The encrypted stream lettre speaks over; after STARTTLS it first replays
/// a greeting, since lettre starts a connection by reading one.
#[derive(Debug)]
pub(super) struct SmtpTls {
    pub replay: &'static [u8],
    pub inner: TlsStream<TcpStream>,
}

impl AsyncTokioStream for SmtpTls {
    fn peer_addr(&self) -> io::Result<SocketAddr> {
        self.inner.get_ref().0.peer_addr()
    }
}

impl AsyncRead for SmtpTls {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if !self.replay.is_empty() {
            let n = self.replay.len().min(buf.remaining());
            buf.put_slice(&self.replay[..n]);
            self.replay = &self.replay[n..];
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for SmtpTls {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
