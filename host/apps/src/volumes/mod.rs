//! Volumes of apps (spec 4.4): storage with an enforced size that a
//! replica sees at the volume's `mountPath`, kept across redeploys,
//! restarts, pause and resume, with consistent backups.
//!
//! A volume is a resource of the managed-service kernel: the API writes
//! its row (`creating`, `deleting`) and the agent of the volume's host
//! reconciles it ([`Resources`] on [`Volumes`]): `apply` makes the image
//! ([`disk`]; a restored volume's from its backup, [`backup`]) and mounts
//! it, `observe` mounts it again after a reboot and thaws a freeze whose
//! holder died, `delete` waits until no replica uses it, then unmounts it
//! and removes the image. The apps plane launches an app's replicas with
//! its volumes that are placed and mounted here ([`mounted`]), and
//! relaunches them when that set changes.
//!
//! A backup is taken in the API process under the volume's lock, so no
//! reconcile runs meanwhile: the filesystem is frozen while its image is
//! copied, then the copy is stored through the volume backup store.

pub mod backup;
pub mod disk;
pub mod leftovers;
pub mod moving;

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use object_store::ObjectStore;
use plateau_core::id::new_id;
use plateau_kernel::{Failure, ResourceLocks, Resources};
use plateau_runner::VolumeMount;
use plateau_store::Db;
use plateau_store::apps::volume_moves;
use plateau_store::apps::volumes::{self, Volume};
use plateau_store::managed::{State, Table};
use serde::{Deserialize, Serialize};

use crate::Plane;
use disk::Disk;

/// How often a volume that asks for nothing is observed.
const OBSERVE_EVERY: Duration = Duration::from_secs(5);

/// Where the provider placed a volume (its row's `placement`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Placement {
    pub image: PathBuf,
    pub mount: PathBuf,
}

/// The volumes of this host's apps; cheap to clone.
#[derive(Clone)]
pub struct Volumes {
    inner: Arc<Inner>,
}

struct Inner {
    db: Db,
    /// `<data dir>/apps/volumes`: one directory per volume.
    root: PathBuf,
    store: Arc<dyn ObjectStore>,
    part_size: usize,
    /// The directory of a local backup store (its staged uploads are
    /// swept, [`leftovers`]).
    local_root: Option<PathBuf>,
    locks: ResourceLocks,
    host_id: String,
    /// The apps plane, in the agent: whose replicas use which volume.
    plane: OnceLock<Plane>,
}

/// A backup stored, not yet recorded.
pub struct Stored {
    pub id: String,
    pub object_key: String,
    pub size_bytes: i64,
}

impl Volumes {
    pub fn new(
        db: Db,
        root: PathBuf,
        store: plateau_object_store::Opened,
        locks: ResourceLocks,
        host_id: &str,
    ) -> Volumes {
        Volumes {
            inner: Arc::new(Inner {
                db,
                root,
                part_size: store.part_size(),
                local_root: store.local_root,
                store: store.store,
                locks,
                host_id: host_id.to_owned(),
                plane: OnceLock::new(),
            }),
        }
    }

    /// In the agent: the plane whose replicas a delete waits for.
    pub fn with_plane(&self, plane: Plane) {
        let _ = self.inner.plane.set(plane);
    }

    pub fn host_id(&self) -> &str {
        &self.inner.host_id
    }

    fn disk(&self, id: &str) -> Disk {
        Disk::of(&self.inner.root, id)
    }

    /// Takes a consistent backup of placed volume `v` and stores it; the
    /// caller records it. Holds the volume's lock throughout.
    pub async fn back_up(&self, v: &Volume) -> Result<Stored, String> {
        let id = new_id("bkp");
        let object_key = backup::key(&v.org_id, &v.id, &id);
        let size_bytes = self.snapshot(v, &id, &object_key).await?;
        Ok(Stored {
            id,
            object_key,
            size_bytes,
        })
    }

    /// Stores a consistent snapshot of placed volume `v` for its move to
    /// another runner ([`moving`]): its object key and the bytes stored.
    pub async fn snapshot_for_move(&self, v: &Volume) -> Result<(String, i64), String> {
        let id = new_id("mov");
        let object_key = backup::key(&v.org_id, &v.id, &id);
        let size_bytes = self.snapshot(v, &id, &object_key).await?;
        Ok((object_key, size_bytes))
    }

    /// Freezes volume `v`'s filesystem while its image is copied, then
    /// stores the copy as `object_key`; the bytes stored. Holds the
    /// volume's lock throughout, so no reconcile runs meanwhile.
    async fn snapshot(&self, v: &Volume, name: &str, object_key: &str) -> Result<i64, String> {
        let _held = self
            .inner
            .locks
            .lock(&v.id)
            .await
            .map_err(|e| format!("locking the volume: {e}"))?;
        let disk = self.disk(&v.id);
        if !disk.mounted() {
            return Err(format!("volume {} is not mounted on this host yet", v.id));
        }
        let scratch = self.inner.root.join(".backups");
        std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
        // Named after the volume: a copy left by a killed process is
        // removed under the volume's lock (`moving::sweep`).
        let copy = scratch.join(format!("{}.{name}.img", v.id));
        let (d, c) = (disk.clone(), copy.clone());
        let frozen = tokio::task::spawn_blocking(move || d.copy_frozen(&c))
            .await
            .map_err(|e| e.to_string())?;
        let stored = match frozen {
            Ok(()) => {
                backup::store(&self.inner.store, self.inner.part_size, object_key, &copy).await
            }
            Err(e) => Err(e),
        };
        let _ = std::fs::remove_file(&copy);
        stored
    }

