//! What a snapshot killed mid-upload leaves in a local volume backup
//! store. object_store's local directory writes a streamed object into a
//! staged file beside it, `<key>#<n>`, renamed into place once whole; a
//! process killed meanwhile (an agent snapshotting for a migration, an API
//! process taking a backup) leaves that file, which nothing lists and
//! nothing would ever remove. The agent's sweep (at its start and every
//! few seconds) removes those of this host's volumes under the volume's
//! lock: a snapshot holds it from its freeze to the end of its upload, so
//! a staged file found under the lock is nobody's. (The frozen copy a
//! killed snapshot leaves in `.backups` is swept the same way, in
//! [`super::moving`].) On S3 the parts of such an upload are an incomplete
//! multipart upload, which the bucket's lifecycle rule
//! `AbortIncompleteMultipartUpload` removes.

use std::path::{Path, PathBuf};

use plateau_store::apps::volumes;

use super::Volumes;

/// The staged uploads under `base` (the store's `volumes` directory:
/// `<org>/<volume>/<name>#<n>`), each with its volume's id.
pub fn staged_files(base: &Path) -> Vec<(String, PathBuf)> {
    let mut found = Vec::new();
    let dirs = |p: &Path| {
        std::fs::read_dir(p)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .collect::<Vec<_>>()
    };
    for org in dirs(base) {
        for volume in dirs(&org.path()) {
            let id = volume.file_name().to_string_lossy().into_owned();
            for file in std::fs::read_dir(volume.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                if file.file_name().to_string_lossy().contains('#') {
                    found.push((id.clone(), file.path()));
                }
            }
        }
    }
    found
}

impl Volumes {
    /// Removes the staged uploads killed snapshots of this host's volumes
    /// left in a local backup store, each under its volume's lock.
    pub(crate) async fn sweep_staged(&self) {
        let Some(root) = &self.inner.local_root else {
            return;
        };
        for (id, path) in staged_files(&root.join("volumes")) {
            // Another host's volume is its host's to sweep.
            match volumes::get_any(&self.inner.db, &id).await {
                Ok(Some(v)) if v.host_id == self.inner.host_id => {}
                _ => continue,
            }
            let Ok(_held) = self.inner.locks.lock(&id).await else {
                continue;
            };
            if std::fs::remove_file(&path).is_ok() {
                tracing::info!(file = %path.display(), "apps: removed the upload an interrupted volume snapshot left");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use object_store::ObjectStore;
    use object_store::buffered::BufWriter;
    use object_store::path::Path as ObjectPath;
    use tokio::io::AsyncWriteExt as _;

    use super::*;

    /// An upload cut off as a kill cuts it (the writer never finishes nor
    /// drops) leaves a staged file the sweep finds by its volume; a
    /// finished backup is not a leftover.
    #[tokio::test]
    async fn a_killed_upload_leaves_a_staged_file_the_sweep_finds() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> =
            Arc::new(object_store::local::LocalFileSystem::new_with_prefix(dir.path()).unwrap());
        let part = plateau_object_store::LOCAL_PART_SIZE;
        let done = super::super::backup::key("org_1", "vol_done", "bkp_1");
        let mut whole = BufWriter::with_capacity(store.clone(), ObjectPath::from(done), part);
        whole.write_all(&vec![7u8; 3 * part]).await.unwrap();
        whole.shutdown().await.unwrap();
        let cut = super::super::backup::key("org_1", "vol_cut", "mov_1");
        let mut killed = BufWriter::with_capacity(store.clone(), ObjectPath::from(cut), part);
        killed.write_all(&vec![7u8; 3 * part]).await.unwrap();
        killed.flush().await.unwrap();
        std::mem::forget(killed);
        let found = staged_files(&dir.path().join("volumes"));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(found[0].0, "vol_cut");
        let name = found[0]
            .1
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with("mov_1.vol#"), "{name}");
        std::fs::remove_file(&found[0].1).unwrap();
        assert!(staged_files(&dir.path().join("volumes")).is_empty());
        let listed: Vec<_> = futures::TryStreamExt::try_collect::<Vec<_>>(store.list(None))
            .await
            .unwrap();
        assert_eq!(listed.len(), 1, "the finished backup stays");
    }
}
