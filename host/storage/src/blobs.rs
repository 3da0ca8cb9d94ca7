//! Object bytes in an `object_store`: a local directory by default, or an
//! S3 bucket (`s3://bucket[/prefix]`) for a deployment that outgrows one
//! machine. Keys are never reused: a write goes to a fresh key that only
//! the database row committed after it makes visible. A local store's
//! staging files of writes cut short by a dying process are swept
//! ([`crate::sweep`]).

use std::ops::Range;
use std::path::{Path as FsPath, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use md5::{Digest as _, Md5};
use object_store::path::Path;
use object_store::{
    GetOptions, GetRange, GetResultPayload, ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart,
};

use crate::error::{Error, Result};
use crate::sweep::{LiveWrites, Swept};

const WRITE_CONCURRENCY: usize = 2;
/// Local files are read in chunks of this size.
const READ_CHUNK: usize = 1024 * 1024;

/// The byte store.
#[derive(Clone)]
pub struct Blobs {
    inner: Arc<dyn ObjectStore>,
    part_size: usize,
    /// `file:///...` or `s3://bucket`, for logs.
    pub location: String,
    /// The directory of a local store, whose staging files are swept.
    root: Option<PathBuf>,
    live: Arc<LiveWrites>,
}

/// A finished write.
pub struct Written {
    pub size: u64,
    pub md5: [u8; 16],
}

/// How a write failed.
pub enum WriteFailure {
    /// The body passed `cap` bytes; nothing was kept.
    TooLarge,
    /// The body failed or ended early; nothing was kept.
    Interrupted,
    Store(Error),
}

impl Blobs {
    /// Opens `spec` (see [`plateau_object_store::open`]).
    pub fn open(spec: &str) -> Result<Blobs> {
        Self::opened(plateau_object_store::open(spec))
    }

    /// A store in a local directory, created if needed.
    pub fn local(dir: &FsPath) -> Result<Blobs> {
        Self::opened(plateau_object_store::local(dir))
    }

    fn opened(
        opened: Result<plateau_object_store::Opened, plateau_object_store::OpenError>,
    ) -> Result<Blobs> {
        let opened = opened.map_err(|e| Error::Internal(format!("opening the store: {e}")))?;
        let part_size = opened.part_size();
        Ok(Blobs {
            inner: opened.store,
            part_size,
            location: opened.location,
            root: opened.local_root,
            live: Arc::default(),
        })
    }

    /// Removes the staging files of writes that never finished and that
    /// nothing wrote to for `min_age` (none on S3, whose incomplete uploads
    /// a bucket lifecycle rule expires). At start, before any write, pass
    /// zero: every staging file is then a dead process's.
    pub async fn sweep_staging(&self, min_age: Duration) -> Swept {
        let Some(root) = self.root.clone() else {
            return Swept::default();
        };
        let live = self.live.clone();
        let swept = tokio::task::spawn_blocking(move || crate::sweep::sweep(&root, &live, min_age))
            .await
            .unwrap_or_default();
        if swept.files > 0 {
            tracing::info!(
                files = swept.files,
                bytes = swept.bytes,
                store = %self.location,
                "removed the staging files of unfinished writes"
            );
        }
        swept
    }

    /// Sweeps staging files every `every`, sparing those written to within
    /// `min_age`, for as long as the returned task runs.
    pub fn spawn_sweeper(&self, every: Duration, min_age: Duration) -> tokio::task::JoinHandle<()> {
        let blobs = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.tick().await;
            loop {
                tick.tick().await;
                blobs.sweep_staging(min_age).await;
            }
        })
    }

    /// A fresh key for an object's bytes, in one of 256 directories per
    /// bucket: concurrent writers of one bucket would otherwise queue on
    /// one directory's lock to create their files.
    pub fn object_key(bucket_id: &str) -> String {
        let id = uuid::Uuid::new_v4().simple().to_string();
        format!("objects/{bucket_id}/{}/{id}", &id[..2])
    }

    /// A fresh key for a part's bytes.
    pub fn part_key(upload_id: &str, number: i64) -> String {
        format!(
            "parts/{upload_id}/{number:05}-{}",
            uuid::Uuid::new_v4().simple()
        )
    }

    /// Streams `body` into `key`, hashing it with MD5 and holding a few
    /// parts in memory at most. A body that ends within one part is one
    /// `put` (one request to S3); a longer one is a multipart write. Past
    /// `cap` bytes, or when the body fails, nothing is kept.
    pub async fn write(
        &self,
        key: &str,
        mut body: BoxStream<'static, std::io::Result<Bytes>>,
        cap: u64,
    ) -> std::result::Result<Written, WriteFailure> {
        let _live = self.live.start(key);
        let mut md5 = Md5::new();
        let mut written = 0u64;
        let mut first = Vec::new();
        let mut ended = false;
        while written <= self.part_size as u64 {
            match next_chunk(&mut body, &mut written, cap).await? {
                Some(chunk) => {
                    md5.update(&chunk);
                    first.push(chunk);
                }
                None => {
                    ended = true;
                    break;
                }
            }
        }
        let path = Path::from(key);
        if ended {
            let payload: PutPayload = first.into_iter().collect();
            self.inner
                .put(&path, payload)
                .await
                .map_err(|e| WriteFailure::Store(e.into()))?;
            return Ok(Written {
                size: written,
                md5: md5.finalize().into(),
            });
        }
        let upload = self
            .inner
            .put_multipart(&path)
            .await
            .map_err(|e| WriteFailure::Store(e.into()))?;
        let mut writer = WriteMultipart::new_with_chunk_size(upload, self.part_size);
        for chunk in first {
            writer.put(chunk);
        }
        // Past the first part, MD5 runs on a thread of its own, beside the
        // task that reads (and on a signed payload hashes) the body.
        let md5 = Md5Worker::start(md5);
        loop {
            let chunk = match next_chunk(&mut body, &mut written, cap).await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(failure) => {
                    let _ = writer.abort().await;
                    return Err(failure);
                }
            };
            md5.update(chunk.clone()).await;
            if let Err(e) = writer.wait_for_capacity(WRITE_CONCURRENCY).await {
                return Err(WriteFailure::Store(e.into()));
            }
            writer.put(chunk);
        }
        writer
            .finish()
            .await
            .map_err(|e| WriteFailure::Store(e.into()))?;
        Ok(Written {
            size: written,
            md5: md5.finish().await?,
        })
    }

    /// A byte range of a blob (all of it for None), streamed; local files
    /// are read in large chunks on the blocking pool.
    pub async fn read(
        &self,
        key: &str,
        range: Option<Range<u64>>,
    ) -> Result<BoxStream<'static, std::io::Result<Bytes>>> {
        let options = GetOptions {
            range: range.map(GetRange::Bounded),
            ..GetOptions::default()
        };
        let result = self.inner.get_opts(&Path::from(key), options).await?;
        match result.payload {
            GetResultPayload::File(file, _) => Ok(read_file(file, result.range)),
            GetResultPayload::Stream(_) => Ok(result
                .into_stream()
                .map_err(|e| std::io::Error::other(e.to_string()))
                .boxed()),
        }
    }

    /// Copies a blob (a file copy locally, a server-side copy on S3).
    pub async fn copy(&self, from: &str, to: &str) -> Result<()> {
        let _live = self.live.start(to);
        self.inner.copy(&Path::from(from), &Path::from(to)).await?;
        Ok(())
    }

    /// Deletes blobs; missing ones are not an error, and failures are only
    /// logged (the rows are gone, so the bytes are never served again).
    pub async fn delete_all(&self, keys: impl IntoIterator<Item = String>) {
        for key in keys {
            match self.inner.delete(&Path::from(key.as_str())).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => tracing::warn!(error = %e, key, "deleting an object's bytes"),
            }
        }
    }
}

