//! A backup's bytes: a frozen copy of a volume's image (see
//! [`super::disk`]) written to the volume backup store as its non-zero
//! 1 MiB chunks, and read back into a new volume's partial image.
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
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

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
    let mut file = tokio::fs::File::open(image)
        .await
        .map_err(|e| format!("the frozen copy: {e}"))?;
    let len = file
        .metadata()
        .await
        .map_err(|e| format!("the frozen copy: {e}"))?
        .len();
    let mut out = BufWriter::with_capacity(store.clone(), ObjectPath::from(key), part_size);
    let mut written = 0u64;
    let result: std::io::Result<()> = async {
        let mut header = MAGIC.to_vec();
        header.extend_from_slice(&len.to_be_bytes());
        out.write_all(&header).await?;
        written += header.len() as u64;
        let mut chunk = vec![0u8; CHUNK];
        let mut offset = 0u64;
        while offset < len {
            let n = (len - offset).min(CHUNK as u64) as usize;
            file.read_exact(&mut chunk[..n]).await?;
            if chunk[..n] != ZEROS[..n] {
                out.write_all(&offset.to_be_bytes()).await?;
                out.write_all(&(n as u64).to_be_bytes()).await?;
                out.write_all(&chunk[..n]).await?;
                written += 16 + n as u64;
            }
            offset += n as u64;
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
    Ok(written as i64)
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
