//! The replicas' way out. A replica's namespace routes through its veth
//! to the host, which masquerades what leaves (the firewall's `postrouting`
//! chain), and the firewall sends what the replica forwards to a chain of
//! its own, `egress_<slot>`, through the table's `egress` map keyed by the
//! host end of its veth. That chain accepts:
//! - DNS (port 53) to the host's resolvers, which the replica's
//!   `/etc/resolv.conf` names;
//! - the operator's exemptions (`PLATEAU_EGRESS_ALLOW`);
//! - any address `plateau_egress` does not refuse (the same ranges as the
//!   plugins' egress: no loopback, private, link-local or metadata
//!   addresses).
//!
//! It drops the rest, IPv6 included (replicas have IPv4 addresses only).
//! Each runner writes the chains of its own replicas, so servers with
//! different exemptions share one machine. The host's own addresses are
//! never reached this way: the firewall's `input` chain drops them.
//!
//! **Invariant:** a replica's chain and map entry exist only while its
//! namespace does; a link without an entry forwards nothing.

use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;

use super::firewall::{self, TABLE};
use crate::Result;

/// What a runner's replicas may reach beyond the host.
#[derive(Clone, Debug, Default)]
pub struct Egress {
    /// The operator's exemptions from the refused ranges.
    pub allow: Vec<IpNet>,
    /// The resolvers replicas use (the host's, when they are reachable
    /// from a namespace: not loopback).
    pub nameservers: Vec<Ipv4Addr>,
}

impl Egress {
    /// The operator's exemptions, with the host's resolvers read from
    /// `/etc/resolv.conf` (or systemd-resolved's upstream list, when the
    /// host resolves through a loopback stub).
    pub fn from_host(allow: Vec<IpNet>) -> Egress {
        let read = |path: &str| nameservers(&std::fs::read_to_string(path).unwrap_or_default());
        let mut found = read("/etc/resolv.conf");
        if found.is_empty() {
            found = read("/run/systemd/resolve/resolv.conf");
        }
        if found.is_empty() {
            tracing::warn!(
                "no resolver outside loopback in /etc/resolv.conf: apps' replicas will not resolve names"
            );
        }
        Egress {
            allow,
            nameservers: found,
        }
    }

    /// The `/etc/resolv.conf` of every replica.
    pub fn resolv_conf(&self) -> String {
        let mut out = String::new();
        for ns in &self.nameservers {
            out.push_str(&format!("nameserver {ns}\n"));
        }
        out.push_str("options timeout:2 attempts:2\n");
        out
    }

    /// The nft script that gives the replica behind `link` (slot `slot`)
    /// its chain and map entry.
    fn open_script(&self, slot: u32, link: &str) -> String {
        let chain = format!("inet {TABLE} egress_{slot}");
        let mut out = format!("add chain {chain}\nflush chain {chain}\n");
        for ns in &self.nameservers {
            for proto in ["udp", "tcp"] {
                out.push_str(&format!(
                    "add rule {chain} ip daddr {ns} {proto} dport 53 counter accept\n"
                ));
            }
        }
        let allowed: Vec<String> = self
            .allow
            .iter()
            .filter(|n| matches!(n.addr(), IpAddr::V4(_)))
            .map(|n| n.to_string())
            .collect();
        if !allowed.is_empty() {
            out.push_str(&format!(
                "add rule {chain} ip daddr {{ {} }} counter accept\n",
                allowed.join(", ")
            ));
        }
        let refused: Vec<&str> = plateau_egress::REFUSED_V4
            .iter()
            .map(|(net, _)| *net)
            .collect();
        out.push_str(&format!(
            "add rule {chain} ip daddr {{ {} }} counter drop\n",
            refused.join(", ")
        ));
        out.push_str(&format!(
            "add rule {chain} meta nfproto ipv4 counter accept\n"
        ));
        out.push_str(&format!("add rule {chain} counter drop\n"));
        out.push_str(&format!(
            "add element inet {TABLE} egress {{ \"{link}\" : jump egress_{slot} }}\n"
        ));
        out
    }

    /// Lets the replica behind `link` out, replacing whatever a previous
    /// holder of the slot left.
    pub fn open(&self, slot: u32, link: &str) -> Result<()> {
        close(slot, link);
        firewall::apply(&self.open_script(slot, link))
    }
}

