//! Each replica's network: its own namespace (`ip netns add`) joined to
//! the host by a veth pair, on a /30 of [`SUBNET`] that the host hands
//! out: the host end is `.1`, the replica `.2` (its default route goes
//! through `.1`), and the edge connects to the replica's address. What it
//! may reach beyond the host is its chain in the firewall (`egress`).
//!
//! **Invariant:** a /30 belongs to one replica of one host process on the
//! whole machine: it is claimed by creating `/run/plateau-net/<n>` under
//! a machine-wide lock, and a claim whose process is gone is reclaimed
//! (its namespace and link deleted) before it is handed out again.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::egress::{self, Egress};
use crate::{Error, Result};

/// Where replicas' addresses come from: `10.231.0.0/16`.
pub const SUBNET: [u8; 2] = [10, 231];
/// The /30s of the subnet; the first is never used.
const SLOTS: u32 = 1 << 14;
/// Claims, one file per /30, holding the claiming process's id.
const CLAIMS: &str = "/run/plateau-net";

/// One replica's network, released by [`Net::release`].
#[derive(Debug)]
pub struct Net {
    slot: u32,
}

impl Net {
    /// Claims a free /30 and makes the namespace and veth pair, with the
    /// way out `egress` allows.
    pub fn create(egress: &Egress) -> Result<Net> {
        let slot = claim()?;
        let net = Net { slot };
        if let Err(e) = net.build().and_then(|()| egress.open(slot, &links(slot).0)) {
            net.release();
            return Err(e);
        }
        Ok(net)
    }

    pub fn namespace(&self) -> String {
        format!("plateau-{}", self.slot)
    }

    /// The path runc joins.
    pub fn namespace_path(&self) -> String {
        format!("/run/netns/{}", self.namespace())
    }

    /// Bytes the replica sent beyond the host (its chain's counters).
    pub fn sent_bytes(&self) -> u64 {
        egress::sent_bytes(self.slot)
    }

    /// The replica's address.
    pub fn address(&self) -> Ipv4Addr {
        address(self.slot, 2)
    }

    fn build(&self) -> Result<()> {
        let ns = self.namespace();
        let (host, inner) = links(self.slot);
        let host_ip = format!("{}/30", address(self.slot, 1));
        let inner_ip = format!("{}/30", address(self.slot, 2));
        ip(&["netns", "add", &ns])?;
        ip(&["link", "add", &host, "type", "veth", "peer", "name", &inner])?;
        ip(&["link", "set", &inner, "netns", &ns])?;
        ip(&["addr", "add", &host_ip, "dev", &host])?;
        ip(&["link", "set", &host, "up"])?;
        ip(&["-n", &ns, "addr", "add", &inner_ip, "dev", &inner])?;
        ip(&["-n", &ns, "link", "set", &inner, "up"])?;
        ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        let gateway = address(self.slot, 1).to_string();
        ip(&["-n", &ns, "route", "add", "default", "via", &gateway])?;
        Ok(())
    }

    /// Deletes the namespace and the link, then frees the /30.
    pub fn release(&self) {
        teardown(self.slot);
        let _ = fs::remove_file(claim_path(self.slot));
    }
}

/// Reclaims the /30s of processes that are gone (after a crash).
pub fn reclaim_stale() {
    let Ok(_lock) = lock() else { return };
    let Ok(entries) = fs::read_dir(CLAIMS) else {
        return;
    };
    for entry in entries.flatten() {
        if let Some(slot) = entry.file_name().to_str().and_then(|n| n.parse().ok())
            && stale(slot)
        {
            teardown(slot);
            let _ = fs::remove_file(claim_path(slot));
        }
    }
}

fn claim() -> Result<u32> {
    let _lock = lock()?;
    let start = std::process::id() % (SLOTS - 1);
    for i in 0..SLOTS - 1 {
        let slot = 1 + (start + i) % (SLOTS - 1);
        let path = claim_path(slot);
        if path.exists() {
            if !stale(slot) {
                continue;
            }
            teardown(slot);
            let _ = fs::remove_file(&path);
        }
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| net_error(format!("cannot claim {}: {e}", path.display())))?;
        let _ = write!(file, "{}", std::process::id());
        return Ok(slot);
    }
    Err(net_error(
        "every address of 10.231.0.0/16 is taken; stop some apps".to_owned(),
    ))
}

/// The machine-wide lock around claims (and the firewall's making).
pub(super) fn lock() -> Result<File> {
    fs::create_dir_all(CLAIMS).map_err(|e| net_error(format!("cannot create {CLAIMS}: {e}")))?;
    let file = File::create(Path::new(CLAIMS).join(".lock"))
        .map_err(|e| net_error(format!("cannot open the claims lock: {e}")))?;
    file.lock()
        .map_err(|e| net_error(format!("cannot lock the claims: {e}")))?;
    Ok(file)
}

/// Whether the process that claimed `slot` is gone.
fn stale(slot: u32) -> bool {
    let Ok(text) = fs::read_to_string(claim_path(slot)) else {
        return false;
    };
    match text.trim().parse::<u32>() {
        Ok(pid) => !Path::new(&format!("/proc/{pid}")).exists(),
        // Being written by its claimer, under the lock we do not hold.
        Err(_) => false,
    }
}

fn teardown(slot: u32) {
    let ns = format!("plateau-{slot}");
    let (host, _) = links(slot);
    egress::close(slot, &host);
    let _ = ip(&["netns", "delete", &ns]);
    let _ = ip(&["link", "delete", &host]);
}

fn claim_path(slot: u32) -> PathBuf {
    Path::new(CLAIMS).join(slot.to_string())
}

/// The host's and the replica's ends of the veth pair (at most 15 bytes).
fn links(slot: u32) -> (String, String) {
    (format!("plt{slot}h"), format!("plt{slot}c"))
}

fn address(slot: u32, host: u32) -> Ipv4Addr {
    let n = slot * 4 + host;
    Ipv4Addr::new(SUBNET[0], SUBNET[1], (n >> 8) as u8, (n & 0xff) as u8)
}

/// Runs `ip ARGS`; its stderr is the error.
fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| net_error(format!("cannot run ip (install iproute2): {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    Err(net_error(format!(
        "ip {} failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}

fn net_error(what: String) -> Error {
    Error::NotRunnable(format!(
        "cannot make the replica's network namespace (run as root): {what}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_the_slots_30() {
        assert_eq!(address(1, 1), Ipv4Addr::new(10, 231, 0, 5));
        assert_eq!(address(1, 2), Ipv4Addr::new(10, 231, 0, 6));
        assert_eq!(address(SLOTS - 1, 2), Ipv4Addr::new(10, 231, 255, 254));
        let (h, c) = links(SLOTS - 1);
        assert!(h.len() <= 15 && c.len() <= 15);
    }
}
