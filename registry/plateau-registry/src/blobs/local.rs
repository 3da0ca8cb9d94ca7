//! Reading local files out quickly. `tokio::fs` reads 256 KiB at a time
//! into its own buffer and copies each chunk out again, one blocking-pool
//! hop per chunk; here each hop reads a whole [`READ_CHUNK`] straight into
//! the buffer that is sent, and the next read starts as soon as a chunk
//! is handed over, so reading overlaps sending.
//!
//! The file moves into each blocking job and back: no thread waits on a
//! slow client, and at most two chunks per reader are in memory.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::ops::Range;

use bytes::Bytes;
use futures::stream::{self, BoxStream, StreamExt};
use tokio::task::JoinHandle;

/// Bytes read per blocking job.
const READ_CHUNK: u64 = 1024 * 1024;

type Read1 = JoinHandle<(File, std::io::Result<Bytes>)>;

/// `range` of `file` as a stream of chunks, reading one chunk ahead.
pub fn read_range(file: File, range: Range<u64>) -> BoxStream<'static, std::io::Result<Bytes>> {
    let remaining = range.end.saturating_sub(range.start);
    if remaining == 0 {
        return stream::empty().boxed();
    }
    let first = read_chunk(file, Some(range.start), remaining);
    stream::unfold(Some((first, remaining)), |state| async move {
        let (job, remaining) = state?;
        let (file, chunk) = match job.await {
            Ok(done) => done,
            Err(e) => return Some((Err(std::io::Error::other(e)), None)),
        };
        let chunk = match chunk {
            Ok(c) if c.is_empty() => Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the object is shorter than its recorded size",
            )),
            other => other,
        };
        let Ok(chunk) = chunk else {
            return Some((chunk, None));
        };
        let remaining = remaining - chunk.len() as u64;
        let next = (remaining > 0).then(|| (read_chunk(file, None, remaining), remaining));
        Some((Ok(chunk), next))
    })
    .boxed()
}

/// Reads the next chunk (after seeking to `start`, if given) on the
/// blocking pool. `read_to_end` into spare capacity skips zeroing the
/// buffer first.
fn read_chunk(file: File, start: Option<u64>, remaining: u64) -> Read1 {
    tokio::task::spawn_blocking(move || {
        let want = remaining.min(READ_CHUNK);
        let mut buf = Vec::with_capacity(want as usize);
        let result = start
            .map_or(Ok(0), |offset| (&file).seek(SeekFrom::Start(offset)))
            .and_then(|_| (&file).take(want).read_to_end(&mut buf))
            .map(|_| Bytes::from(buf));
        (file, result)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::TryStreamExt;

    #[tokio::test]
    async fn reads_exactly_the_range_in_chunks() {
        let mut tmp = tempfile::tempfile().unwrap();
        let data: Vec<u8> = (0..3 * READ_CHUNK + 17).map(|i| (i % 251) as u8).collect();
        std::io::Write::write_all(&mut tmp, &data).unwrap();
        for range in [0..data.len() as u64, 5..READ_CHUNK + 9, 100..100] {
            let file = tmp.try_clone().unwrap();
            let chunks: Vec<Bytes> = read_range(file, range.clone()).try_collect().await.unwrap();
            assert!(chunks.iter().all(|c| c.len() as u64 <= READ_CHUNK));
            assert_eq!(
                chunks.concat(),
                &data[range.start as usize..range.end as usize]
            );
        }
    }

    #[tokio::test]
    async fn a_truncated_file_is_an_error() {
        let mut tmp = tempfile::tempfile().unwrap();
        std::io::Write::write_all(&mut tmp, b"short").unwrap();
        let result: std::io::Result<Vec<Bytes>> = read_range(tmp, 0..10).try_collect().await;
        assert!(result.is_err());
    }
}
