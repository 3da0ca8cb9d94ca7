//! This host's identity: one id per host (`hst_...`), made once and kept in
//! `<data dir>/host-id`, registered in the `hosts` table at every start.
//! Every service stamps the resources it runs with it, and only this host
//! supervises them.
//!
//! Before there was one identity per host, the caches and the databases
//! each kept their own (`caches/host-id`, `databases/host-id`). The first
//! start that finds no `<data dir>/host-id` takes the first of those it
//! finds as the host's identity and hands the resources of the other to it,
//! so nothing a host runs is left without its supervisor.

use std::path::Path;

use anyhow::Context;
use plateau_core::{id::new_id, time};
use plateau_store::{Db, hosts};

/// The services that kept an identity of their own before this one.
const LEGACY: [&str; 2] = ["caches", "databases"];

/// Reads (or makes) this host's identity and registers it.
pub async fn identity(data_dir: &Path, db: &Db) -> anyhow::Result<String> {
    let path = data_dir.join("host-id");
    let id = match read(&path) {
        Some(id) => id,
        None => {
            let legacy: Vec<String> = LEGACY
                .iter()
                .filter_map(|service| read(&data_dir.join(service).join("host-id")))
                .collect();
            let id = legacy.first().cloned().unwrap_or_else(|| new_id("hst"));
            for old in legacy.iter().filter(|old| **old != id) {
                let moved = hosts::adopt_resources(db, old, &id).await?;
                tracing::info!(from = %old, to = %id, moved, "one identity for this host");
            }
            std::fs::write(&path, &id).with_context(|| format!("writing {}", path.display()))?;
            id
        }
    };
    hosts::register(db, &id, &machine_name(), time::now_ms()).await?;
    Ok(id)
}

fn read(path: &Path) -> Option<String> {
    let id = std::fs::read_to_string(path).ok()?;
    let id = id.trim();
    (!id.is_empty()).then(|| id.to_owned())
}

/// The kernel's host name, or `unknown`.
fn machine_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|n| n.trim().to_owned())
        .ok()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The per-resource locks of one kind of resource on this host
/// (`<data dir>/locks/<kind>`), shared by the API process and the agent.
pub fn locks(data_dir: &Path, kind: &str) -> anyhow::Result<plateau_kernel::ResourceLocks> {
    let dir = data_dir.join("locks").join(kind);
    plateau_kernel::ResourceLocks::new(&dir).with_context(|| format!("creating {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_identity_taken_from_the_services_that_kept_their_own() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect(&Db::sqlite_url(dir.path())).await.unwrap();
        for (service, id) in [("caches", "hst_a"), ("databases", "hst_b")] {
            std::fs::create_dir_all(dir.path().join(service)).unwrap();
            std::fs::write(dir.path().join(service).join("host-id"), id).unwrap();
        }
        assert_eq!(identity(dir.path(), &db).await.unwrap(), "hst_a");
        assert_eq!(read(&dir.path().join("host-id")).unwrap(), "hst_a");
        assert_eq!(identity(dir.path(), &db).await.unwrap(), "hst_a");
        let host = hosts::get(&db, "hst_a").await.unwrap().unwrap();
        assert!(!host.name.is_empty());
        assert!(hosts::get(&db, "hst_b").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_new_host_makes_a_lowercase_prefixed_id() {
        let dir = tempfile::tempdir().unwrap();
        let db = Db::connect(&Db::sqlite_url(dir.path())).await.unwrap();
        let id = identity(dir.path(), &db).await.unwrap();
        assert!(id.starts_with("hst_"), "{id}");
        assert_eq!(id, id.to_lowercase());
    }
}
