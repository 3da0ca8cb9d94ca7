//! Each app's user namespace: a range of [`SIZE`] host uids and gids
//! that the app's container ids 0..[`SIZE`] map to, and the image's
//! rootfs copied with its owners shifted into that range, so that
//! container root is an unprivileged host user that owns nothing else.
//!
//! Ranges are claimed machine-wide under [`ROOT`]`/claims/<slot>` (slot
//! `n` is host ids `BASE + n * SIZE ..`), a file holding the runner's
//! state directory and the app's id, written under a lock; the claim is
//! kept across restarts (so a restarted server finds the range its copies
//! were made for) and reclaimed, with its copies, once that directory is
//! gone. The shifted copies live in [`ROOT`]`/rootfs/<slot>/<config hex>`:
//! `ROOT` is root's with mode 0711 and `<slot>` belongs to the range's
//! root with mode 0700, as runc mounts the rootfs from inside the user
//! namespace and needs to reach it.
//!
//! **Invariant:** a range belongs to one app of one runner on the whole
//! machine; a shifted copy exists only complete (made in a `.partial`
//! directory and renamed).

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::{Error, Result};

/// Where ranges are claimed and shifted rootfs copies kept.
pub const ROOT: &str = "/var/lib/plateau-userns";
/// Ids per app: container ids `0..SIZE`.
pub const SIZE: u32 = 1 << 16;
/// The first host id handed out, far above distributions' users and
/// `/etc/subuid` ranges.
const BASE: u32 = 1 << 30;
/// How many ranges fit below `u32::MAX`.
const SLOTS: u32 = (u32::MAX - BASE) / SIZE;

/// One app's host ids.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdRange {
    slot: u32,
}

impl IdRange {
    /// The host id container id 0 maps to.
    pub fn base(&self) -> u32 {
        BASE + self.slot * SIZE
    }

    /// The range of `app_id` run by the runner whose state is `owner`,
    /// claimed on first use.
    pub fn for_app(owner: &Path, app_id: &str) -> Result<IdRange> {
        let owner = fs::canonicalize(owner).unwrap_or_else(|_| owner.to_owned());
        let key = format!("{}\n{app_id}\n", owner.display());
        static KNOWN: OnceLock<Mutex<HashMap<String, u32>>> = OnceLock::new();
        let known = KNOWN.get_or_init(Default::default);
        if let Some(slot) = known.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(IdRange { slot: *slot });
        }
        let slot = claim(&key)?;
        known
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, slot);
        Ok(IdRange { slot })
    }

    /// The rootfs at `rootfs` (`.../<config hex>/rootfs`) with its owners
    /// shifted into this range, copied on first use.
    pub fn rootfs(&self, rootfs: &Path) -> Result<PathBuf> {
        let image = rootfs
            .parent()
            .and_then(Path::file_name)
            .ok_or_else(|| fail(format!("{} has no image directory", rootfs.display())))?;
        let dir = Path::new(ROOT).join("rootfs").join(self.slot.to_string());
        let shifted = dir.join(image);
        if shifted.is_dir() {
            return Ok(shifted);
        }
        fs::create_dir_all(&dir)
            .map_err(|e| fail(format!("cannot create {}: {e}", dir.display())))?;
        fs::set_permissions(ROOT, fs::Permissions::from_mode(0o711))
            .and_then(|()| fs::set_permissions(&dir, fs::Permissions::from_mode(0o700)))
            .and_then(|()| std::os::unix::fs::chown(&dir, Some(self.base()), Some(self.base())))
            .map_err(|e| fail(format!("cannot prepare {}: {e}", dir.display())))?;
        remove_abandoned(&dir);
        // Unique to this call: launches of one app may copy at once.
        static COPIES: AtomicU64 = AtomicU64::new(0);
        let mut partial = shifted.clone().into_os_string();
        let copy = COPIES.fetch_add(1, Ordering::Relaxed);
        partial.push(format!(".partial-{}-{copy}", std::process::id()));
        let partial = PathBuf::from(partial);
        let _ = fs::remove_dir_all(&partial);
        let copied = Command::new("cp")
            .args(["-a", "--reflink=auto"])
            .arg(rootfs)
            .arg(&partial)
            .output()
            .map_err(|e| fail(format!("cannot run cp: {e}")))?;
        if !copied.status.success() {
            let _ = fs::remove_dir_all(&partial);
            return Err(fail(format!(
                "cannot copy the rootfs: {}",
                String::from_utf8_lossy(&copied.stderr).trim()
            )));
        }
        let shifted_ok = shift(&partial, self.base()).and_then(|()| {
            fs::rename(&partial, &shifted).or_else(|e| match shifted.is_dir() {
                // Another runner made the same copy meanwhile.
                true => fs::remove_dir_all(&partial),
                false => Err(e),
            })
        });
        if let Err(e) = shifted_ok {
            let _ = fs::remove_dir_all(&partial);
            return Err(fail(format!("cannot shift the rootfs's owners: {e}")));
        }
        Ok(shifted)
    }
}

