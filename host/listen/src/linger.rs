//! A lingering close: when the server closes a connection (after a 413
//! sent before the body was read, or any `Connection: close`), it first
//! sends its FIN, then reads and throws away what the client still sends,
//! for at most [`LINGER`], and only then lets the socket go. Closing at
//! once with unread bytes makes the kernel answer with a reset, which can
//! reach a client still writing before the answer it should read. The
//! bytes are read into one small buffer: a client cannot make the server
//! keep them.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

/// The longest a closed connection is drained.
pub const LINGER: Duration = Duration::from_secs(2);

pub struct Linger<T> {
    io: T,
    state: State,
}

enum State {
    Open,
    Draining {
        until: Pin<Box<Sleep>>,
        scratch: Box<[u8; 8192]>,
    },
    Closed,
}

impl<T> Linger<T> {
    pub fn new(io: T) -> Linger<T> {
        Linger {
            io,
            state: State::Open,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Linger<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncWrite for Linger<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            match &mut this.state {
                State::Open => {
                    ready!(Pin::new(&mut this.io).poll_shutdown(cx))?;
                    this.state = State::Draining {
                        until: Box::pin(tokio::time::sleep(LINGER)),
                        scratch: Box::new([0; 8192]),
                    };
                }
                State::Draining { until, scratch } => {
                    if until.as_mut().poll(cx).is_ready() {
                        this.state = State::Closed;
                        continue;
                    }
                    let mut buf = ReadBuf::new(&mut scratch[..]);
                    match Pin::new(&mut this.io).poll_read(cx, &mut buf) {
                        Poll::Ready(Ok(())) if !buf.filled().is_empty() => {}
                        // The client's end of file, or an error: done.
                        Poll::Ready(_) => this.state = State::Closed,
                        Poll::Pending => return Poll::Pending,
                    }
                }
                State::Closed => return Poll::Ready(Ok(())),
            }
        }
    }
}
