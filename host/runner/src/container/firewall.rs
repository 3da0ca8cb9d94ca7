//! The replicas' firewall: an nftables table ([`TABLE`], family `inet`,
//! so IPv4 and IPv6) that drops whatever a replica's veth ([`LINKS`],
//! the host ends `plt<n>h`) sends to the host unless it answers a
//! connection the host opened (the edge's requests, the runner's
//! readiness checks), drops every new connection forwarded to a replica
//! (so no replica reaches another), and sends what a replica forwards
//! outward to its own chain (`egress`), through the map `egress`; a
//! replica without an entry there forwards nothing. What leaves is
//! masqueraded behind the host's address.
//!
//! The table is made whole, in one nft transaction, by the first runner
//! on the machine (under the machine-wide lock of `net`), or when an
//! older layout is found; later runners keep it, with the chains of the
//! replicas that other servers run. It is kept when the server stops (it
//! matches replica links only).
//!
//! **Invariant:** containers run only once the table is in place.

use std::io::Write;
use std::process::{Command, Stdio};

use super::net;
use crate::{Error, Result};

/// The nftables table holding the rules.
pub const TABLE: &str = "plateau_apps";
/// The host ends of the replicas' veth pairs (`net::links`).
const LINKS: &str = "plt*";

/// The whole table, replacing any previous one atomically.
fn ruleset() -> String {
    let [a, b] = net::SUBNET;
    format!(
        "table inet {TABLE}\n\
         delete table inet {TABLE}\n\
         table inet {TABLE} {{\n\
         \tmap egress {{\n\
         \t\ttype ifname : verdict;\n\
         \t}}\n\
         \tchain input {{\n\
         \t\ttype filter hook input priority filter; policy accept;\n\
         \t\tiifname \"{LINKS}\" ct state established,related accept\n\
         \t\tiifname \"{LINKS}\" counter drop\n\
         \t}}\n\
         \tchain forward {{\n\
         \t\ttype filter hook forward priority filter; policy accept;\n\
         \t\toifname \"{LINKS}\" ct state established,related accept\n\
         \t\toifname \"{LINKS}\" counter drop\n\
         \t\tiifname \"{LINKS}\" iifname vmap @egress\n\
         \t\tiifname \"{LINKS}\" counter drop\n\
         \t}}\n\
         \tchain postrouting {{\n\
         \t\ttype nat hook postrouting priority srcnat; policy accept;\n\
         \t\tip saddr {a}.{b}.0.0/16 oifname != \"{LINKS}\" masquerade\n\
         \t}}\n\
         }}\n"
    )
}

/// Makes the table unless this layout is in place already, and lets the
/// host forward IPv4.
pub fn install() -> Result<()> {
    let _machine = net::lock()?;
    forwarding();
    let current = Command::new("nft")
        .args(["list", "map", "inet", TABLE, "egress"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if current {
        return Ok(());
    }
    apply(&ruleset())
}

/// Turns on IPv4 forwarding, without which replicas reach nothing
/// beyond the host (a warning if it cannot).
fn forwarding() {
    const PATH: &str = "/proc/sys/net/ipv4/ip_forward";
    if std::fs::read_to_string(PATH).is_ok_and(|v| v.trim() == "1") {
        return;
    }
    if let Err(e) = std::fs::write(PATH, "1") {
        tracing::warn!(error = %e, "cannot turn on IPv4 forwarding: apps' replicas will not reach the outside");
    }
}

/// Runs an nft script in one transaction.
pub(super) fn apply(script: &str) -> Result<()> {
    let mut child = Command::new("nft")
        .args(["-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            Error::NotRunnable(format!(
                "cannot run nft to firewall the replicas (install the nftables package): {e}"
            ))
        })?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(script.as_bytes())
            .map_err(|e| fail(e.to_string()))?;
    }
    let out = child.wait_with_output().map_err(|e| fail(e.to_string()))?;
    if !out.status.success() {
        return Err(fail(String::from_utf8_lossy(&out.stderr).trim().to_owned()));
    }
    Ok(())
}

fn fail(what: String) -> Error {
    Error::NotRunnable(format!(
        "cannot change the replicas' firewall (table inet {TABLE}): {what}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_links_pattern_matches_the_host_ends() {
        let rules = ruleset();
        assert!(rules.contains("iifname \"plt*\" counter drop"), "{rules}");
        assert!(
            rules.contains("iifname \"plt*\" iifname vmap @egress"),
            "{rules}"
        );
        assert!(rules.contains("ip saddr 10.231.0.0/16 oifname != \"plt*\" masquerade"));
        assert!(rules.starts_with("table inet plateau_apps\ndelete table"));
    }
}