/// MD5 on a blocking thread, fed chunks through a short queue (memory
/// stays a few chunks).
struct Md5Worker {
    chunks: tokio::sync::mpsc::Sender<Bytes>,
    digest: tokio::task::JoinHandle<[u8; 16]>,
}

impl Md5Worker {
    fn start(mut md5: Md5) -> Md5Worker {
        let (chunks, mut queue) = tokio::sync::mpsc::channel::<Bytes>(16);
        let digest = tokio::task::spawn_blocking(move || {
            while let Some(chunk) = queue.blocking_recv() {
                md5.update(&chunk);
            }
            md5.finalize().into()
        });
        Md5Worker { chunks, digest }
    }

    async fn update(&self, chunk: Bytes) {
        // The worker only stops when `chunks` is dropped.
        let _ = self.chunks.send(chunk).await;
    }

    async fn finish(self) -> std::result::Result<[u8; 16], WriteFailure> {
        drop(self.chunks);
        self.digest.await.map_err(|e| {
            WriteFailure::Store(Error::Internal(format!("hashing the body failed: {e}")))
        })
    }
}

/// The body's next chunk, counted into `written`; a failed body or one
/// past `cap` bytes is a failure.
async fn next_chunk(
    body: &mut BoxStream<'static, std::io::Result<Bytes>>,
    written: &mut u64,
    cap: u64,
) -> std::result::Result<Option<Bytes>, WriteFailure> {
    match body.next().await {
        None => Ok(None),
        Some(Err(e)) => {
            tracing::info!(error = %e, "object body interrupted");
            Err(WriteFailure::Interrupted)
        }
        Some(Ok(chunk)) => {
            *written += chunk.len() as u64;
            if *written > cap {
                return Err(WriteFailure::TooLarge);
            }
            Ok(Some(chunk))
        }
    }
}

/// Reads `range` of a local file in [`READ_CHUNK`] pieces on the blocking
/// pool, one chunk ahead of the sender.
fn read_file(file: std::fs::File, range: Range<u64>) -> BoxStream<'static, std::io::Result<Bytes>> {
    use std::io::{Read, Seek, SeekFrom};
    let (tx, rx) = tokio::sync::mpsc::channel::<std::io::Result<Bytes>>(2);
    tokio::task::spawn_blocking(move || {
        let mut file = file;
        if let Err(e) = file.seek(SeekFrom::Start(range.start)) {
            let _ = tx.blocking_send(Err(e));
            return;
        }
        let mut left = range.end - range.start;
        while left > 0 {
            let n = left.min(READ_CHUNK as u64) as usize;
            let mut buf = vec![0u8; n];
            let result = file.read_exact(&mut buf).map(|()| Bytes::from(buf));
            let failed = result.is_err();
            if tx.blocking_send(result).is_err() || failed {
                return;
            }
            left -= n as u64;
        }
    });
    tokio_stream(rx)
}

fn tokio_stream(
    mut rx: tokio::sync::mpsc::Receiver<std::io::Result<Bytes>>,
) -> BoxStream<'static, std::io::Result<Bytes>> {
    futures::stream::poll_fn(move |cx| rx.poll_recv(cx)).boxed()
}
