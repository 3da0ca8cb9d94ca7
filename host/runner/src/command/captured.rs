//! A command's stdout or stderr, kept in memory up to a cap: bytes past it
//! are dropped and the stream marked truncated. Writes never fail, so a
//! chatty command cannot trap on print.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};

#[derive(Clone)]
pub struct Captured {
    inner: Arc<Mutex<Inner>>,
}

struct Inner {
    kept: Vec<u8>,
    cap: usize,
    truncated: bool,
}

impl Captured {
    pub fn new(cap: usize) -> Captured {
        Captured {
            inner: Arc::new(Mutex::new(Inner {
                kept: Vec::new(),
                cap,
                truncated: false,
            })),
        }
    }

    /// What was kept, and whether more was written.
    pub fn take(&self) -> (Vec<u8>, bool) {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        (std::mem::take(&mut inner.kept), inner.truncated)
    }
}

impl IsTerminal for Captured {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Captured {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

impl AsyncWrite for Captured {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let mut inner = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let room = inner.cap.saturating_sub(inner.kept.len());
        if buf.len() > room {
            inner.truncated = true;
        }
        let kept = &buf[..buf.len().min(room)];
        inner.kept.extend_from_slice(kept);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}
