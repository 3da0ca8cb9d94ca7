//! The ports of a service's processes on this host. Every port a resource
//! holds has a claim, a file `<dir>/<port>` naming its owner, made with
//! `O_EXCL`: the API process and the agent never hand out the same port,
//! nor the port of a process that is down for a moment (a killed node
//! keeps its port until it is restarted on it). Supervision claims the
//! ports of the resources it adopts; destroying a resource or removing a
//! member gives them back.
//!
//! Ports are picked below the kernel's ephemeral range, from which every
//! `bind(0)` and every outgoing connection on the host draws: a port
//! picked there can be taken by a client's connection between the pick
//! and the server's start, or while the server is down.

use std::collections::BTreeSet;
use std::io::{self, ErrorKind};
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::Mutex;

/// The claimed ports of one service on this host.
pub struct Ports {
    /// Where the claims are (`<service root>/.ports`).
    dir: PathBuf,
    /// The address the service's processes listen on.
    address: String,
    /// The ports this process knows claimed.
    known: Mutex<BTreeSet<u16>>,
}

impl Ports {
    /// The claims in `dir`, for processes listening on `address`.
    pub fn new(dir: PathBuf, address: &str) -> Ports {
        Ports {
            dir,
            address: address.to_owned(),
            known: Mutex::new(BTreeSet::new()),
        }
    }

    fn known(&self) -> std::sync::MutexGuard<'_, BTreeSet<u16>> {
        self.known.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Claims `port` for `owner`: whether this claim is new.
    pub fn claim(&self, port: u16, owner: &str) -> io::Result<bool> {
        std::fs::create_dir_all(&self.dir)?;
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(self.dir.join(port.to_string()))
        {
            Ok(mut file) => {
                io::Write::write_all(&mut file, owner.as_bytes())?;
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Claims the ports of a known resource (adoption after a restart).
    pub fn reserve(&self, owner: &str, ports: impl IntoIterator<Item = u16>) {
        let mut known = self.known();
        for port in ports {
            if known.insert(port)
                && let Err(e) = self.claim(port, owner)
            {
                known.remove(&port);
                tracing::warn!(resource = %owner, port, error = %e, "claiming a port");
            }
        }
    }

    /// Gives back the port of a process that is gone.
    pub fn release(&self, port: u16) {
        self.known().remove(&port);
        let _ = std::fs::remove_file(self.dir.join(port.to_string()));
    }

    /// Gives back every port claimed for `owner`, placed or not (what an
    /// interrupted create claimed is in no placement).
    pub fn release_owner(&self, owner: &str) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let claimant = std::fs::read_to_string(entry.path()).unwrap_or_default();
            if claimant == owner
                && let Some(port) = entry.file_name().to_str().and_then(|p| p.parse().ok())
            {
                self.release(port);
            }
        }
    }

    /// A free port that no resource of this service holds, claimed for
    /// `owner`.
    pub fn allocate(&self, owner: &str) -> io::Result<u16> {
        let (from, to) = below_ephemeral();
        for attempt in 0..256 {
            // The ephemeral range itself only when nothing is free below.
            let port = if attempt < 192 && from < to {
                rand::random_range(from..to)
            } else {
                0
            };
            let Ok(listener) = TcpListener::bind((self.address.as_str(), port)) else {
                continue;
            };
            let port = listener.local_addr()?.port();
            drop(listener);
            if self.claim(port, owner)? {
                self.known().insert(port);
                return Ok(port);
            }
        }
        Err(io::Error::new(
            ErrorKind::AddrNotAvailable,
            "no free port on this host; free some ports",
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_processes_never_hold_one_port() {
        let dir = tempfile::tempdir().unwrap();
        // The API process and the agent: two services' views of one root.
        let api = Ports::new(dir.path().join(".ports"), "127.0.0.1");
        let agent = Ports::new(dir.path().join(".ports"), "127.0.0.1");
        let port = api.allocate("dbs_a").unwrap();
        assert!(!agent.claim(port, "dbs_b").unwrap(), "claimed twice");
        for _ in 0..20 {
            assert_ne!(agent.allocate("dbs_b").unwrap(), port);
        }
        api.release(port);
        assert!(
            agent.claim(port, "dbs_b").unwrap(),
            "a released port is free"
        );
    }

    #[test]
    fn ports_are_picked_below_the_ephemeral_range() {
        let dir = tempfile::tempdir().unwrap();
        let ports = Ports::new(dir.path().to_owned(), "127.0.0.1");
        let (from, to) = below_ephemeral();
        let port = ports.allocate("cch_a").unwrap();
        assert!((from..to).contains(&port), "{port} not in {from}..{to}");
    }

    #[test]
    fn an_owner_gives_back_every_claim() {
        let dir = tempfile::tempdir().unwrap();
        let ports = Ports::new(dir.path().to_owned(), "127.0.0.1");
        let mine = [
            ports.allocate("cch_a").unwrap(),
            ports.allocate("cch_a").unwrap(),
        ];
        let other = ports.allocate("cch_b").unwrap();
        ports.release_owner("cch_a");
        for port in mine {
            assert!(ports.claim(port, "cch_c").unwrap());
        }
        assert!(!ports.claim(other, "cch_c").unwrap());
    }
}
