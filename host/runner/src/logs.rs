//! Where replicas' output goes: a [`LogSink`] receives complete lines,
//! and [`LineWriter`] cuts a byte stream into them.

/// Which stream a line came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

impl Stream {
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }
}

/// Receives the lines replicas print, with the replica that printed
/// each (none for Wasm apps, which run an instance per request). Must
/// not block.
pub trait LogSink: Send + Sync {
    fn line(&self, replica: Option<&str>, stream: Stream, line: String);
}

/// The longest line kept; the rest of a longer line is cut.
pub const MAX_LINE: usize = 8 * 1024;

/// Cuts bytes into lines for a sink; what is left at the end is flushed
/// as a last line.
pub struct LineWriter {
    replica: Option<String>,
    stream: Stream,
    pending: Vec<u8>,
}

impl LineWriter {
    pub fn new(replica: Option<String>, stream: Stream) -> Self {
        LineWriter {
            replica,
            stream,
            pending: Vec::new(),
        }
    }

    pub fn write(&mut self, bytes: &[u8], sink: &dyn LogSink) {
        for &b in bytes {
            if b == b'\n' {
                self.emit(sink);
            } else if self.pending.len() < MAX_LINE {
                self.pending.push(b);
            }
        }
    }

    pub fn finish(&mut self, sink: &dyn LogSink) {
        if !self.pending.is_empty() {
            self.emit(sink);
        }
    }

    fn emit(&mut self, sink: &dyn LogSink) {
        let mut line = String::from_utf8_lossy(&self.pending).into_owned();
        if line.ends_with('\r') {
            line.pop();
        }
        self.pending.clear();
        sink.line(self.replica.as_deref(), self.stream, line);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    #[derive(Default)]
    struct Lines(Mutex<Vec<(Stream, String)>>);

    impl LogSink for Lines {
        fn line(&self, _: Option<&str>, stream: Stream, line: String) {
            self.0.lock().unwrap().push((stream, line));
        }
    }

    #[test]
    fn cuts_lines_across_writes() {
        let sink = Lines::default();
        let mut w = LineWriter::new(None, Stream::Stderr);
        w.write(b"hel", &sink);
        w.write(b"lo\r\nwor", &sink);
        w.write(b"ld\n\nlast", &sink);
        w.finish(&sink);
        let lines: Vec<String> = sink
            .0
            .into_inner()
            .unwrap()
            .into_iter()
            .map(|l| l.1)
            .collect();
        assert_eq!(lines, ["hello", "world", "", "last"]);
    }
}
