//! What tenants' code may reach on the network: one list of the address
//! ranges refused by default ([`REFUSED_V4`], [`REFUSED_V6`]) and the
//! operator's exemptions (`PLATEAU_EGRESS_ALLOW`, [`parse_allow_list`]).
//!
//! Two guards apply it: the plugins' egress (`plateau-plugin-runtime`,
//! which checks each resolved address with [`check_address`] before it
//! connects) and the firewall of apps' containers (`plateau-runner`,
//! which writes the same ranges into nftables rules). Loopback, private,
//! shared (CGNAT), link-local (cloud metadata included), multicast,
//! unspecified, broadcast and reserved addresses are refused unless the
//! operator exempted them with CIDRs.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

/// The IPv4 ranges refused by default and why, the first match deciding
/// (broadcast before the reserved range that holds it).
pub const REFUSED_V4: &[(&str, &str)] = &[
    ("0.0.0.0/8", "unspecified"),
    ("127.0.0.0/8", "loopback"),
    ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"),
    ("192.168.0.0/16", "private"),
    ("100.64.0.0/10", "shared (CGNAT)"),
    ("169.254.0.0/16", "link-local (cloud metadata)"),
    ("224.0.0.0/4", "multicast"),
    ("255.255.255.255/32", "broadcast"),
    ("240.0.0.0/4", "reserved"),
    ("192.0.0.0/24", "reserved"),
    ("192.0.2.0/24", "reserved"),
    ("198.51.100.0/24", "reserved"),
    ("203.0.113.0/24", "reserved"),
    ("198.18.0.0/15", "reserved"),
];

/// The IPv6 ranges refused by default and why, the first match deciding.
/// IPv4-mapped and NAT64 addresses are judged by the IPv4 address inside.
pub const REFUSED_V6: &[(&str, &str)] = &[
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("::/16", "reserved"),
    ("fc00::/7", "private (unique local)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "private (site-local)"),
    ("ff00::/8", "multicast"),
    ("2001:db8::/32", "reserved"),
    ("100::/64", "reserved"),
];

/// Parses the operator's exemptions, `127.0.0.0/8,::1/128`: CIDRs or bare
/// addresses, separated by commas or whitespace.
pub fn parse_allow_list(list: &str) -> Result<Vec<IpNet>, String> {
    list.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|item| !item.is_empty())
        .map(|item| {
            item.parse::<IpNet>()
                .or_else(|_| item.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    format!(
                        "egress allow list entry `{item}` must be a CIDR such as 127.0.0.0/8 or an address"
                    )
                })
        })
        .collect()
}

/// Why `ip` is refused by default, or `None` if it is a public address.
pub fn refusal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refusal_v4(v4),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some(v4) => refusal_v4(v4),
            None => REFUSED_V6
                .iter()
                .find(|(net, _)| net.parse::<Ipv6Net>().expect("a CIDR").contains(&v6))
                .map(|(_, why)| *why),
        },
    }
}

fn refusal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    REFUSED_V4
        .iter()
        .find(|(net, _)| net.parse::<Ipv4Net>().expect("a CIDR").contains(&ip))
        .map(|(_, why)| *why)
}

/// The IPv4 address inside an IPv4-mapped or NAT64 IPv6 address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = ip.segments();
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., a, b, c, d] = ip.octets();
        return Some(Ipv4Addr::new(a, b, c, d));
    }
    None
}

/// Checks one resolved address against the default refusals and the
/// operator's exemptions.
pub fn check_address(ip: IpAddr, allow: &[IpNet]) -> Result<(), String> {
    let mapped = match ip {
        IpAddr::V6(v6) => embedded_v4(v6).map(IpAddr::V4),
        IpAddr::V4(_) => None,
    };
    let exempt = allow
        .iter()
        .any(|net| net.contains(&ip) || mapped.is_some_and(|m| net.contains(&m)));
    match refusal(ip) {
        Some(reason) if !exempt => Err(format!("{ip} is {reason}")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_internal_addresses() {
        let cases = [
            ("127.0.0.1", Some("loopback")),
            ("10.1.2.3", Some("private")),
            ("172.31.0.1", Some("private")),
            ("172.32.0.1", None),
            ("192.168.1.1", Some("private")),
            ("100.64.0.1", Some("shared (CGNAT)")),
            ("100.128.0.1", None),
            ("169.254.169.254", Some("link-local (cloud metadata)")),
            ("224.0.0.1", Some("multicast")),
            ("255.255.255.255", Some("broadcast")),
            ("255.255.255.254", Some("reserved")),
            ("0.0.0.0", Some("unspecified")),
            ("93.184.216.34", None),
            ("::1", Some("loopback")),
            ("::", Some("unspecified")),
            ("fd00:ec2::254", Some("private (unique local)")),
            ("fc00::1", Some("private (unique local)")),
            ("fe80::1", Some("link-local")),
            ("ff02::1", Some("multicast")),
            ("::ffff:127.0.0.1", Some("loopback")),
            (
                "::ffff:169.254.169.254",
                Some("link-local (cloud metadata)"),
            ),
            ("64:ff9b::10.0.0.1", Some("private")),
            ("2001:db8::1", Some("reserved")),
            ("2606:4700::1111", None),
        ];
        for (ip, expected) in cases {
            assert_eq!(refusal(ip.parse().unwrap()), expected, "{ip}");
        }
    }

    #[test]
    fn exemptions_open_only_their_ranges() {
        let allow = parse_allow_list("127.0.0.0/8, ::1/128").unwrap();
        assert!(check_address("127.0.0.1".parse().unwrap(), &allow).is_ok());
        assert!(check_address("::ffff:127.0.0.1".parse().unwrap(), &allow).is_ok());
        assert!(check_address("::1".parse().unwrap(), &allow).is_ok());
        assert!(check_address("169.254.169.254".parse().unwrap(), &allow).is_err());
        assert!(check_address("10.0.0.1".parse().unwrap(), &allow).is_err());
        assert_eq!(parse_allow_list("10.0.0.1").unwrap().len(), 1);
        assert!(parse_allow_list("").unwrap().is_empty());
        assert!(parse_allow_list("localhost").is_err());
    }
}
