//! A backup's bytes: a frozen copy of a volume's image (see
//! [`super::disk`]) written to the volume backup store as its non-zero
//! 1 MiB chunks, and read back into a new volume's partial image. Copies
//! are sparse both ways: only the copy's data extents are read
//! (`SEEK_DATA`/`SEEK_HOLE`), and a restore writes only the chunks stored,
//! so a volume's holes cost neither reads, bytes stored nor disk.
//!
//! The format: `PLATEAU-VOLUME-1\n`, the image's length (u64, big
//! endian), then records of offset and length (u64 each) and that many
//! bytes, ended by a record of length 0. Chunks of zeros are holes of
//! the copy (or never written) and are not stored; a restored image has
//! them as holes again.

use std::os::unix::fs::FileExt as _;
use std::path::Path;
use std::sync::Arc;

use futures::TryStreamExt as _;
use object_store::buffered::BufWriter;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt as _};
use tokio::io::{AsyncReadExt as _, AsyncSeekExt as _, AsyncWriteExt as _};

const MAGIC: &[u8] = b"PLATEAU-VOLUME-1\n";
const CHUNK: usize = 1 << 20;
/// A chunk of zeros, compared with whole (a `memcmp`, not a loop).
static ZEROS: [u8; CHUNK] = [0; CHUNK];

/// The key of a backup's object.
pub fn key(org_id: &str, volume_id: &str, backup_id: &str) -> String {
    format!("volumes/{org_id}/{volume_id}/{backup_id}.vol")
}

/// Writes the image at `image` as object `key`; the bytes stored. The
/// object appears whole or not at all.
pub async fn store(
    store: &Arc<dyn ObjectStore>,
    part_size: usize,
    key: &str,
    image: &Path,
) -> Result<i64, String> {
    store_counted(store, part_size, key, image)
        .await
        .map(|(written, _)| written)
}

/// [`store`], also answering the bytes read from the image: only its
/// data extents (`SEEK_DATA`/`SEEK_HOLE`), never its holes, so a 10 GiB
/// volume holding 100 MiB reads and stores about 100 MiB.
pub async fn store_counted(
    store: &Arc<dyn ObjectStore>,
    part_size: usize,
    key: &str,
    image: &Path,
) -> Result<(i64, u64), String> {
    let copy = |e: std::io::Error| format!("the frozen copy: {e}");
    let mut file = tokio::fs::File::open(image).await.map_err(copy)?;
    let len = file.metadata().await.map_err(copy)?.len();
    let std_file = file.try_clone().await.map_err(copy)?.into_std().await;
    let extents = tokio::task::spawn_blocking(move || data_extents(&std_file, len))
        .await
        .map_err(|e| e.to_string())?
        .map_err(copy)?;
    let mut out = BufWriter::with_capacity(store.clone(), ObjectPath::from(key), part_size);
    let (mut written, mut read) = (0u64, 0u64);
    let result: std::io::Result<()> = async {
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&len.to_be_bytes());
        out.write_all(&header).await?;
        written += header.len() as u64;
        let mut chunk = vec![0u8; CHUNK];
        for (start, end) in extents {
            file.seek(std::io::SeekFrom::Start(start)).await?;
            let mut offset = start;
            while offset < end {
                let n = (end - offset).min(CHUNK as u64) as usize;
                file.read_exact(&mut chunk[..n]).await?;
                read += n as u64;
                if chunk[..n] != ZEROS[..n] {
                    out.write_all(&offset.to_be_bytes()).await?;
                    out.write_all(&(n as u64).to_be_bytes()).await?;
                    out.write_all(&chunk[..n]).await?;
                    written += 16 + n as u64;
                }
                offset += n as u64;
            }
        }
        out.write_all(&[0u8; 16]).await?;
        written += 16;
        out.shutdown().await
    }
    .await;
    if let Err(e) = result {
        let _ = out.abort().await;
        return Err(format!("storing the backup: {e}"));
    }
    Ok((written as i64, read))
}

/// The data extents of the first `len` bytes of `file`, as `[start,
/// end)`, found with `SEEK_DATA` and `SEEK_HOLE`; a filesystem that does
/// not know them answers the whole file as data.
pub fn data_extents(file: &std::fs::File, len: u64) -> std::io::Result<Vec<(u64, u64)>> {
    use nix::errno::Errno;
    use nix::unistd::{Whence, lseek};
    let mut extents = Vec::new();
    let mut at = 0u64;
    while at < len {
        let start = match lseek(file, at as i64, Whence::SeekData) {
            Ok(start) => start as u64,
            // No data past `at`.
            Err(Errno::ENXIO) => break,
            Err(Errno::EINVAL) if at == 0 => return Ok(vec![(0, len)]),
            Err(e) => return Err(e.into()),
        };
        if start >= len {
            break;
        }
        let end = (lseek(file, start as i64, Whence::SeekHole)? as u64).min(len);
        extents.push((start, end));
        at = end;
    }
    Ok(extents)
}

