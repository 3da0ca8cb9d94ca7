//! The OS users that managed services' processes run as. When the host
//! runs as root, every resource (a database cluster, a cache cluster) runs
//! under a system user of its own, named from a service prefix and the
//! resource's id, made with the resource and removed with it. The user
//! owns the resource's directory (mode 0700) and nothing else, so a
//! tenant who breaks out of a server (a superuser's `COPY ... TO PROGRAM`,
//! a Lua or module bug) holds neither root nor another tenant's files,
//! nor can it signal another tenant's processes. When the host is not
//! root, the processes run as the host's own user.
//!
//! `useradd` and `userdel` lock the user database: this crate runs one at
//! a time in the process.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use nix::unistd::{Uid, User};

/// The longest user name `useradd` takes.
pub const MAX_NAME: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Command(String),
    #[error("reading the user database: {0}")]
    Lookup(String),
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An OS user: name, uid and the gid of its own group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OsUser {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
}

/// Whether this host gives each resource a user of its own (it runs as
/// root and so can make users and hand files to them).
pub fn per_resource() -> bool {
    nix::unistd::geteuid().is_root()
}

/// The user name of resource `id` for a service whose users start with
/// `prefix` (`pgc_`, `cch_`): the prefix, then the id's lowercase letters
/// and digits after its own prefix, cut to [`MAX_NAME`]. Whatever the id
/// holds, the name is only `[a-z0-9_]` and starts with the prefix.
pub fn resource_user(prefix: &str, id: &str) -> String {
    let tail = id.split_once('_').map_or(id, |(_, tail)| tail);
    let tail: String = tail
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .take(MAX_NAME.saturating_sub(prefix.len()))
        .collect();
    format!("{prefix}{tail}")
}

/// The user named `name`, if it exists.
pub fn find(name: &str) -> Result<Option<OsUser>> {
    Ok(User::from_name(name)
        .map_err(|e| Error::Lookup(e.to_string()))?
        .map(|u| OsUser {
            name: u.name,
            uid: u.uid.as_raw(),
            gid: u.gid.as_raw(),
        }))
}

/// The named user that owns `path`, if any.
pub fn owner_of(path: &Path) -> Option<OsUser> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(path).ok()?;
    let user = User::from_uid(Uid::from_raw(meta.uid())).ok()??;
    Some(OsUser {
        name: user.name,
        uid: meta.uid(),
        gid: meta.gid(),
    })
}

static ACCOUNTS: Mutex<()> = Mutex::new(());

/// The user `name`, made if it does not exist as a system user with a
/// group of its own, no home, no shell and `comment`.
pub fn ensure(name: &str, comment: &str) -> Result<OsUser> {
    let _one = ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(user) = find(name)? {
        return Ok(user);
    }
    run(Command::new("useradd")
        .args(["--system", "--user-group", "--no-create-home"])
        .args(["--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin"])
        .args(["--comment", comment])
        .arg(name))?;
    find(name)?.ok_or_else(|| Error::Command(format!("useradd made no user {name}")))
}

/// Removes the user `name` and its group, if it exists and its name
/// starts with `prefix` (never another user).
pub fn remove(name: &str, prefix: &str) -> Result<()> {
    if !name.starts_with(prefix) || prefix.is_empty() {
        return Ok(());
    }
    let _one = ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
    if find(name)?.is_none() {
        return Ok(());
    }
    run(Command::new("userdel").arg(name))
}

fn run(cmd: &mut Command) -> Result<()> {
    let program = cmd.get_program().to_string_lossy().into_owned();
    let out = cmd
        .output()
        .map_err(|e| Error::Command(format!("cannot run {program}: {e}; install passwd")))?;
    if !out.status.success() {
        return Err(Error::Command(format!(
            "{program} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Gives `path` and everything under it to `user` (symbolic links
/// themselves, never what they point to).
pub fn own_tree(path: &Path, user: &OsUser) -> std::io::Result<()> {
    std::os::unix::fs::lchown(path, Some(user.uid), Some(user.gid))?;
    if std::fs::symlink_metadata(path)?.is_dir() {
        for entry in std::fs::read_dir(path)? {
            own_tree(&entry?.path(), user)?;
        }
    }
    Ok(())
}

/// Lets resources' users reach their directories under `root`: search
/// permission on every directory above it, and on `root` itself search
/// without listing (0711), so no resource learns of the others. Nothing
/// when the host is not root.
pub fn open_path(root: &Path) -> std::io::Result<()> {
    if !per_resource() {
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
    std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o711))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_names_its_user_within_the_limits() {
        assert_eq!(
            resource_user("pgc_", "dbs_01kb0xq3m8w4v9t2r5n7p6c1a0"),
            "pgc_01kb0xq3m8w4v9t2r5n7p6c1a0"
        );
        assert_eq!(
            resource_user("cch_", "cch_01jf3k8x2y9z7w6v5t4s3r2q1p"),
            "cch_01jf3k8x2y9z7w6v5t4s3r2q1p"
        );
        for hostile in [
            "x\"; rm -rf /",
            "cch_../etc",
            "-rf",
            "a/b c",
            &"c".repeat(64),
        ] {
            let name = resource_user("cch_", hostile);
            assert!(name.len() <= MAX_NAME, "{name}");
            assert!(name.starts_with("cch_"), "{name}");
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
                "{name}"
            );
        }
    }

    #[test]
    fn only_a_services_own_users_are_removed() {
        assert!(remove("root", "pgc_").is_ok());
        assert!(find("root").unwrap().is_some());
        assert!(remove("root", "").is_ok());
        assert!(find("root").unwrap().is_some());
    }
}
