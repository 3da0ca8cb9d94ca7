//! Placeholder of the lead's per-resource lock (replaced on merge).

use std::path::PathBuf;

pub struct ResourceLocks {
    dir: PathBuf,
}

pub struct Held(#[allow(dead_code)] nix::fcntl::Flock<std::fs::File>);

impl ResourceLocks {
    pub fn new(dir: impl Into<PathBuf>) -> std::io::Result<Self> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)?;
        Ok(ResourceLocks { dir })
    }

    pub async fn lock(&self, id: &str) -> std::io::Result<Held> {
        let path = self.dir.join(format!("{id}.lock"));
        tokio::task::spawn_blocking(move || {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(path)?;
            let file = nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusive)
                .map_err(|(_, e)| std::io::Error::from(e))?;
            Ok(Held(file))
        })
        .await?
    }
}