/// Writes backup `key` into `partial` (an empty sparse file of the
/// volume's size), durably.
pub async fn restore(
    store: &Arc<dyn ObjectStore>,
    key: &str,
    partial: std::fs::File,
) -> Result<(), String> {
    let got = store
        .get(&ObjectPath::from(key))
        .await
        .map_err(|e| format!("reading the backup: {e}"))?;
    let stream = got.into_stream().map_err(std::io::Error::other);
    let mut r = tokio_util::io::StreamReader::new(stream);
    let bad = |e: std::io::Error| format!("reading the backup: {e}");
    let mut magic = vec![0u8; MAGIC.len()];
    r.read_exact(&mut magic).await.map_err(bad)?;
    if magic != MAGIC {
        return Err("the backup is not a volume image".to_owned());
    }
    let len = r.read_u64().await.map_err(bad)?;
    let file = Arc::new(partial);
    if file.metadata().map_err(|e| e.to_string())?.len() < len {
        return Err("the backup is larger than the volume".to_owned());
    }
    let mut chunk = vec![0u8; CHUNK];
    loop {
        let offset = r.read_u64().await.map_err(bad)?;
        let n = r.read_u64().await.map_err(bad)? as usize;
        if n == 0 {
            break;
        }
        if n > CHUNK || offset.saturating_add(n as u64) > len {
            return Err("the backup is damaged: a chunk past the image".to_owned());
        }
        r.read_exact(&mut chunk[..n]).await.map_err(bad)?;
        let f = file.clone();
        let bytes = chunk[..n].to_vec();
        tokio::task::spawn_blocking(move || f.write_all_at(&bytes, offset))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("writing the volume: {e}"))?;
    }
    tokio::task::spawn_blocking(move || file.sync_all())
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("writing the volume: {e}"))
}

/// Removes a backup's object; one already gone is not an error.
pub async fn delete(store: &Arc<dyn ObjectStore>, key: &str) -> Result<(), String> {
    match store.delete(&ObjectPath::from(key)).await {
        Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::FileExt as _;

    use super::*;

    /// A 10 GiB sparse image holding 100 MiB of data in three places is
    /// read and stored as about 100 MiB, and restores byte for byte into
    /// a sparse image.
    #[tokio::test]
    async fn a_sparse_image_is_read_and_stored_by_its_data_only() {
        let dir = tempfile::tempdir().unwrap();
        let image = dir.path().join("image");
        let len = 10u64 << 30;
        let pieces: [(u64, u64); 3] = [
            (0, 40 << 20),
            (5 << 30, 50 << 20),
            (len - (10 << 20), 10 << 20),
        ];
        {
            let f = std::fs::File::create(&image).unwrap();
            f.set_len(len).unwrap();
            for (at, n) in pieces {
                let bytes: Vec<u8> = (0..n).map(|i| (i % 251) as u8 | 1).collect();
                f.write_all_at(&bytes, at).unwrap();
            }
            f.sync_all().unwrap();
        }
        let data: u64 = pieces.iter().map(|(_, n)| n).sum();
        let store: Arc<dyn ObjectStore> =
            Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let started = std::time::Instant::now();
        let (written, read) = store_counted(&store, 8 << 20, "b.vol", &image)
            .await
            .unwrap();
        let took = started.elapsed();
        eprintln!(
            "sparse backup: a {} GiB image with {} MiB of data: {} MiB read, {} MiB stored in {:.2} s",
            len >> 30,
            data >> 20,
            read >> 20,
            written >> 20,
            took.as_secs_f64()
        );
        assert!(read >= data && read < data + (8 << 20), "read {read} bytes");
        assert!(
            (written as u64) < data + (1 << 20),
            "stored {written} bytes"
        );

        let restored = dir.path().join("restored");
        let f = std::fs::File::create(&restored).unwrap();
        f.set_len(len).unwrap();
        restore(&store, "b.vol", f).await.unwrap();
        let (a, b) = (
            std::fs::File::open(&image).unwrap(),
            std::fs::File::open(&restored).unwrap(),
        );
        assert_eq!(
            data_extents(&b, len).unwrap().len(),
            3,
            "the restored image is sparse"
        );
        for (at, n) in pieces {
            let (mut x, mut y) = (vec![0u8; n as usize], vec![0u8; n as usize]);
            a.read_exact_at(&mut x, at).unwrap();
            b.read_exact_at(&mut y, at).unwrap();
            assert!(x == y, "the data at {at} restored");
        }
        use std::os::unix::fs::MetadataExt as _;
        let on_disk = b.metadata().unwrap().blocks() * 512;
        assert!(
            on_disk < data + (16 << 20),
            "the restored image takes {on_disk} bytes"
        );
    }
}
