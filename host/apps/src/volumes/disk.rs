//! One volume on this host's disk: a sparse ext4 image of the volume's
//! size (`<volumes>/<id>/image.ext4`, no blocks reserved for root, so a
//! write past the size fails with ENOSPC for every user), loop-mounted at
//! `<volumes>/<id>/mnt`. An image exists only whole: it is made (by
//! `mkfs.ext4`, or by a restore) as `image.partial` and renamed.
//!
//! Consistent copies for backups: the mounted filesystem is frozen
//! (`fsfreeze`, which flushes it first) while its image is copied
//! (`cp --reflink=auto --sparse=always`: a clone where the disk can, the
//! data blocks only otherwise), and thawed whatever the copy did.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where one volume lives.
#[derive(Clone, Debug)]
pub struct Disk {
    pub dir: PathBuf,
    pub image: PathBuf,
    /// An image being made: never mounted, removed by the next try.
    pub partial: PathBuf,
    pub mount: PathBuf,
}

impl Disk {
    pub fn of(root: &Path, id: &str) -> Disk {
        let dir = root.join(id);
        Disk {
            image: dir.join("image.ext4"),
            partial: dir.join("image.partial"),
            mount: dir.join("mnt"),
            dir,
        }
    }

    /// Makes the empty filesystem of `size_gb` GB (10^9 bytes, as the
    /// plan counts them) unless the image exists.
    pub fn make(&self, size_gb: i64) -> Result<(), String> {
        if self.image.exists() {
            return Ok(());
        }
        self.start_partial(size_gb)?;
        run(Command::new("mkfs.ext4")
            .args([
                "-q",
                "-F",
                "-m",
                "0",
                "-E",
                "lazy_itable_init=1,lazy_journal_init=1",
            ])
            .arg(&self.partial))?;
        self.finish_partial()
    }

    /// Starts `image.partial` afresh: empty and sparse, `size_gb` long.
    pub fn start_partial(&self, size_gb: i64) -> Result<std::fs::File, String> {
        std::fs::create_dir_all(&self.dir).map_err(|e| io("the volume directory", e))?;
        let _ = std::fs::remove_file(&self.partial);
        let file = std::fs::OpenOptions::new()
            .create_new(true)
            .write(true)
            .open(&self.partial)
            .map_err(|e| io("the volume image", e))?;
        file.set_len(u64::try_from(size_gb).unwrap_or(1) * 1_000_000_000)
            .map_err(|e| io("the volume image", e))?;
        Ok(file)
    }

    /// Makes the partial image the volume's, durably.
    pub fn finish_partial(&self) -> Result<(), String> {
        std::fs::File::open(&self.partial)
            .and_then(|f| f.sync_all())
            .map_err(|e| io("the volume image", e))?;
        std::fs::rename(&self.partial, &self.image).map_err(|e| io("the volume image", e))?;
        std::fs::File::open(&self.dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| io("the volume directory", e))
    }

    /// Whether the image was made from snapshot `key` (a move's).
    pub fn made_from(&self, key: &str) -> bool {
        std::fs::read_to_string(self.dir.join("made-from")).is_ok_and(|k| k == key)
    }

    /// Notes that the image was made from snapshot `key`.
    pub fn note_made_from(&self, key: &str) -> Result<(), String> {
        std::fs::write(self.dir.join("made-from"), key).map_err(|e| io("the volume's origin", e))
    }

    /// Whether the image is mounted at the mount point.
    pub fn mounted(&self) -> bool {
        is_mounted(&self.mount)
    }

    /// Mounts the image (checked by `e2fsck -p` first, as after a crash)
    /// unless it is mounted.
    pub fn mount(&self) -> Result<(), String> {
        if self.mounted() {
            return Ok(());
        }
        std::fs::create_dir_all(&self.mount).map_err(|e| io("the mount point", e))?;
        // 0 and 1: clean or repaired; more: it needs a person.
        let fsck = Command::new("e2fsck")
            .args(["-p"])
            .arg(&self.image)
            .output()
            .map_err(|e| io("e2fsck", e))?;
        if fsck.status.code().is_none_or(|c| c > 1) {
            return Err(format!(
                "the volume's filesystem needs repair: {}",
                String::from_utf8_lossy(&fsck.stdout).trim()
            ));
        }
        run(Command::new("mount")
            .args(["-o", "loop,nosuid,nodev"])
            .arg(&self.image)
            .arg(&self.mount))
    }

    /// Unmounts (freeing the loop device) and removes everything.
    pub fn remove(&self) -> Result<(), String> {
        if self.mounted() {
            run(Command::new("umount").arg(&self.mount))?;
        }
        match std::fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(io("the volume", e)),
            _ => Ok(()),
        }
    }

    /// Copies the mounted filesystem's image to `to`, frozen meanwhile.
    pub fn copy_frozen(&self, to: &Path) -> Result<(), String> {
        run(Command::new("fsfreeze").arg("--freeze").arg(&self.mount))?;
        let copied = run(Command::new("cp")
            .args(["--reflink=auto", "--sparse=always"])
            .arg(&self.image)
            .arg(to));
        let thawed = self.thaw();
        copied.and(thawed)
    }

    /// Thaws the filesystem; one not frozen is left as it is. A freeze
    /// whose holder died (its lock released) is undone by the next
    /// observation of the volume.
    pub fn thaw(&self) -> Result<(), String> {
        let out = Command::new("fsfreeze")
            .arg("--unfreeze")
            .arg(&self.mount)
            .output()
            .map_err(|e| io("fsfreeze", e))?;
        let said = String::from_utf8_lossy(&out.stderr);
        if out.status.success() || said.contains("Invalid argument") {
            Ok(())
        } else {
            Err(format!("fsfreeze --unfreeze: {}", said.trim()))
        }
    }
}

/// Whether a filesystem is mounted at `path` (in this mount namespace).
pub fn is_mounted(path: &Path) -> bool {
    let Ok(table) = std::fs::read_to_string("/proc/self/mountinfo") else {
        return false;
    };
    let path = path.to_string_lossy();
    table
        .lines()
        .any(|l| l.split(' ').nth(4) == Some(path.as_ref()))
}

fn run(cmd: &mut Command) -> Result<(), String> {
    let name = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd.output().map_err(|e| io(&name, e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{name} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ))
    }
}

fn io(what: &str, e: std::io::Error) -> String {
    format!("{what}: {e}")
}
