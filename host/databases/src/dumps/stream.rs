//! A stored dump as plain SQL, streamed with bounded memory: the object
//! is read from the backup store as it comes, un-gzipped in a blocking
//! thread when it starts with gzip's magic, and, when it is pg_dump's
//! custom format, fed into `pg_restore -f -` (run as an unprivileged
//! user) whose output is the SQL. No stage holds more than a few chunks
//! of 64 KiB, whatever the dump's size; the SQL is bounded in bytes
//! ([`Limited`]), so a gzip bomb ends in an error, never in a truncated
//! restore.

use std::path::Path;
use std::pin::Pin;
use std::process::Stdio;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures::TryStreamExt as _;
use object_store::ObjectStoreExt as _;
use object_store::path::Path as ObjectPath;
use tokio::io::{AsyncBufRead, AsyncRead, AsyncReadExt, BufReader, ReadBuf};
use tokio::task::JoinHandle;

use crate::{Error, Result};

/// The size of the chunks each stage passes on.
pub const CHUNK: usize = 64 * 1024;
/// How many chunks may wait between two stages.
const IN_FLIGHT: usize = 4;

type Reader = Box<dyn AsyncRead + Send + Unpin>;

/// The SQL of a dump as it streams.
pub type Sql = Box<dyn AsyncBufRead + Send + Unpin>;

/// What must have ended well before a restore of the SQL commits: the
/// pg_restore that writes it, if any. Dropped, it stops pg_restore.
pub struct Ended {
    restore: Option<PgRestore>,
}

struct PgRestore {
    child: tokio::process::Child,
    feeder: JoinHandle<std::io::Result<()>>,
    stderr: JoinHandle<Vec<u8>>,
}

/// Opens the object `key` of `store` as SQL; `pg_restore` finds the
/// binary that reads a custom-format dump; the SQL may be at most
/// `max_sql` bytes.
pub async fn open(
    store: &dyn object_store::ObjectStore,
    key: &ObjectPath,
    pg_restore: impl FnOnce() -> Result<std::path::PathBuf>,
    max_sql: u64,
) -> Result<(Sql, Ended)> {
    let got = store
        .get(key)
        .await
        .map_err(|e| Error::Missing(format!("dump {key}: {e}")))?;
    let stream = got
        .into_stream()
        .map_err(|e| std::io::Error::other(format!("backup store: {e}")));
    let mut input: Reader = Box::new(tokio_util::io::StreamReader::new(stream));
    let (mut magic, rest) = peek(input, 5).await?;
    input = rest;
    if magic.starts_with(&[0x1f, 0x8b]) {
        (magic, input) = peek(gunzip(input), 5).await?;
    }
    if !magic.starts_with(b"PGDMP") {
        let sql = BufReader::with_capacity(CHUNK, Limited::new(input, max_sql));
        return Ok((Box::new(sql), Ended { restore: None }));
    }
    let (restore, output) = PgRestore::spawn(&pg_restore()?, input)?;
    let sql = BufReader::with_capacity(CHUNK, Limited::new(output, max_sql));
    Ok((
        Box::new(sql),
        Ended {
            restore: Some(restore),
        },
    ))
}

impl Ended {
    /// Once the SQL is read to its end: whether pg_restore read the whole
    /// dump (a dump cut off or damaged ends its output early).
    pub async fn check(mut self) -> Result<()> {
        let Some(r) = self.restore.take() else {
            return Ok(());
        };
        let status = r.child.wait_with_output().await?.status;
        let fed = r.feeder.await.unwrap_or(Ok(()));
        let stderr = r.stderr.await.unwrap_or_default();
        if !status.success() {
            let why = String::from_utf8_lossy(&stderr);
            return Err(Error::Refused {
                code: "dump_refused",
                detail: format!(
                    "pg_restore cannot read the dump: {}",
                    why.lines().next().unwrap_or("no reason given").trim()
                ),
            });
        }
        fed.map_err(|e| Error::Unavailable(format!("reading the dump: {e}")))
    }
}

