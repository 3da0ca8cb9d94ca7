//! Per-resource locks that hold across processes: an exclusive `flock` on
//! one file per resource under a directory of the data directory.
//!
//! A `flock` belongs to an open file description, so two guards of one
//! process exclude each other as a guard of another process does, and a
//! process that dies (even by SIGKILL) releases its locks with its files.
//! The lock files stay (they are empty); [`ResourceLocks::forget`] removes
//! the file of a resource that is gone.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use nix::fcntl::{Flock, FlockArg};

/// The locks of one kind of resource (one directory).
#[derive(Clone, Debug)]
pub struct ResourceLocks {
    dir: PathBuf,
}

/// Held while one resource changes; dropping it releases the lock.
#[derive(Debug)]
pub struct ResourceGuard {
    _lock: Flock<File>,
}

impl ResourceLocks {
    /// Locks kept in `dir`, made if missing.
    pub fn new(dir: impl Into<PathBuf>) -> io::Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        Ok(ResourceLocks { dir })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, id: &str) -> io::Result<PathBuf> {
        let safe = !id.is_empty()
            && id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
        if !safe {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("not a resource id: {id:?}"),
            ));
        }
        Ok(self.dir.join(format!("{id}.lock")))
    }

    /// Waits until no one else (in this process or another) holds `id`'s
    /// lock, and takes it.
    pub async fn lock(&self, id: &str) -> io::Result<ResourceGuard> {
        let path = self.path(id)?;
        tokio::task::spawn_blocking(move || {
            let file = open(&path)?;
            let lock = Flock::lock(file, FlockArg::LockExclusive)
                .map_err(|(_, errno)| io::Error::from(errno))?;
            Ok(ResourceGuard { _lock: lock })
        })
        .await
        .map_err(io::Error::other)?
    }

    /// Takes `id`'s lock if no one holds it; `None` when someone does.
    pub fn try_lock(&self, id: &str) -> io::Result<Option<ResourceGuard>> {
        let file = open(&self.path(id)?)?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(lock) => Ok(Some(ResourceGuard { _lock: lock })),
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
            Err((_, errno)) => Err(io::Error::from(errno)),
        }
    }

    /// Removes the lock file of a resource that no longer exists.
    pub fn forget(&self, id: &str) {
        if let Ok(path) = self.path(id) {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn open(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_held_lock_excludes_another_holder_until_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let locks = ResourceLocks::new(dir.path()).unwrap();
        let held = locks.lock("db_01").await.unwrap();
        assert!(locks.try_lock("db_01").unwrap().is_none());
        assert!(locks.try_lock("db_02").unwrap().is_some());
        drop(held);
        assert!(locks.try_lock("db_01").unwrap().is_some());
    }

    #[tokio::test]
    async fn a_waiter_gets_the_lock_when_the_holder_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let locks = ResourceLocks::new(dir.path()).unwrap();
        let held = locks.lock("cch_01").await.unwrap();
        let other = locks.clone();
        let waiter = tokio::spawn(async move { other.lock("cch_01").await.map(|_| ()) });
        tokio::task::yield_now().await;
        assert!(!waiter.is_finished());
        drop(held);
        waiter.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn ids_that_could_leave_the_directory_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let locks = ResourceLocks::new(dir.path()).unwrap();
        assert!(locks.lock("../x").await.is_err());
        assert!(locks.try_lock("").is_err());
    }
}
