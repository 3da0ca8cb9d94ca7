//! An app's stdout or stderr: the shared [`GuestOutput`] cutting what a
//! request prints into lines for the app's [`LogSink`].

use std::sync::Arc;

use crate::logs::{LineWriter, LogSink, Stream};
use crate::output::{Destination, GuestOutput};

/// Bytes one request may print; the rest is dropped.
const MAX_BYTES_PER_REQUEST: usize = 256 * 1024;

/// Lines for a sink.
pub struct Lines {
    lines: LineWriter,
    sink: Arc<dyn LogSink>,
}

impl Destination for Lines {
    fn write(&mut self, kept: &[u8]) {
        self.lines.write(kept, &*self.sink);
    }
}

pub type Output = GuestOutput<Lines>;

/// One request's stream `stream`, printing to `sink`.
pub fn new(stream: Stream, sink: Arc<dyn LogSink>) -> Output {
    GuestOutput::new(
        Lines {
            lines: LineWriter::new(None, stream),
            sink,
        },
        MAX_BYTES_PER_REQUEST,
    )
}

/// Sends the last, unterminated line.
pub fn finish(output: &Output) {
    output.with(|l, _| l.lines.finish(&*l.sink));
}
