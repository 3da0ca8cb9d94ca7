//! Blob content in an `object_store`: the local filesystem by default, or
//! any S3-compatible service. Only this module knows object keys.
//!
//! Layout: `blobs/<org>/<algorithm>/<hex>/<generation>` for content, and
//! `uploads/<upload id>/<offset>-<random>` for the parts of unfinished
//! uploads. A blob's generation (the upload that wrote it) is recorded in
//! the database, so a blob collected by GC and pushed again at the same
//! moment never loses its new copy.
//!
//! Hashing runs beside the transfer ([`pipe`]), and local files are read
//! out in large chunks ([`local`]).

mod local;
mod pipe;

use std::ops::Range;
use std::path::Path as FsPath;
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::{BoxStream, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{
    GetOptions, GetRange, GetResultPayload, ObjectStore, ObjectStoreExt, PutPayload, WriteMultipart,
};

use crate::error::{Error, Result};
use crate::reference::{Digest, Hasher};
use pipe::Pipe;

const WRITE_CONCURRENCY: usize = 2;

/// The content store.
#[derive(Clone)]
pub struct BlobStore {
    inner: Arc<dyn ObjectStore>,
    part_size: usize,
    /// Where the store lives, for logs: `file:///...` or `s3://bucket`.
    pub location: String,
}

/// How a streamed write ended.
#[derive(Debug, PartialEq, Eq)]
pub enum WriteEnd {
    /// The body ended normally.
    Complete,
    /// The client went away; what arrived before was kept.
    Interrupted,
}

impl BlobStore {
    /// Opens `spec` (see [`plateau_object_store::open`]).
    pub fn open(spec: &str) -> Result<BlobStore> {
        Self::opened(plateau_object_store::open(spec))
    }

    /// A store in a local directory, created if needed.
    pub fn local(dir: &FsPath) -> Result<BlobStore> {
        Self::opened(plateau_object_store::local(dir))
    }

    fn opened(
        opened: Result<plateau_object_store::Opened, plateau_object_store::OpenError>,
    ) -> Result<BlobStore> {
        let opened =
            opened.map_err(|e| Error::Internal(format!("opening the registry store: {e}")))?;
        let part_size = opened.part_size();
        Ok(BlobStore {
            inner: opened.store,
            part_size,
            location: opened.location,
        })
    }

    pub fn blob_key(org_id: &str, digest: &Digest, generation: &str) -> String {
        format!(
            "blobs/{org_id}/{}/{}/{generation}",
            digest.algorithm.as_str(),
            digest.hex
        )
    }

    pub fn part_key(upload_id: &str, offset: u64) -> String {
        format!(
            "uploads/{upload_id}/{offset:020}-{}",
            uuid::Uuid::new_v4().simple()
        )
    }

    pub fn upload_prefix(upload_id: &str) -> String {
        format!("uploads/{upload_id}")
    }

    /// Streams `body` into `key`, feeding `hasher` (on the blocking pool,
    /// beside the write), holding at most a few parts in memory. Fails
    /// with DENIED past `limit` bytes (nothing is kept then). Returns the
    /// bytes written, how the body ended and the hasher; an interrupted
    /// body keeps what arrived. Writes nothing for an empty body.
    pub async fn write_stream<S, E>(
        &self,
        key: &str,
        mut body: S,
        hasher: Option<Hasher>,
        limit: u64,
        limit_message: impl Fn() -> String,
    ) -> Result<(u64, WriteEnd, Option<Hasher>)>
    where
        S: futures::Stream<Item = std::result::Result<Bytes, E>> + Unpin,
        E: std::fmt::Display,
    {
        let mut hashing = hasher.map(hash_pipe);
        let mut writer: Option<WriteMultipart> = None;
        let mut written = 0u64;
        let mut end = WriteEnd::Complete;
        while let Some(chunk) = body.next().await {
            let chunk = match chunk {
                Ok(c) => c,
                Err(e) => {
                    tracing::info!(error = %e, key, "upload body interrupted");
                    end = WriteEnd::Interrupted;
                    break;
                }
            };
            if chunk.is_empty() {
                continue;
            }
            written += chunk.len() as u64;
            if written > limit {
                if let Some(w) = writer.take() {
                    let _ = w.abort().await;
                }
                return Err(Error::Denied(limit_message()));
            }
            if let Some(h) = hashing.as_mut() {
                h.push(chunk.clone()).await.map_err(hash_failed)?;
            }
            let w = match writer.as_mut() {
                Some(w) => w,
                None => {
                    let upload = self.inner.put_multipart(&Path::from(key)).await?;
                    writer.insert(WriteMultipart::new_with_chunk_size(upload, self.part_size))
                }
            };
            w.wait_for_capacity(WRITE_CONCURRENCY).await?;
            w.put(chunk);
        }
        if let Some(w) = writer {
            w.finish().await?;
        }
        let hasher = match hashing {
            Some(h) => Some(h.finish().await.map_err(hash_failed)?),
            None => None,
        };
        Ok((written, end, hasher))
    }

    pub async fn put_empty(&self, key: &str) -> Result<()> {
        self.inner
            .put(&Path::from(key), PutPayload::default())
            .await?;
        Ok(())
    }

    /// A byte range of an object (all of it for `None`) as a stream; local
    /// files are read directly in large chunks.
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
            GetResultPayload::File(file, _) => Ok(local::read_range(file, result.range)),
            GetResultPayload::Stream(_) => Ok(result
                .into_stream()
                .map_err(|e| std::io::Error::other(e.to_string()))
                .boxed()),
        }
    }

    /// Hashes an object by reading it through.
    pub async fn hash(&self, key: &str, hasher: Hasher) -> Result<Hasher> {
        let mut stream = self.read(key, None).await?;
        let mut hashing = hash_pipe(hasher);
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| Error::Internal(format!("reading {key}: {e}")))?;
            hashing.push(chunk).await.map_err(hash_failed)?;
        }
        hashing.finish().await.map_err(hash_failed)
    }

    /// Concatenates `parts` into `dest`, feeding `hasher` on the way (none
    /// when the digest is already known).
    pub async fn concat(
        &self,
        parts: &[String],
        dest: &str,
        hasher: Option<Hasher>,
    ) -> Result<Option<Hasher>> {
        let store = self.clone();
        let body = futures::stream::iter(parts.to_vec())
            .then(move |part| {
                let store = store.clone();
                async move {
                    store.read(&part, None).await.unwrap_or_else(|e| {
                        let e = std::io::Error::other(format!("reading {part}: {e}"));
                        futures::stream::once(async { Err(e) }).boxed()
                    })
                }
            })
            .flatten()
            .boxed();
        let (_, end, hasher) = self
            .write_stream(dest, body, hasher, u64::MAX, String::new)
            .await?;
        if end == WriteEnd::Interrupted {
            // What was written is not recorded anywhere, so never served.
            self.delete(dest).await?;
            return Err(Error::Internal(format!(
                "reading the parts of {dest} failed"
            )));
        }
        Ok(hasher)
    }

    /// Moves an object (a rename on the local filesystem, a server-side
    /// copy on S3).
    pub async fn rename(&self, from: &str, to: &str) -> Result<()> {
        self.inner
            .rename(&Path::from(from), &Path::from(to))
            .await?;
        Ok(())
    }

    /// Deletes an object; a missing one is not an error.
    pub async fn delete(&self, key: &str) -> Result<()> {
        match self.inner.delete(&Path::from(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes every object below `prefix`.
    pub async fn delete_prefix(&self, prefix: &str) -> Result<usize> {
        let prefix = Path::from(prefix);
        let keys: Vec<Path> = self
            .inner
            .list(Some(&prefix))
            .map_ok(|meta| meta.location)
            .try_collect()
            .await?;
        let n = keys.len();
        for key in keys {
            self.delete(key.as_ref()).await?;
        }
        Ok(n)
    }

    /// Every object key below `prefix`, with its last modification in
    /// milliseconds (for GC).
    pub async fn list(&self, prefix: &str) -> Result<Vec<(String, i64)>> {
        Ok(self
            .inner
            .list(Some(&Path::from(prefix)))
            .map_ok(|meta| {
                (
                    meta.location.to_string(),
                    meta.last_modified.timestamp_millis(),
                )
            })
            .try_collect()
            .await?)
    }
}

/// Hashing beside the transfer, in the blocking pool.
fn hash_pipe(hasher: Hasher) -> Pipe<Hasher> {
    Pipe::new(hasher, |h, chunks| {
        chunks.iter().for_each(|c| h.update(c));
        Ok(())
    })
}

fn hash_failed(e: std::io::Error) -> Error {
    Error::Internal(format!("hashing: {e}"))
}
