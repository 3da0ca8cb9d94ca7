//! Source uploads: the presigned URL a client PUTs an archive to (an
//! HMAC of the app, the upload and the expiry, under a key derived from
//! the host's secret key), the archive streamed to disk and made visible
//! in one rename, and its unpacking into a build's scratch directory.
//!
//! **Architecture Invariant:** an archive is visible under its final
//! name only once it is whole and the database records it; a build never
//! sees half an upload.

use std::path::{Component, Path, PathBuf};

use axum::body::Body;
use hmac::{Hmac, Mac};
use http_body_util::BodyExt;
use sha2::Sha256;
use tokio::io::AsyncWriteExt;

/// Bytes an unpacked archive may take (files only).
pub const MAX_UNPACKED_BYTES: u64 = 1 << 30;

/// Signs and checks upload URLs.
pub struct UploadSigner {
    key: [u8; 32],
}

type HmacSha256 = Hmac<Sha256>;

impl UploadSigner {
    /// A signer whose key is derived from the host's `secret`, so the
    /// secret itself never signs anything else's way.
    pub fn new(secret: &[u8]) -> UploadSigner {
        let mut mac = HmacSha256::new_from_slice(secret).expect("hmac takes any key length");
        mac.update(b"plateau apps source-upload v1");
        UploadSigner {
            key: mac.finalize().into_bytes().into(),
        }
    }

    fn mac(&self, app_id: &str, upload_id: &str, expires: i64) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.key).expect("hmac takes any key length");
        mac.update(format!("PUT\n{app_id}\n{upload_id}\n{expires}").as_bytes());
        mac
    }

    /// The signature of an upload URL, in hex.
    pub fn sign(&self, app_id: &str, upload_id: &str, expires: i64) -> String {
        hex::encode(self.mac(app_id, upload_id, expires).finalize().into_bytes())
    }

    /// Whether `signature` is this host's for the upload (in constant time).
    pub fn verify(&self, app_id: &str, upload_id: &str, expires: i64, signature: &str) -> bool {
        let Ok(raw) = hex::decode(signature) else {
            return false;
        };
        self.mac(app_id, upload_id, expires)
            .verify_slice(&raw)
            .is_ok()
    }
}

/// Why an archive was not stored.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("the archive is larger than {0} bytes")]
    TooLarge(u64),
    #[error("the body is not a gzip-compressed tar archive")]
    NotGzip,
    #[error("the upload was cut off: {0}")]
    Body(String),
    #[error("the archive cannot be written: {0}")]
    Io(#[from] std::io::Error),
}

/// Where upload `id`'s archive lives once stored.
pub fn archive_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.tar.gz"))
}

/// Streams `body` into a hidden file in `dir` (at most `max` bytes,
/// gzip's magic first); the file and its size. The caller renames it to
/// [`archive_path`] once the database records it, or removes it.
pub async fn receive(
    dir: &Path,
    id: &str,
    body: Body,
    max: u64,
) -> Result<(PathBuf, u64), StoreError> {
    tokio::fs::create_dir_all(dir).await?;
    let partial = dir.join(format!(".{id}.{}.partial", plateau_core::id::new_id("tmp")));
    let result = write(&partial, body, max).await;
    if result.is_err() {
        let _ = tokio::fs::remove_file(&partial).await;
    }
    result.map(|bytes| (partial, bytes))
}

async fn write(path: &Path, mut body: Body, max: u64) -> Result<u64, StoreError> {
    let mut file = tokio::fs::File::create(path).await?;
    let mut bytes = 0u64;
    let mut head: Vec<u8> = Vec::with_capacity(2);
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| StoreError::Body(e.to_string()))?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        bytes += data.len() as u64;
        if bytes > max {
            return Err(StoreError::TooLarge(max));
        }
        if head.len() < 2 {
            head.extend(data.iter().take(2 - head.len()));
            if head.len() == 2 && head != [0x1f, 0x8b] {
                return Err(StoreError::NotGzip);
            }
        }
        file.write_all(&data).await?;
    }
    if head != [0x1f, 0x8b] {
        return Err(StoreError::NotGzip);
    }
    file.sync_all().await?;
    Ok(bytes)
}

/// Unpacks the gzip-compressed tar `archive` into `into`: files and
/// directories only, none outside `into`, at most
/// [`MAX_UNPACKED_BYTES`]; the error says what is wrong with the archive.
pub fn unpack(archive: &Path, into: &Path) -> Result<(), String> {
    let file =
        std::fs::File::open(archive).map_err(|e| format!("the upload's archive is gone: {e}"))?;
    std::fs::create_dir_all(into)
        .map_err(|e| format!("the scratch directory cannot be made: {e}"))?;
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(file));
    let mut total = 0u64;
    let entries = tar.entries().map_err(bad)?;
    for entry in entries {
        let mut entry = entry.map_err(bad)?;
        let kind = entry.header().entry_type();
        let path = entry.path().map_err(bad)?.into_owned();
        if path
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(format!(
                "the archive names {} outside its top; pack relative paths",
                path.display()
            ));
        }
        if kind.is_pax_global_extensions()
            || kind.is_pax_local_extensions()
            || kind.is_gnu_longname()
        {
            continue;
        }
        if !(kind.is_file() || kind.is_dir()) {
            return Err(format!(
                "the archive holds {}, which is neither a file nor a directory; archives hold only those",
                path.display()
            ));
        }
        total += entry.header().size().map_err(bad)?;
        if total > MAX_UNPACKED_BYTES {
            return Err(format!(
                "the archive unpacks to more than {} MiB",
                MAX_UNPACKED_BYTES >> 20
            ));
        }
        if !entry.unpack_in(into).map_err(bad)? {
            return Err(format!(
                "the archive names {} outside its top",
                path.display()
            ));
        }
    }
    Ok(())
}

fn bad(e: std::io::Error) -> String {
    format!("the upload is not a readable tar.gz archive: {e}")
}

/// The longest pause between two sweeps of uploads.
const SWEEP_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

impl crate::Apps {
    /// Removes, on a timer, the uploads nobody can build any more: never
    /// stored once their URL expired, or stored and not deployed within
    /// [`AppsConfig::upload_keep`](crate::AppsConfig), with their archives.
    pub(crate) async fn sweep_uploads(self) {
        let Some(dir) = self.config().uploads_dir.clone() else {
            return;
        };
        let keep = self.config().upload_keep;
        let every = SWEEP_EVERY
            .min(keep / 2)
            .max(std::time::Duration::from_secs(1));
        loop {
            tokio::time::sleep(every).await;
            let now = plateau_core::time::now_ms();
            let stored_before = now - i64::try_from(keep.as_millis()).unwrap_or(i64::MAX);
            match plateau_store::apps::uploads::sweep(self.db(), now, stored_before).await {
                Ok(ids) => {
                    for id in &ids {
                        let _ = tokio::fs::remove_file(archive_path(&dir, id)).await;
                    }
                    if !ids.is_empty() {
                        tracing::info!(count = ids.len(), "apps: removed uploads nobody built");
                    }
                }
                Err(e) => tracing::warn!(error = %e, "apps: sweeping uploads"),
            }
        }
    }
}
