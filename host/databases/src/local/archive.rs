//! Backups of a local cluster (issue 32), in the backup store
//! (`plateau-object-store`: a directory, or `s3://`): the leader archives
//! each WAL segment into the cluster's spool ([`conf::WAL_SPOOL`]) with a
//! shell `archive_command`, and the host ships the spool to
//! `<cluster>/wal/<segment>`; a base backup is a tar of the leader's data
//! directory between `pg_backup_start` and `pg_backup_stop`, streamed to
//! `<cluster>/base/<id>.tar`, its backup label beside it
//! (`<id>.label`, `<id>.map`). Why a spool: `archive_command` runs as the
//! cluster's own user, which must never hold the store's credentials.

use std::path::{Path, PathBuf};

use bytes::Bytes;
use futures::StreamExt as _;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStoreExt as _, PutPayload, WriteMultipart};
use sqlx::Connection as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::members::{EMPTY_DIRS, SKIP_FILES};
use super::{LocalProvider, conf};
use crate::spec::{BaseBackup, Credentials, Placement};
use crate::{Error, Result};

/// How long a flush waits for the leader to archive its segment.
const ARCHIVE_WITHIN: std::time::Duration = std::time::Duration::from_secs(30);

fn store_err(e: object_store::Error) -> Error {
    Error::Unavailable(format!("backup store: {e}"))
}

/// The key of a WAL file of `cluster`.
pub(super) fn wal_key(cluster: &str, name: &str) -> ObjectPath {
    ObjectPath::from(format!("{cluster}/wal/{name}"))
}

/// The key of a file of base backup `id` (`tar`, `label`, `map`).
pub(super) fn base_key(cluster: &str, id: &str, ext: &str) -> ObjectPath {
    ObjectPath::from(format!("{cluster}/base/{id}.{ext}"))
}

/// The segment number of a WAL file name, its timeline left out (the
/// names of one cluster's segments compare by it across timelines).
pub fn segment_of(name: &str) -> &str {
    name.get(8..24).unwrap_or(name)
}

impl LocalProvider {
    pub(super) fn spool_dir(&self, cluster: &str) -> PathBuf {
        self.cluster_dir(cluster).join(conf::WAL_SPOOL)
    }

    /// Makes the cluster's spool (owned by its user) if it is missing.
    pub(super) fn ensure_spool(&self, cluster: &str) -> Result<()> {
        let spool = self.spool_dir(cluster);
        if !spool.is_dir() && self.cluster_dir(cluster).is_dir() {
            self.mkdir(&spool)?;
        }
        Ok(())
    }

