//! The OS user a cluster's processes run as. When the host runs as root,
//! each cluster gets its own system user, named like the cluster
//! (`cch_...`), made on the cluster's first start and removed with it:
//! it owns the cluster's directory (mode 0700) and nothing else, so a
//! tenant who breaks out of Redis (its Lua, a module bug) holds neither
//! root nor another cluster's files. When the host is not root, the
//! processes run as the host's user, in the same 0700 directories.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use plateau_os_user::OsUser;

use crate::{Error, Result};

/// What cache users' names start with (a cache's id starts the same way).
const PREFIX: &str = "cch_";

/// The user name of `cluster`.
fn name(cluster: &str) -> String {
    plateau_os_user::resource_user(PREFIX, cluster)
}

/// The user of `cluster`, made if it does not exist yet; `None` when the
/// host is not root.
pub async fn ensure(cluster: &str) -> Result<Option<OsUser>> {
    if !plateau_os_user::per_resource() {
        return Ok(None);
    }
    let name = name(cluster);
    let user = tokio::task::spawn_blocking(move || {
        plateau_os_user::ensure(&name, "plateau managed cache")
    })
    .await
    .map_err(|e| Error::Internal(e.to_string()))?
    .map_err(|e| Error::Unavailable(e.to_string()))?;
    Ok(Some(user))
}

/// Removes the user of `cluster` (and its group), if the host made one.
pub async fn remove(cluster: &str) -> Result<()> {
    if !plateau_os_user::per_resource() {
        return Ok(());
    }
    let name = name(cluster);
    tokio::task::spawn_blocking(move || plateau_os_user::remove(&name, PREFIX))
        .await
        .map_err(|e| Error::Internal(e.to_string()))?
        .map_err(|e| Error::Unavailable(e.to_string()))
}

/// Gives `dir` (a cluster's directory) and everything in it to `user`,
/// the directory itself mode 0700. Files the host wrote since the last
/// start (configuration, certificates, a seed) become the user's.
pub fn own(dir: &Path, user: Option<&OsUser>) -> Result<()> {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
    if let Some(user) = user {
        plateau_os_user::own_tree(dir, user)?;
    }
    Ok(())
}

/// Lets the clusters' users reach `root` (`<data dir>/caches`) without
/// listing it.
pub fn open_path(root: &Path) -> Result<()> {
    Ok(plateau_os_user::open_path(root)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cache_is_its_users_name() {
        assert_eq!(
            name("cch_01jf3k8x2y9z7w6v5t4s3r2q1p"),
            "cch_01jf3k8x2y9z7w6v5t4s3r2q1p"
        );
        assert!(name("cch_../etc").starts_with(PREFIX));
    }
}
