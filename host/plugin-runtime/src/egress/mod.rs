//! The egress guard: the only way a plugin reaches the network, for HTTP
//! (`client`) and SMTP submission (`smtp`, with messages built by `mail`).
//!
//! A request or a mail may go only to a host granted to the plugin. The name is
//! resolved once, every resolved address is checked, and the connection goes
//! to a checked address, so a DNS answer cannot rebind the request to an
//! internal address. Loopback, private, shared (CGNAT), link-local (cloud
//! metadata included), multicast, unspecified, broadcast and reserved
//! addresses are refused unless the operator exempted them with CIDRs.
//! At most [`PER_DESTINATION`] HTTP connections are open to one
//! destination at once (`gates`), and a connection whose answer was read
//! to its end is kept alive briefly for the next request there (`pool`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use crate::error::Error;

mod client;
mod gates;
mod mail;
mod pool;
mod smtp;

pub use self::client::{EgressGuard, HttpError, IncomingResponse, OutgoingRequest};
pub use self::gates::PER_DESTINATION;
pub use self::mail::{
    Attachment, MAX_CUSTOM_HEADERS, MAX_HEADER_VALUE, MAX_MESSAGE_BYTES, MAX_RECIPIENTS,
    MailMessage,
};
pub use self::smtp::{Sent, SmtpError, SmtpReply, SmtpServer, TlsMode};

/// Parses the operator's exemptions, `127.0.0.0/8,::1/128`: CIDRs or bare
/// addresses, separated by commas or whitespace.
pub fn parse_allow_list(list: &str) -> Result<Vec<IpNet>, Error> {
    list.split(|c: char| c == ',' || c.is_whitespace())
        .filter(|item| !item.is_empty())
        .map(|item| {
            item.parse::<IpNet>()
                .or_else(|_| item.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    Error::Config(format!(
                        "egress allow list entry `{item}` must be a CIDR such as 127.0.0.0/8 or an address"
                    ))
                })
        })
        .collect()
}

/// Why `ip` is refused by default, or `None` if it is a public address.
pub fn refusal(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => refusal_v4(v4),
        IpAddr::V6(v6) => refusal_v6(v6),
    }
}

fn refusal_v4(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => "unspecified",
        (127, _, _) => "loopback",
        (10, _, _) | (192, 168, _) => "private",
        (172, 16..=31, _) => "private",
        (100, 64..=127, _) => "shared (CGNAT)",
        (169, 254, _) => "link-local (cloud metadata)",
        (224..=239, _, _) => "multicast",
        (255, 255, 255) if ip == Ipv4Addr::BROADCAST => "broadcast",
        (240..=255, _, _) => "reserved",
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "reserved",
        (198, 18..=19, _) => "reserved",
        _ => return None,
    })
}

fn refusal_v6(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = embedded_v4(ip) {
        return refusal_v4(v4);
    }
    let segments = ip.segments();
    Some(match segments[0] {
        _ if ip.is_unspecified() => "unspecified",
        _ if ip.is_loopback() => "loopback",
        0x0000 => "reserved",
        0xfc00..=0xfdff => "private (unique local)",
        0xfe80..=0xfebf => "link-local",
        0xfec0..=0xfeff => "private (site-local)",
        0xff00..=0xffff => "multicast",
        0x2001 if segments[1] == 0x0db8 => "reserved",
        0x0100 if segments[1..4] == [0, 0, 0] => "reserved",
        _ => return None,
    })
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

/// Whether `host:port` matches one of the plugin's granted hosts:
/// `api.example.com`, `*.example.com`, or `*` (any host: for plugins that
/// reach addresses their users choose, such as checks and the email relay;
/// the address policy still applies), each optionally with `:port`.
pub fn host_granted(host: &str, port: u16, granted: &[String]) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    granted.iter().any(|grant| {
        let grant = grant.to_ascii_lowercase();
        let Some((pattern, grant_port)) = split_grant(&grant) else {
            return false;
        };
        let host_matches = match pattern.strip_prefix("*.") {
            _ if pattern == "*" => true,
            Some(domain) => host.ends_with(&format!(".{domain}")),
            None => host == pattern,
        };
        host_matches && grant_port.is_none_or(|p| p == port)
    })
}

/// `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address; `None`
/// for a grant with an unreadable port, which then matches nothing.
fn split_grant(grant: &str) -> Option<(&str, Option<u16>)> {
    if let Some(rest) = grant.strip_prefix('[') {
        let (host, tail) = rest.split_once(']')?;
        return match tail.strip_prefix(':') {
            Some(port) => Some((host, Some(port.parse().ok()?))),
            None => Some((host, None)),
        };
    }
    match grant.split_once(':') {
        Some((host, port)) if !port.contains(':') => Some((host, Some(port.parse().ok()?))),
        _ => Some((grant, None)),
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

    #[test]
    fn matches_granted_hosts() {
        let granted = [
            "api.example.com".to_string(),
            "*.hooks.dev".into(),
            "127.0.0.1:8080".into(),
            "[::1]:9000".into(),
        ];
        assert!(host_granted("api.example.com", 80, &granted));
        assert!(host_granted("API.example.com.", 443, &granted));
        assert!(!host_granted("example.com", 80, &granted));
        assert!(host_granted("a.hooks.dev", 80, &granted));
        assert!(!host_granted("hooks.dev", 80, &granted));
        assert!(!host_granted("evilhooks.dev", 80, &granted));
        assert!(host_granted("127.0.0.1", 8080, &granted));
        assert!(!host_granted("127.0.0.1", 8081, &granted));
        assert!(host_granted("::1", 9000, &granted));
        assert!(!host_granted("::1", 80, &granted));
        assert!(host_granted("anything.example", 25, &["*".to_string()]));
        assert!(host_granted("anything.example", 25, &["*:25".to_string()]));
        assert!(!host_granted("anything.example", 26, &["*:25".to_string()]));
    }
}
