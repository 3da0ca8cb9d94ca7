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

use nix::sys::signal::Signal;

use super::{LocalProvider, supervise};
use crate::spec::{ClusterSpec, Placement};
use crate::{Error, Result};

pub use plateau_os_user::OsUser as Owner;

/// What cluster users' names start with.
pub const PREFIX: &str = "pgc_";
/// The user of the templates (and of clusters made before per-cluster
/// users).
pub const TEMPLATES: &str = "postgres";

/// The user of cluster `id` (`dbs_<ulid>`).
pub fn cluster_user(id: &str) -> String {
    plateau_os_user::resource_user(PREFIX, id)
}

/// The user named `name`, if it exists.
pub fn find(name: &str) -> Result<Option<Owner>> {
    plateau_os_user::find(name).map_err(|e| Error::Internal(e.to_string()))
}

/// The user that owns `path`, if it has a name.
pub fn owner_of(path: &Path) -> Option<Owner> {
    plateau_os_user::owner_of(path)
}

/// The user `name`, made if it does not exist.
pub fn ensure(name: &str) -> Result<Owner> {
    plateau_os_user::ensure(name, "Plateau database cluster")
        .map_err(|e| Error::Unavailable(e.to_string()))
}

/// Removes a cluster's user (never another: only names with [`PREFIX`]).
pub fn remove(name: &str) {
    if let Err(e) = plateau_os_user::remove(name, PREFIX) {
        tracing::warn!(user = name, error = %e, "removing a cluster's user");
    }
}

/// Gives `path` and everything under it to `owner`.
pub fn chown_tree(path: &Path, owner: &Owner) -> Result<()> {
    Ok(plateau_os_user::own_tree(path, owner)?)
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
        self.stop_router(&placement.cluster).await;
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