    /// Removes a stored backup nobody records (refused by the plan).
    pub async fn forget(&self, object_key: &str) {
        if let Err(e) = backup::delete(&self.inner.store, object_key).await {
            tracing::warn!(key = object_key, error = %e, "removing an unrecorded volume backup");
        }
    }

    /// Makes volume `v`'s image (restoring its backup) unless it exists,
    /// then mounts it.
    async fn provide(&self, v: &Volume) -> Result<Placement, String> {
        let disk = self.disk(&v.id);
        let arriving = volume_moves::of_volume(&self.inner.db, &v.id)
            .await
            .map_err(|e| e.to_string())?
            .filter(|m| m.to_host_id == self.inner.host_id);
        if let Some(m) = &arriving
            && disk.image.exists()
            && !disk.made_from(&m.object_key)
        {
            // An image an earlier move left here: older than this one.
            let d = disk.clone();
            blocking(move || d.remove()).await?;
        }
        if !disk.image.exists() {
            match (&arriving, &v.source_backup_id) {
                // Moving here with its app: made from the move's snapshot.
                (Some(m), _) => {
                    let partial = disk.start_partial(v.size_gb)?;
                    backup::restore(&self.inner.store, &m.object_key, partial).await?;
                    disk.finish_partial()?;
                    disk.note_made_from(&m.object_key)?;
                }
                (None, Some(backup_id)) => {
                    let b = volumes::backup(&self.inner.db, &v.org_id, backup_id)
                        .await
                        .map_err(|e| e.to_string())?
                        .ok_or_else(|| format!("backup {backup_id} is gone"))?;
                    let partial = disk.start_partial(v.size_gb)?;
                    backup::restore(&self.inner.store, &b.object_key, partial).await?;
                    disk.finish_partial()?;
                }
                (None, None) => {
                    let (d, size) = (disk.clone(), v.size_gb);
                    blocking(move || d.make(size)).await?;
                }
            }
        }
        let d = disk.clone();
        blocking(move || d.mount()).await?;
        Ok(Placement {
            image: disk.image,
            mount: disk.mount,
        })
    }
}

async fn blocking(f: impl FnOnce() -> Result<(), String> + Send + 'static) -> Result<(), String> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| e.to_string())?
}

/// The volumes of `app_id` a replica launched now gets: those placed,
/// not being deleted, and mounted on this host. A placed volume that is
/// not mounted (after a reboot, until its reconcile mounts it) fails
/// the launch rather than give the app an empty directory.
pub async fn mounted(db: &Db, app_id: &str) -> Result<Vec<(String, VolumeMount)>, String> {
    let mut out = Vec::new();
    for v in volumes::list(db, app_id).await.map_err(|e| e.to_string())? {
        if v.placement.is_empty() || v.status == "deleting" {
            continue;
        }
        let p: Placement =
            serde_json::from_str(&v.placement).map_err(|e| format!("volume {}: {e}", v.id))?;
        if !disk::is_mounted(&p.mount) {
            return Err(format!(
                "volume {} ({}) is not mounted on this host yet",
                v.id, v.name
            ));
        }
        out.push((
            v.id,
            VolumeMount {
                source: p.mount,
                path: v.mount_path,
            },
        ));
    }
    Ok(out)
}

#[async_trait]
impl Resources for Volumes {
    fn kind(&self) -> &'static str {
        "volume"
    }

    fn table(&self) -> Table {
        Table::Volumes
    }

    fn db(&self) -> &Db {
        &self.inner.db
    }

    fn locks(&self) -> &ResourceLocks {
        &self.inner.locks
    }

    fn host_id(&self) -> &str {
        &self.inner.host_id
    }

    fn every(&self, _state: &State) -> Duration {
        OBSERVE_EVERY
    }

    async fn apply(&self, state: &State) -> Result<String, Failure> {
        let v = volumes::get_any(&self.inner.db, &state.id)
            .await?
            .ok_or_else(|| format!("volume {} is gone", state.id))?;
        let placement = self.provide(&v).await?;
        Ok(serde_json::to_string(&placement)?)
    }

    async fn observe(&self, state: &State) -> Result<bool, Failure> {
        let disk = self.disk(&state.id);
        if !disk.image.exists() {
            return Ok(false);
        }
        let d = disk.clone();
        // Under the lock no backup runs: a frozen filesystem here is one
        // whose backup died.
        blocking(move || d.mount().and_then(|()| d.thaw())).await?;
        Ok(true)
    }

    async fn delete(&self, state: &State) -> Result<(), Failure> {
        if let Some(plane) = self.inner.plane.get()
            && plane.uses_volume(&state.id)
        {
            return Err(
                "replicas still use the volume; they are being relaunched without it".into(),
            );
        }
        let d = self.disk(&state.id);
        blocking(move || d.remove()).await?;
        Ok(())
    }
}

/// Where the volumes of a data directory live.
pub fn root(data_dir: &Path) -> PathBuf {
    data_dir.join("apps/volumes")
}
