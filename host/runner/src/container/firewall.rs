//! The replicas' firewall: an nftables table ([`TABLE`], family `inet`,
//! so IPv4 and IPv6) that drops whatever a replica's veth ([`LINKS`],
//! the host ends `plt<n>h`) sends to the host unless it answers a
//! connection the host opened (the edge's requests, the runner's
//! readiness checks), and drops every packet forwarded from or to a
//! replica, so a replica reaches neither the host's listeners (even on
//! `0.0.0.0`) nor another replica.
//!
//! The table is replaced whole, in one nft transaction, when a runner
//! starts: idempotent, the same for every runner on the machine, and
//! kept when the server stops (it matches replica links only).
//!
//! **Invariant:** containers run only once the table is in place.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::{Error, Result};

/// The nftables table holding the rules.
pub const TABLE: &str = "plateau_apps";
/// The host ends of the replicas' veth pairs (`net::links`).
const LINKS: &str = "plt*";

/// The whole table, replacing any previous one atomically.
fn ruleset() -> String {
    format!(
        "table inet {TABLE}\n\
         delete table inet {TABLE}\n\
         table inet {TABLE} {{\n\
         \tchain input {{\n\
         \t\ttype filter hook input priority filter; policy accept;\n\
         \t\tiifname \"{LINKS}\" ct state established,related accept\n\
         \t\tiifname \"{LINKS}\" counter drop\n\
         \t}}\n\
         \tchain forward {{\n\
         \t\ttype filter hook forward priority filter; policy accept;\n\
         \t\tiifname \"{LINKS}\" counter drop\n\
         \t\toifname \"{LINKS}\" counter drop\n\
         \t}}\n\
         }}\n"
    )
}

/// Installs (or replaces) the table.
pub fn install() -> Result<()> {
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
            .write_all(ruleset().as_bytes())
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
        "cannot install the replicas' firewall (table inet {TABLE}): {what}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_links_pattern_matches_the_host_ends() {
        let rules = ruleset();
        assert!(rules.contains("iifname \"plt*\" counter drop"), "{rules}");
        assert!(rules.starts_with("table inet plateau_apps\ndelete table"));
    }
}