/// Removes the partial copies in `dir` of processes that are gone.
fn remove_abandoned(dir: &Path) {
    for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let pid = name
            .split_once(".partial-")
            .and_then(|(_, rest)| rest.split('-').next());
        if let Some(pid) = pid
            && !Path::new("/proc").join(pid).exists()
        {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Gives every entry under `path` the owner `base + uid` (ids past the
/// range become its `nobody`), keeping set-id bits that chown clears.
fn shift(path: &Path, base: u32) -> std::io::Result<()> {
    let meta = fs::symlink_metadata(path)?;
    let id = |n: u32| base + if n < SIZE { n } else { SIZE - 2 };
    std::os::unix::fs::lchown(path, Some(id(meta.uid())), Some(id(meta.gid())))?;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    fs::set_permissions(path, fs::Permissions::from_mode(meta.mode() & 0o7777))?;
    if meta.is_dir() {
        for entry in fs::read_dir(path)? {
            shift(&entry?.path(), base)?;
        }
    }
    Ok(())
}

/// Finds `key`'s slot or claims a free one, reclaiming those whose
/// runner's state directory is gone.
fn claim(key: &str) -> Result<u32> {
    let claims = Path::new(ROOT).join("claims");
    fs::create_dir_all(&claims)
        .map_err(|e| fail(format!("cannot create {}: {e}", claims.display())))?;
    let lock = File::create(claims.join(".lock"))
        .and_then(|f| f.lock().map(|()| f))
        .map_err(|e| fail(format!("cannot lock the claims: {e}")))?;
    let mut taken = std::collections::HashSet::new();
    for entry in fs::read_dir(&claims).into_iter().flatten().flatten() {
        let Some(slot) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<u32>().ok())
        else {
            continue;
        };
        let text = fs::read_to_string(entry.path()).unwrap_or_default();
        if text == key {
            return Ok(slot);
        }
        let owner = text.lines().next().unwrap_or_default();
        if !owner.is_empty() && !Path::new(owner).exists() {
            let _ = fs::remove_dir_all(Path::new(ROOT).join("rootfs").join(slot.to_string()));
            let _ = fs::remove_file(entry.path());
            continue;
        }
        taken.insert(slot);
    }
    let slot = (0..SLOTS)
        .find(|s| !taken.contains(s))
        .ok_or_else(|| fail("every user id range is taken".to_owned()))?;
    // A copy left by a reclaimed claim must not be reused.
    let _ = fs::remove_dir_all(Path::new(ROOT).join("rootfs").join(slot.to_string()));
    let path = claims.join(slot.to_string());
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut f| f.write_all(key.as_bytes()).and_then(|()| f.sync_all()))
        .map_err(|e| fail(format!("cannot claim {}: {e}", path.display())))?;
    drop(lock);
    Ok(slot)
}

fn fail(what: String) -> Error {
    Error::NotRunnable(format!("cannot prepare the app's user namespace: {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_stay_below_the_largest_id() {
        let last = IdRange { slot: SLOTS - 1 };
        assert!(u64::from(last.base()) + u64::from(SIZE) <= u64::from(u32::MAX));
        assert_eq!(IdRange { slot: 1 }.base(), BASE + SIZE);
    }
}
