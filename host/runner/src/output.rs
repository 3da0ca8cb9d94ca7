//! A guest's stdout or stderr, for both Wasm runtimes: bytes up to a cap
//! go to a [`Destination`] (kept in memory for a command, cut into lines
//! for an app's [`crate::LogSink`]), the rest is dropped and the stream
//! marked truncated. Writes never fail, so a chatty guest cannot trap on
//! print.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

/// Where the kept bytes go.
pub trait Destination: Send + 'static {
    fn write(&mut self, kept: &[u8]);
}

/// A command's output, kept whole in memory.
impl Destination for Vec<u8> {
    fn write(&mut self, kept: &[u8]) {
        self.extend_from_slice(kept);
    }
}

/// One guest stream; clones write to the same place.
pub struct GuestOutput<D> {
    inner: Arc<Mutex<Inner<D>>>,
}

impl<D> Clone for GuestOutput<D> {
    fn clone(&self) -> Self {
        GuestOutput {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<D> {
    dest: D,
    cap: usize,
    written: usize,
    truncated: bool,
}

impl<D: Destination> GuestOutput<D> {
    /// A stream keeping at most `cap` bytes.
    pub fn new(dest: D, cap: usize) -> Self {
        GuestOutput {
            inner: Arc::new(Mutex::new(Inner {
                dest,
                cap,
                written: 0,
                truncated: false,
            })),
        }
    }

    /// Runs `f` on the destination and whether bytes were dropped.
    pub fn with<R>(&self, f: impl FnOnce(&mut D, bool) -> R) -> R {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let truncated = inner.truncated;
        f(&mut inner.dest, truncated)
    }
}

impl<D> IsTerminal for GuestOutput<D> {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl<D: Destination> StdoutStream for GuestOutput<D> {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl<D: Destination> AsyncWrite for GuestOutput<D> {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let inner = &mut *inner;
        let room = inner.cap.saturating_sub(inner.written);
        if buf.len() > room {
            inner.truncated = true;
        }
        let kept = &buf[..buf.len().min(room)];
        inner.written += kept.len();
        inner.dest.write(kept);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
