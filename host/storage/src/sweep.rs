//! Staging files of writes that never finished. A local store writes an
//! object's bytes to `<key>#<n>` and renames the file to `<key>` when the
//! write completes; a write dropped in this process removes its file, but
//! one cut short by the process dying (SIGKILL, a crash, a power cut)
//! leaves it behind, uncounted and never served. [`sweep`] removes them:
//! once when the store opens, before any write starts, then on a timer.
//!
//! **Invariant:** a local store's directory belongs to one process, so a
//! staging file is live only while [`LiveWrites`] holds its key; a sweep
//! also spares files written to within its `min_age`, the few instants
//! between a dropped write and the blocking task that still finishes it.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// The keys being written in this process, counted (two writes of one key
/// never happen, since keys are fresh, but counting costs nothing).
#[derive(Default)]
pub struct LiveWrites(Mutex<HashMap<String, usize>>);

impl LiveWrites {
    /// Marks `key` as being written until the guard drops.
    pub fn start(self: &Arc<Self>, key: &str) -> LiveWrite {
        *self.lock().entry(key.to_owned()).or_default() += 1;
        LiveWrite {
            writes: self.clone(),
            key: key.to_owned(),
        }
    }

    fn contains(&self, key: &str) -> bool {
        self.lock().contains_key(key)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, usize>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// One write in progress; see [`LiveWrites::start`].
pub struct LiveWrite {
    writes: Arc<LiveWrites>,
    key: String,
}

impl Drop for LiveWrite {
    fn drop(&mut self) {
        let mut map = self.writes.lock();
        if let Some(n) = map.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                map.remove(&self.key);
            }
        }
    }
}

/// What one sweep removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    pub files: u64,
    pub bytes: u64,
}

/// Removes the staging files under `root` that no live write owns and that
/// nothing wrote to for `min_age`. Runs on the blocking pool's thread it
/// is called from; errors on single files are logged and skipped.
pub fn sweep(root: &Path, live: &LiveWrites, min_age: Duration) -> Swept {
    let mut swept = Swept::default();
    let now = SystemTime::now();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() {
                dirs.push(path);
                continue;
            }
            let Some(key) = staged_key(root, &path) else {
                continue;
            };
            let idle = meta
                .modified()
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .unwrap_or_default();
            if live.contains(&key) || idle < min_age {
                continue;
            }
            match std::fs::remove_file(&path) {
                Ok(()) => {
                    swept.files += 1;
                    swept.bytes += meta.len();
                }
                Err(e) => {
                    tracing::warn!(error = %e, file = %path.display(), "removing a staging file")
                }
            }
        }
    }
    swept
}

/// The key a staging file `<root>/<key>#<digits>` is written for; `None`
/// for any other file (object keys never hold `#`).
fn staged_key(root: &Path, path: &Path) -> Option<String> {
    let relative: PathBuf = path.strip_prefix(root).ok()?.to_path_buf();
    let relative = relative.to_str()?;
    let (key, suffix) = relative.rsplit_once('#')?;
    (!suffix.is_empty() && suffix.bytes().all(|b| b.is_ascii_digit()) && !key.is_empty())
        .then(|| key.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staging_names() {
        let root = Path::new("/data/storage");
        let key = |p: &str| staged_key(root, Path::new(p));
        assert_eq!(
            key("/data/storage/objects/b1/ab/abcd#1").as_deref(),
            Some("objects/b1/ab/abcd")
        );
        assert_eq!(
            key("/data/storage/parts/u1/00001-ff#12").as_deref(),
            Some("parts/u1/00001-ff")
        );
        assert_eq!(key("/data/storage/objects/b1/ab/abcd"), None);
        assert_eq!(key("/data/storage/objects/b1/ab/abcd#x1"), None);
        assert_eq!(key("/data/storage/objects/b1/ab/abcd#"), None);
        assert_eq!(key("/elsewhere/a#1"), None);
    }
}