impl PgRestore {
    /// `pg_restore -f -` reading `input`: no connection, no owners, no
    /// privileges, as `nobody` when the host is root (its input is the
    /// tenant's).
    fn spawn(bin: &Path, mut input: Reader) -> Result<(PgRestore, tokio::process::ChildStdout)> {
        let user = nix::unistd::geteuid().is_root().then_some("nobody");
        let mut cmd = crate::local::supervise::command(user, bin);
        cmd.args([
            "--no-owner",
            "--no-privileges",
            "--no-tablespaces",
            "--no-publications",
            "--no-subscriptions",
            "--no-security-labels",
            "-f",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
        let mut child = cmd.spawn()?;
        let mut stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let mut stderr = child.stderr.take().expect("piped");
        let feeder = tokio::spawn(async move {
            // pg_restore may stop reading early (a damaged dump): its
            // status says why, not the broken pipe.
            let copied = tokio::io::copy(&mut input, &mut stdin).await;
            drop(stdin);
            match copied {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
                other => other.map(drop),
            }
        });
        let stderr = tokio::spawn(async move {
            let mut out = Vec::new();
            let _ = (&mut stderr).take(64 * 1024).read_to_end(&mut out).await;
            out
        });
        Ok((
            PgRestore {
                child,
                feeder,
                stderr,
            },
            stdout,
        ))
    }
}

impl Drop for Ended {
    fn drop(&mut self) {
        if let Some(r) = &self.restore {
            r.feeder.abort();
        }
    }
}

/// The first `n` bytes of `input` (fewer when it is shorter), and a
/// reader of the whole.
async fn peek(mut input: Reader, n: usize) -> Result<(Vec<u8>, Reader)> {
    let mut head = Vec::with_capacity(n);
    while head.len() < n {
        let mut byte = vec![0u8; n - head.len()];
        let got = input.read(&mut byte).await?;
        if got == 0 {
            break;
        }
        head.extend_from_slice(&byte[..got]);
    }
    let whole: Reader = Box::new(AsyncReadExt::chain(
        std::io::Cursor::new(head.clone()),
        input,
    ));
    Ok((head, whole))
}

/// `input` un-gzipped (every member, as `gzip -d` does) in a blocking
/// thread, at most [`IN_FLIGHT`] chunks ahead of the reader.
fn gunzip(input: Reader) -> Reader {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(IN_FLIGHT);
    let handle = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let blocking = Blocking { input, handle };
        let mut decoder =
            flate2::read::MultiGzDecoder::new(std::io::BufReader::with_capacity(CHUNK, blocking));
        loop {
            let mut chunk = vec![0u8; CHUNK];
            let item = match std::io::Read::read(&mut decoder, &mut chunk) {
                Ok(0) => return,
                Ok(n) => {
                    chunk.truncate(n);
                    Ok(Bytes::from(chunk))
                }
                Err(e) => Err(std::io::Error::new(
                    e.kind(),
                    format!("the dump is not a whole gzip file: {e}"),
                )),
            };
            let failed = item.is_err();
            // The reader gone (the restore ended): nothing more to do.
            if tx.blocking_send(item).is_err() || failed {
                return;
            }
        }
    });
    let stream = futures::stream::poll_fn(move |cx| rx.poll_recv(cx));
    Box::new(tokio_util::io::StreamReader::new(stream))
}

/// An async reader read from a blocking thread.
struct Blocking {
    input: Reader,
    handle: tokio::runtime::Handle,
}

impl std::io::Read for Blocking {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.handle.block_on(self.input.read(buf))
    }
}

/// A reader that fails once more than `max` bytes came through it.
pub struct Limited<R> {
    inner: R,
    left: u64,
    max: u64,
}

impl<R> Limited<R> {
    pub fn new(inner: R, max: u64) -> Self {
        Limited {
            inner,
            left: max,
            max,
        }
    }
}

impl<R: AsyncRead + Unpin> AsyncRead for Limited<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let n = (buf.filled().len() - before) as u64;
                if n > this.left {
                    // An error reads nothing.
                    buf.set_filled(before);
                    return Poll::Ready(Err(std::io::Error::other(format!(
                        "the dump expands to more than {} bytes of SQL",
                        this.max
                    ))));
                }
                this.left -= n;
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

#[cfg(test)]
mod tests;