/// Bytes the replica of `slot` sent beyond the host: the sum of the
/// counters of its chain's accepting rules (0 when the chain is gone).
pub fn sent_bytes(slot: u32) -> u64 {
    let out = std::process::Command::new("nft")
        .args([
            "-j",
            "list",
            "chain",
            "inet",
            TABLE,
            &format!("egress_{slot}"),
        ])
        .stderr(std::process::Stdio::null())
        .output();
    match out {
        Ok(out) if out.status.success() => accepted_bytes(&out.stdout),
        _ => 0,
    }
}

/// The bytes counted by the accepting rules of `nft -j` output.
fn accepted_bytes(json: &[u8]) -> u64 {
    let Ok(doc) = serde_json::from_slice::<serde_json::Value>(json) else {
        return 0;
    };
    let items = doc["nftables"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter_map(|item| item["rule"]["expr"].as_array())
        .filter(|expr| expr.iter().any(|e| e.get("accept").is_some()))
        .flat_map(|expr| expr.iter().filter_map(|e| e["counter"]["bytes"].as_u64()))
        .sum()
}

/// Removes the replica's map entry, then its chain (idempotent).
pub fn close(slot: u32, link: &str) {
    let _ = firewall::apply(&format!(
        "delete element inet {TABLE} egress {{ \"{link}\" }}\n"
    ));
    let _ = firewall::apply(&format!("delete chain inet {TABLE} egress_{slot}\n"));
}

/// The IPv4 resolvers a `resolv.conf` names, loopback ones left out (a
/// replica cannot reach the host's loopback).
fn nameservers(text: &str) -> Vec<Ipv4Addr> {
    text.lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .filter_map(|rest| rest.trim().parse::<Ipv4Addr>().ok())
        .filter(|ip| !ip.is_loopback() && !ip.is_unspecified())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_hosts_resolvers_without_loopback() {
        let text = "# generated\nnameserver 127.0.0.53\nnameserver 10.255.255.53\nnameserver ::1\nsearch x\n";
        assert_eq!(nameservers(text), [Ipv4Addr::new(10, 255, 255, 53)]);
    }

    #[test]
    fn sent_bytes_are_the_accepting_rules_counters() {
        let json = br#"{"nftables": [{"metainfo": {"version": "1.0.6"}},
          {"chain": {"family": "inet", "table": "plateau_apps", "name": "egress_7"}},
          {"rule": {"chain": "egress_7", "expr": [{"match": {}}, {"counter": {"packets": 2, "bytes": 120}}, {"accept": null}]}},
          {"rule": {"chain": "egress_7", "expr": [{"match": {}}, {"counter": {"packets": 9, "bytes": 900}}, {"drop": null}]}},
          {"rule": {"chain": "egress_7", "expr": [{"counter": {"packets": 1, "bytes": 60}}, {"accept": null}]}}]}"#;
        assert_eq!(accepted_bytes(json), 180);
        assert_eq!(accepted_bytes(b"not json"), 0);
    }

    #[test]
    fn a_replicas_chain_allows_dns_exemptions_then_public_addresses() {
        let egress = Egress {
            allow: plateau_egress::parse_allow_list("172.31.250.0/30,::1").unwrap(),
            nameservers: vec![Ipv4Addr::new(10, 255, 255, 53)],
        };
        let script = egress.open_script(7, "plt7h");
        let lines: Vec<&str> = script.lines().collect();
        let at = |needle: &str| {
            lines
                .iter()
                .position(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("{needle} in {script}"))
        };
        assert!(
            at("10.255.255.53 udp dport 53 counter accept")
                < at("172.31.250.0/30 } counter accept")
        );
        assert!(at("172.31.250.0/30 } counter accept") < at("169.254.0.0/16"));
        assert!(at("169.254.0.0/16") < at("meta nfproto ipv4 counter accept"));
        assert!(
            !script.contains("::1"),
            "IPv6 exemptions are not IPv4 rules"
        );
        assert!(
            script
                .ends_with("add element inet plateau_apps egress { \"plt7h\" : jump egress_7 }\n")
        );
    }
}