    /// Ships every whole file of the spool to the store, then removes it.
    pub(super) async fn ship(&self, cluster: &str) -> Result<u64> {
        self.ensure_spool(cluster)?;
        let mut names: Vec<String> = std::fs::read_dir(self.spool_dir(cluster))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| !n.ends_with(".part"))
            .collect();
        names.sort();
        let mut bytes = 0;
        for name in names {
            let path = self.spool_dir(cluster).join(&name);
            // Another round may have shipped it meanwhile.
            let Ok(data) = tokio::fs::read(&path).await else {
                continue;
            };
            bytes += data.len() as u64;
            self.config
                .backups
                .store
                .put(
                    &wal_key(cluster, &name),
                    PutPayload::from(Bytes::from(data)),
                )
                .await
                .map_err(store_err)?;
            let _ = std::fs::remove_file(&path);
        }
        Ok(bytes)
    }

    /// See [`crate::DatabaseProvider::flush_wal`].
    pub(super) async fn flush(
        &self,
        placement: &Placement,
        credentials: &Credentials,
    ) -> Result<(String, u64)> {
        let mut leader = self
            .admin_at(placement, credentials, placement.port)
            .await?;
        // A commit record stamped now: recovery to an earlier time stops
        // on it rather than running out of WAL before its target.
        sqlx::query("SELECT pg_catalog.txid_current()")
            .execute(&mut leader)
            .await?;
        let (segment,): (String,) =
            sqlx::query_as("SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_switch_wal())")
                .fetch_one(&mut leader)
                .await?;
        let deadline = tokio::time::Instant::now() + ARCHIVE_WITHIN;
        loop {
            let (last,): (Option<String>,) =
                sqlx::query_as("SELECT last_archived_wal FROM pg_catalog.pg_stat_archiver")
                    .fetch_one(&mut leader)
                    .await?;
            if last.is_some_and(|l| !l.ends_with(".partial") && l.as_str() >= segment.as_str()) {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Unavailable(format!(
                    "the leader did not archive WAL segment {segment} within {} s",
                    ARCHIVE_WITHIN.as_secs()
                )));
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let _ = leader.close().await;
        let bytes = self.ship(&placement.cluster).await?;
        Ok((segment, bytes))
    }

    /// See [`crate::DatabaseProvider::base_backup`].
    pub(super) async fn take_base_backup(
        &self,
        placement: &Placement,
        credentials: &Credentials,
        id: &str,
    ) -> Result<BaseBackup> {
        let started_at = plateau_core::time::now_ms();
        let data = self.data_dir(&placement.cluster, &placement.leader);
        let mut leader = self
            .admin_at(placement, credentials, placement.port)
            .await?;
        let (wal_start,): (String,) = sqlx::query_as(
            "SELECT pg_catalog.pg_walfile_name(pg_catalog.pg_backup_start($1, true))",
        )
        .bind(format!("plateau backup {id}"))
        .fetch_one(&mut leader)
        .await?;
        let tar = self
            .upload_tar(&data, &base_key(&placement.cluster, id, "tar"))
            .await;
        // Stopped whatever the copy did; it waits until the last segment
        // the backup needs is archived.
        let (label, map, wal_end): (String, String, String) = sqlx::query_as(
            "SELECT labelfile, spcmapfile, pg_catalog.pg_walfile_name(lsn) \
             FROM pg_catalog.pg_backup_stop(true)",
        )
        .fetch_one(&mut leader)
        .await?;
        let _ = leader.close().await;
        let size = tar?;
        let store = &self.config.backups.store;
        for (ext, text) in [("label", label), ("map", map)] {
            store
                .put(
                    &base_key(&placement.cluster, id, ext),
                    PutPayload::from(Bytes::from(text)),
                )
                .await
                .map_err(store_err)?;
        }
        self.ship(&placement.cluster).await?;
        Ok(BaseBackup {
            started_at,
            ended_at: plateau_core::time::now_ms(),
            size_bytes: size,
            wal_start,
            wal_end,
        })
    }

    /// Streams a tar of the data directory `data` (what a copy for a
    /// standby leaves behind left out) to `key`; its size.
    async fn upload_tar(&self, data: &Path, key: &ObjectPath) -> Result<u64> {
        let mut cmd = tokio::process::Command::new("tar");
        cmd.arg("-C").arg(data).args([
            "-cf",
            "-",
            "--warning=no-file-changed",
            "--warning=no-file-removed",
            "--warning=no-file-shrank",
            "--exclude=pgsql_tmp*",
        ]);
        for file in SKIP_FILES {
            cmd.arg(format!("--exclude=./{file}"));
        }
        for dir in EMPTY_DIRS {
            cmd.arg(format!("--exclude=./{dir}/*"));
        }
        cmd.arg(".")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let mut child = cmd.spawn()?;
        let mut out = child.stdout.take().expect("piped");
        let upload = self
            .config
            .backups
            .store
            .put_multipart(key)
            .await
            .map_err(store_err)?;
        let mut writer =
            WriteMultipart::new_with_chunk_size(upload, self.config.backups.part_size());
        let mut size = 0u64;
        let mut buf = vec![0u8; 256 * 1024];
        let copied: Result<()> = async {
            loop {
                let n = out.read(&mut buf).await?;
                if n == 0 {
                    return Ok(());
                }
                size += n as u64;
                writer.wait_for_capacity(4).await.map_err(store_err)?;
                writer.write(&buf[..n]);
            }
        }
        .await;
        let status = child.wait_with_output().await?;
        // tar's 1 is "some files changed while read": the WAL covers them.
        let tar_ok = matches!(status.status.code(), Some(0 | 1));
        if let Err(e) = copied {
            let _ = writer.abort().await;
            return Err(e);
        }
        if !tar_ok {
            let _ = writer.abort().await;
            return Err(Error::Unavailable(format!(
                "tar of {} failed: {}",
                data.display(),
                String::from_utf8_lossy(&status.stderr).trim()
            )));
        }
        writer.finish().await.map_err(store_err)?;
        Ok(size)
    }

    /// Streams object `key` into `tar -x` in `into`.
    pub(super) async fn download_tar(&self, key: &ObjectPath, into: &Path) -> Result<()> {
        let got = self
            .config
            .backups
            .store
            .get(key)
            .await
            .map_err(store_err)?;
        let mut stream = got.into_stream();
        let mut child = tokio::process::Command::new("tar")
            .arg("-C")
            .arg(into)
            .args(["-xf", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()?;
        let mut input = child.stdin.take().expect("piped");
        let fed: Result<()> = async {
            while let Some(chunk) = stream.next().await {
                input.write_all(&chunk.map_err(store_err)?).await?;
            }
            input.shutdown().await?;
            Ok(())
        }
        .await;
        drop(input);
        let out = child.wait_with_output().await?;
        fed?;
        if !out.status.success() {
            return Err(Error::Unavailable(format!(
                "unpacking a base backup: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(())
    }

    /// The names of the archived WAL files of `cluster`.
    pub(super) async fn archived_wal(&self, cluster: &str) -> Result<Vec<String>> {
        let prefix = ObjectPath::from(format!("{cluster}/wal"));
        let mut listed = self.config.backups.store.list(Some(&prefix));
        let mut names = Vec::new();
        while let Some(meta) = listed.next().await {
            let meta = meta.map_err(store_err)?;
            if let Some(name) = meta.location.filename() {
                names.push(name.to_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    /// See [`crate::DatabaseProvider::prune_backups`].
    pub(super) async fn prune(
        &self,
        cluster: &str,
        ids: &[String],
        wal_before: Option<&str>,
    ) -> Result<()> {
        let store = &self.config.backups.store;
        for id in ids {
            for ext in ["tar", "label", "map"] {
                match store.delete(&base_key(cluster, id, ext)).await {
                    Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                    Err(e) => return Err(store_err(e)),
                }
            }
        }
        if let Some(before) = wal_before {
            for name in self.archived_wal(cluster).await? {
                if !name.ends_with(".history") && segment_of(&name) < segment_of(before) {
                    match store.delete(&wal_key(cluster, &name)).await {
                        Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                        Err(e) => return Err(store_err(e)),
                    }
                }
            }
        }
        Ok(())
    }

    /// See [`crate::DatabaseProvider::drop_backups`].
    pub(super) async fn drop_all_backups(&self, cluster: &str) -> Result<()> {
        let store = &self.config.backups.store;
        let prefix = ObjectPath::from(cluster);
        let mut listed = store.list(Some(&prefix));
        let mut keys = Vec::new();
        while let Some(meta) = listed.next().await {
            keys.push(meta.map_err(store_err)?.location);
        }
        for key in keys {
            match store.delete(&key).await {
                Ok(()) | Err(object_store::Error::NotFound { .. }) => {}
                Err(e) => return Err(store_err(e)),
            }
        }
        Ok(())
    }
}
