//! The OS user a cluster's processes run as. When the host runs as root,
//! each cluster gets its own system user, named like the cluster
//! (`cch_...`), made on the cluster's first start and removed with it:
//! it owns the cluster's directory (mode 0700) and nothing else, so a
//! tenant who breaks out of Redis (its Lua, a module bug) holds neither
//! root nor another cluster's files. When the host is not root, the
//! processes run as the host's user, in the same 0700 directories.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use nix::unistd::{Gid, Uid, User};
use tokio::process::Command;

use crate::{Error, Result};

/// Who runs a cluster's processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessUser {
    pub uid: Uid,
    pub gid: Gid,
}

/// Whether this host gives each cluster its own user (it runs as root).
pub fn per_cluster() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The user name of `cluster`: its id, which is short enough (30 of the
/// 32 characters a name may have) and made only of `[a-z0-9_]`.
pub fn name(cluster: &str) -> Result<&str> {
    let well_formed = cluster.len() <= 32
        && cluster.starts_with(|c: char| c.is_ascii_lowercase())
        && cluster
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if well_formed {
        Ok(cluster)
    } else {
        Err(Error::Internal(format!(
            "{cluster:?} cannot name the user of a cache"
        )))
    }
}

fn lookup(name: &str) -> Result<Option<ProcessUser>> {
    let user = User::from_name(name).map_err(|e| Error::Internal(format!("reading users: {e}")))?;
    Ok(user.map(|u| ProcessUser {
        uid: u.uid,
        gid: u.gid,
    }))
}

/// The user of `cluster`, made (a system user and its group, no home, no
/// shell) if it does not exist yet; `None` when the host is not root.
/// Callers hold the provider's lock on user changes (`useradd` takes
/// `/etc/passwd` for itself).
pub async fn ensure(cluster: &str) -> Result<Option<ProcessUser>> {
    if !per_cluster() {
        return Ok(None);
    }
    let name = name(cluster)?;
    if let Some(user) = lookup(name)? {
        return Ok(Some(user));
    }
    let out = Command::new("useradd")
        .args(["--system", "--user-group", "--no-create-home"])
        .args(["--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin"])
        .args(["--comment", "plateau managed cache"])
        .arg(name)
        .output()
        .await
        .map_err(|e| Error::Unavailable(format!("cannot run useradd: {e}; install passwd")))?;
    if !out.status.success() {
        return Err(Error::Unavailable(format!(
            "useradd {name} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    lookup(name)?
        .map(Some)
        .ok_or_else(|| Error::Internal(format!("useradd made no user {name}")))
}

/// Removes the user of `cluster` (and its group), if the host made one.
pub async fn remove(cluster: &str) -> Result<()> {
    if !per_cluster() {
        return Ok(());
    }
    let name = name(cluster)?;
    if lookup(name)?.is_none() {
        return Ok(());
    }
    let out = Command::new("userdel")
        .arg(name)
        .output()
        .await
        .map_err(|e| Error::Unavailable(format!("cannot run userdel: {e}")))?;
    if !out.status.success() {
        return Err(Error::Unavailable(format!(
            "userdel {name} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Gives `dir` (a cluster's directory) and everything in it to `user`,
/// the directory itself mode 0700. Files the host wrote since the last
/// start (configuration, certificates, a seed) become the user's.
pub fn own(dir: &Path, user: Option<ProcessUser>) -> Result<()> {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    let Some(user) = user else {
        return Ok(());
    };
    fn walk(path: &Path, user: ProcessUser) -> Result<()> {
        std::os::unix::fs::lchown(path, Some(user.uid.as_raw()), Some(user.gid.as_raw()))?;
        if std::fs::symlink_metadata(path)?.is_dir() {
            for entry in std::fs::read_dir(path)? {
                walk(&entry?.path(), user)?;
            }
        }
        Ok(())
    }
    walk(dir, user)
}

/// Lets the clusters' users reach `root` (`<data dir>/caches`): search
/// permission on every directory above it, and on `root` itself search
/// without listing (0711), so no cluster learns of the others.
pub fn open_path(root: &Path) -> Result<()> {
    if !per_cluster() {
        return Ok(());
    }
    for dir in root.ancestors().skip(1) {
        let Ok(meta) = std::fs::metadata(dir) else {
            continue;
        };
        let mode = meta.permissions().mode();
        if mode & 0o001 == 0 {
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | 0o001))?;
        }
    }
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o711))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_id_names_its_user_and_nothing_else_does() {
        assert_eq!(
            name("cch_01jf3k8x2y9z7w6v5t4s3r2q1p").unwrap(),
            "cch_01jf3k8x2y9z7w6v5t4s3r2q1p"
        );
        for bad in [
            "",
            "root:x",
            "cch_../etc",
            "-rf",
            "Cch_1",
            "c".repeat(33).as_str(),
        ] {
            assert!(name(bad).is_err(), "{bad:?}");
        }
    }
}
