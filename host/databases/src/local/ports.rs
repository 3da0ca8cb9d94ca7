//! The ports of this host's clusters. Every port a cluster holds (its
//! members', its pooler's, its write endpoint's) has a claim, a file
//! `<root>/.ports/<port>` naming the cluster, made with `O_EXCL`: the API
//! process (which creates and scales clusters) and the agent (which
//! supervises them, and gives a cluster placed before write endpoints its
//! own) never hand out the same port, nor the port of a process that is
//! down for a moment. Supervision claims the ports of the clusters it
//! adopts; destroying a cluster or removing a member gives them back.
//! Ports are picked below the kernel's ephemeral range, from which every
//! `bind(0)` and every outgoing connection on the host draws: a port
//! picked there can be taken by another program between the pick and the
//! server's start.

use std::io::ErrorKind;
use std::net::TcpListener;
use std::path::PathBuf;

use super::LocalProvider;
use crate::spec::Placement;
use crate::{Error, Result};

impl LocalProvider {
    fn ports_dir(&self) -> PathBuf {
        self.config.root.join(".ports")
    }

    /// Claims `port` for `cluster`: whether this claim is new.
    fn claim(&self, port: u16, cluster: &str) -> Result<bool> {
        let dir = self.ports_dir();
        std::fs::create_dir_all(&dir)?;
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.join(port.to_string()))
        {
            Ok(mut file) => {
                std::io::Write::write_all(&mut file, cluster.as_bytes())?;
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    /// Claims the ports of a known cluster (adoption after a restart).
    pub fn reserve(&self, placement: &Placement) {
        let mut known = self.ports.lock().unwrap_or_else(|e| e.into_inner());
        for port in ports_of(placement) {
            if known.insert(port)
                && let Err(e) = self.claim(port, &placement.cluster)
            {
                known.remove(&port);
                tracing::warn!(database = %placement.cluster, port, error = %e, "claiming a port");
            }
        }
    }

    /// Gives back every port of a cluster that is gone.
    pub(super) fn release(&self, placement: &Placement) {
        for port in ports_of(placement) {
            self.release_port(port);
        }
    }

    /// Gives back every port claimed for `cluster`, placed or not (what an
    /// interrupted create claimed is in no placement).
    pub(super) fn release_claims(&self, cluster: &str) {
        let Ok(entries) = std::fs::read_dir(self.ports_dir()) else {
            return;
        };
        for entry in entries.flatten() {
            let owner = std::fs::read_to_string(entry.path()).unwrap_or_default();
            if owner == cluster
                && let Some(port) = entry.file_name().to_str().and_then(|p| p.parse().ok())
            {
                self.release_port(port);
            }
        }
    }

    /// Gives back the port of a process that is gone.
    pub(super) fn release_port(&self, port: u16) {
        self.ports
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&port);
        let _ = std::fs::remove_file(self.ports_dir().join(port.to_string()));
    }

    /// A free port that no cluster of this host holds, claimed for
    /// `cluster`.
    pub(super) fn allocate_port(&self, cluster: &str) -> Result<u16> {
        let (from, to) = below_ephemeral();
        for attempt in 0..256 {
            // The ephemeral range itself only when nothing is free below.
            let port = if attempt < 192 && from < to {
                rand::random_range(from..to)
            } else {
                0
            };
            let Ok(listener) = TcpListener::bind((self.config.address.as_str(), port)) else {
                continue;
            };
            let port = listener.local_addr()?.port();
            drop(listener);
            if self.claim(port, cluster)? {
                self.ports
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(port);
                return Ok(port);
            }
        }
        Err(Error::Unavailable(
            "no free port for a database process; free some ports".to_owned(),
        ))
    }
}

/// The ports picked from: the 12,000 below the kernel's ephemeral range.
fn below_ephemeral() -> (u16, u16) {
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    (low.saturating_sub(12_000).max(1024), low)
}

/// Every port `placement` holds.
fn ports_of(placement: &Placement) -> Vec<u16> {
    let mut ports = vec![placement.pooler_port];
    ports.extend(placement.router_port);
    ports.extend(placement.nodes().into_iter().map(|n| n.port));
    ports
}

#[cfg(test)]
mod tests {
    use super::super::{LocalConfig, LocalProvider};

    fn provider(root: &std::path::Path) -> LocalProvider {
        LocalProvider::new(LocalConfig {
            root: root.to_owned(),
            address: "127.0.0.1".to_owned(),
            binaries: root.join("bin"),
            pgbouncer: "pgbouncer".into(),
            haproxy: "haproxy".into(),
            backups: plateau_object_store::local(&root.join("backups")).unwrap(),
        })
        .unwrap()
    }

    #[test]
    fn two_processes_never_hold_one_port() {
        let dir = tempfile::tempdir().unwrap();
        // The API process and the agent: two providers on one root.
        let (api, agent) = (provider(dir.path()), provider(dir.path()));
        let port = api.allocate_port("dbs_a").unwrap();
        assert!(!agent.claim(port, "dbs_b").unwrap(), "claimed twice");
        for _ in 0..20 {
            assert_ne!(agent.allocate_port("dbs_b").unwrap(), port);
        }
        api.release_port(port);
        assert!(
            agent.claim(port, "dbs_b").unwrap(),
            "a released port is free"
        );
    }
}
