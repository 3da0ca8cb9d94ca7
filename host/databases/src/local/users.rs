//! The OS users of a local cluster's processes. When the host runs as
//! root, every cluster runs under a system user of its own
//! (`pgc_<ulid>`, made with the cluster and removed with it) that owns its
//! directory, mode 0700: a server of one cluster, even one whose
//! superuser a tenant took, cannot read another cluster's files (its data,
//! its pooler's `userlist.txt` with the host's password) nor signal its
//! processes or attach to its shared memory. The per-version templates
//! belong to `postgres` and hold no customer's data. Clusters made before
//! (owned by `postgres`) are moved to a user of their own by the first
//! supervision round: stopped, given to the new user, started again.
//! When the host is not root, everything runs as the host's own user.

use std::path::Path;
use std::sync::Mutex;

use nix::sys::signal::Signal;

use super::{LocalProvider, supervise};
use crate::spec::{ClusterSpec, Placement};
use crate::{Error, Result};

/// What cluster users' names start with.
pub const PREFIX: &str = "pgc_";
/// The user of the templates (and of clusters made before per-cluster
/// users).
pub const TEMPLATES: &str = "postgres";

/// `useradd` and `userdel` lock the user database; one at a time.
static ACCOUNTS: Mutex<()> = Mutex::new(());

/// An OS user: name, uid, gid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Owner {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// The user of cluster `id` (`dbs_<ulid>`): at most 32 characters.
pub fn cluster_user(id: &str) -> String {
    let tail: String = id
        .strip_prefix("dbs_")
        .unwrap_or(id)
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .take(32 - PREFIX.len())
        .collect();
    format!("{PREFIX}{tail}")
}

/// The user named `name`, if it exists.
pub fn find(name: &str) -> Result<Option<Owner>> {
    Ok(nix::unistd::User::from_name(name)
        .map_err(|e| Error::Internal(format!("looking up the user {name}: {e}")))?
        .map(|u| Owner {
            name: u.name,
            uid: u.uid.as_raw(),
            gid: u.gid.as_raw(),
        }))
}

/// The user that owns `path`, if it has a name.
pub fn owner_of(path: &Path) -> Option<Owner> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    let user = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(meta.uid())).ok()??;
    Some(Owner {
        name: user.name,
        uid: meta.uid(),
        gid: meta.gid(),
    })
}

/// The user `name`, made as a system user with a group of its own, no
/// home and no shell when it does not exist.
pub fn ensure(name: &str) -> Result<Owner> {
    let _one = ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(owner) = find(name)? {
        return Ok(owner);
    }
    let out = std::process::Command::new("useradd")
        .args([
            "--system",
            "--user-group",
            "--no-create-home",
            "--home-dir",
            "/nonexistent",
            "--shell",
            "/usr/sbin/nologin",
            "--comment",
            "Plateau database cluster",
            name,
        ])
        .output()
        .map_err(|e| Error::Unavailable(format!("cannot run useradd (install passwd): {e}")))?;
    if !out.status.success() {
        return Err(Error::Unavailable(format!(
            "useradd {name} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    find(name)?.ok_or_else(|| Error::Internal(format!("useradd made no user {name}")))
}

/// Removes a cluster's user (never another: only names with [`PREFIX`]).
pub fn remove(name: &str) {
    if !name.starts_with(PREFIX) {
        return;
    }
    let _one = ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
    if matches!(find(name), Ok(Some(_))) {
        match std::process::Command::new("userdel").arg(name).output() {
            Ok(out) if out.status.success() => {}
            Ok(out) => {
                tracing::warn!(user = name, error = %String::from_utf8_lossy(&out.stderr).trim(), "removing a cluster's user")
            }
            Err(e) => tracing::warn!(user = name, error = %e, "removing a cluster's user"),
        }
    }
}

/// Gives `path` and everything under it to `owner` (symbolic links
/// themselves, never what they point to).
pub fn chown_tree(path: &Path, owner: &Owner) -> Result<()> {
    std::os::unix::fs::lchown(path, Some(owner.uid), Some(owner.gid))?;
    let meta = std::fs::symlink_metadata(path)?;
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            chown_tree(&entry?.path(), owner)?;
        }
    }
    Ok(())
}

impl LocalProvider {
    /// Moves a cluster whose directory does not belong to its own user yet
    /// (made before per-cluster users) to one: a fast shutdown of its
    /// processes, its files given to the new user, its leader started
    /// again (the supervision round that called starts the rest). Nothing
    /// when the host is not root or the cluster is already moved.
    pub(super) async fn move_to_own_user(
        &self,
        spec: &ClusterSpec,
        placement: &Placement,
    ) -> Result<()> {
        let dir = self.cluster_dir(&placement.cluster);
        let name = cluster_user(&placement.cluster);
        if !self.root || owner_of(&dir).is_none_or(|o| o.name == name) {
            return Ok(());
        }
        tracing::warn!(database = %placement.cluster, user = %name, "moving a database to an OS user of its own; it restarts");
        if let Some(pid) = supervise::pooler_pid(&self.pooler_dir(&placement.cluster)) {
            supervise::stop_pid(pid, Signal::SIGINT).await;
        }
        for node in placement.nodes() {
            if let Some(pid) =
                supervise::postgres_pid(&self.data_dir(&placement.cluster, &node.name))
            {
                supervise::stop_pid(pid, Signal::SIGINT).await;
            }
        }
        let owner = ensure(&name)?;
        chown_tree(&dir, &owner)?;
        let leader = self.data_dir(&placement.cluster, &placement.leader);
        supervise::start_postgres(Some(&name), &self.bin(&spec.version)?, &leader).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cluster_users_fit_in_32_characters() {
        let name = cluster_user("dbs_01kb0xq3m8w4v9t2r5n7p6c1a0");
        assert_eq!(name, "pgc_01kb0xq3m8w4v9t2r5n7p6c1a0");
        assert!(name.len() <= 32);
        assert!(cluster_user("x\"; rm -rf /").len() <= 32);
        assert_eq!(cluster_user("a/b c"), "pgc_abc");
    }
}
