//! The locked-down WASI context every instance gets: no preopens, no
//! environment, no arguments, no sockets, closed stdin; stdout and stderr go
//! to the log; the wall clock is the host's [`Clock`](crate::Clock).

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::{WasiCtx, WasiCtxBuilder};

use crate::clock::WasiWallClock;
use crate::context::PluginContext;

/// Output beyond this many bytes per stream and call is dropped.
const OUTPUT_BUDGET: usize = 64 << 10;

pub(crate) fn locked_down_ctx(plugin: &PluginContext) -> WasiCtx {
    let name: Arc<str> = plugin.name.as_str().into();
    WasiCtxBuilder::new()
        .stdout(LogStream {
            plugin: name.clone(),
            stream: "stdout",
        })
        .stderr(LogStream {
            plugin: name,
            stream: "stderr",
        })
        .wall_clock(WasiWallClock(plugin.services.clock.clone()))
        .allow_tcp(false)
        .allow_udp(false)
        .allow_ip_name_lookup(false)
        .build()
}

/// A guest's stdout or stderr, written to `tracing` line by line.
struct LogStream {
    plugin: Arc<str>,
    stream: &'static str,
}

impl IsTerminal for LogStream {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for LogStream {
    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(LogWriter {
            plugin: self.plugin.clone(),
            stream: self.stream,
            line: Vec::new(),
            written: 0,
        })
    }
}

struct LogWriter {
    plugin: Arc<str>,
    stream: &'static str,
    line: Vec<u8>,
    written: usize,
}

impl LogWriter {
    fn emit(&mut self) {
        if self.line.is_empty() {
            return;
        }
        let text = String::from_utf8_lossy(&self.line);
        let text = super::log::truncate(&text);
        tracing::info!(plugin = &*self.plugin, stream = self.stream, "{text}");
        self.line.clear();
    }
}

impl AsyncWrite for LogWriter {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        // Accept everything, so a chatty guest never fails on a write, and
        // log only the first bytes.
        let keep = buf.len().min(OUTPUT_BUDGET.saturating_sub(self.written));
        self.written += keep;
        for &byte in &buf[..keep] {
            if byte == b'\n' {
                self.emit();
            } else {
                self.line.push(byte);
            }
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.emit();
        Poll::Ready(Ok(()))
    }
}

impl Drop for LogWriter {
    fn drop(&mut self) {
        self.emit();
    }
}
