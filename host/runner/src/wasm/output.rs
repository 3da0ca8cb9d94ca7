//! A guest's stdout or stderr: bytes cut into lines for the app's
//! [`LogSink`]. Writes never fail, so a chatty app cannot trap on print.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

use crate::logs::{LineWriter, LogSink, Stream};

/// Bytes one request may print; the rest is dropped.
const MAX_BYTES_PER_REQUEST: usize = 256 * 1024;

#[derive(Clone)]
pub struct Output {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    lines: LineWriter,
    written: usize,
    sink: Arc<dyn LogSink>,
}

impl Output {
    pub fn new(stream: Stream, sink: Arc<dyn LogSink>) -> Output {
        Output {
            inner: Arc::new(Mutex::new(Inner {
                lines: LineWriter::new(stream),
                written: 0,
                sink,
            })),
        }
    }

    /// Sends the last, unterminated line.
    pub fn finish(&self) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let inner = &mut *inner;
        inner.lines.finish(&*inner.sink);
    }
}

impl IsTerminal for Output {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Output {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for Output {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let inner = &mut *inner;
        let room = MAX_BYTES_PER_REQUEST.saturating_sub(inner.written);
        let kept = &buf[..buf.len().min(room)];
        inner.written += kept.len();
        inner.lines.write(kept, &*inner.sink);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
