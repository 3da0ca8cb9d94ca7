//! Checks a domain's records through the resolver the operator configures
//! (`PLATEAU_DNS_RESOLVER`: `ip[:port]` servers, or the system's). Each
//! check asks again (no cache), so a record just set is seen at once.

use std::net::{IpAddr, SocketAddr};

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::{RData, RecordType};

use super::{DomainsConfig, TXT_LABEL, TXT_PREFIX};

/// What a check of a domain's records found.
#[derive(Debug, PartialEq, Eq)]
pub enum Checked {
    Verified,
    /// What is missing or wrong, to tell the user.
    Missing(String),
}

/// A resolver as the operator configured it, without a cache.
pub fn resolver(config: &DomainsConfig) -> Result<TokioResolver, String> {
    let mut builder = match &config.resolver {
        None => TokioResolver::builder_tokio()
            .map_err(|e| format!("reading the system's resolver settings: {e}"))?,
        Some(servers) => {
            let servers = servers
                .iter()
                .map(|addr| {
                    let mut udp = ConnectionConfig::udp();
                    udp.port = addr.port();
                    let mut tcp = ConnectionConfig::tcp();
                    tcp.port = addr.port();
                    NameServerConfig::new(addr.ip(), true, vec![udp, tcp])
                })
                .collect();
            TokioResolver::builder_with_config(
                ResolverConfig::from_parts(None, Vec::new(), servers),
                TokioRuntimeProvider::default(),
            )
        }
    };
    let options = builder.options_mut();
    options.cache_size = 0;
    options.attempts = 2;
    options.timeout = std::time::Duration::from_secs(3);
    builder
        .build()
        .map_err(|e| format!("starting the resolver: {e}"))
}

/// Reads `PLATEAU_DNS_RESOLVER`: empty or `system` for the system's, else
/// comma-separated `ip` or `ip:port` (port 53 by default).
pub fn parse_servers(setting: &str) -> Result<Option<Vec<SocketAddr>>, String> {
    let setting = setting.trim();
    if setting.is_empty() || setting.eq_ignore_ascii_case("system") {
        return Ok(None);
    }
    setting
        .split(',')
        .map(str::trim)
        .map(|s| {
            s.parse::<SocketAddr>()
                .or_else(|_| s.parse::<IpAddr>().map(|ip| SocketAddr::new(ip, 53)))
                .map_err(|_| format!("{s:?} is not an address (ip or ip:port)"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Whether `domain` carries `token` and points at `host_name` (a CNAME)
/// or at the edge's addresses only (A and AAAA records).
pub async fn check(
    resolver: &TokioResolver,
    domain: &str,
    host_name: &str,
    token: &str,
    edge_addresses: &[IpAddr],
) -> Checked {
    let txt_name = format!("{TXT_LABEL}.{domain}.");
    let expected = format!("{TXT_PREFIX}{token}");
    let owned = match resolver.lookup(txt_name.as_str(), RecordType::TXT).await {
        Ok(lookup) => lookup.answers().iter().any(|r| match &r.data {
            RData::TXT(txt) => {
                let joined: Vec<u8> = txt
                    .txt_data
                    .iter()
                    .flat_map(|p| p.iter().copied())
                    .collect();
                joined == expected.as_bytes()
            }
            _ => false,
        }),
        Err(_) => false,
    };
    if !owned {
        return Checked::Missing(format!(
            "no TXT record {expected:?} at {TXT_LABEL}.{domain}"
        ));
    }
    let fqdn = format!("{domain}.");
    if let Ok(lookup) = resolver.lookup(fqdn.as_str(), RecordType::CNAME).await {
        let points = lookup.answers().iter().any(|r| match &r.data {
            RData::CNAME(target) => same_name(&target.0.to_string(), host_name),
            _ => false,
        });
        if points {
            return Checked::Verified;
        }
    }
    let ips: Vec<IpAddr> = match resolver.lookup_ip(fqdn.as_str()).await {
        Ok(lookup) => lookup.iter().collect(),
        Err(_) => Vec::new(),
    };
    if !ips.is_empty() && ips.iter().all(|ip| edge_addresses.contains(ip)) {
        return Checked::Verified;
    }
    let to_edge = if edge_addresses.is_empty() {
        String::new()
    } else {
        let list: Vec<String> = edge_addresses.iter().map(ToString::to_string).collect();
        format!(", or A/AAAA records of {} only", list.join(", "))
    };
    Checked::Missing(match ips.is_empty() {
        true => format!("{domain} does not resolve; set a CNAME to {host_name}{to_edge}"),
        false => {
            let seen: Vec<String> = ips.iter().map(ToString::to_string).collect();
            format!(
                "{domain} resolves to {}; set a CNAME to {host_name}{to_edge}",
                seen.join(", ")
            )
        }
    })
}

fn same_name(a: &str, b: &str) -> bool {
    a.trim_end_matches('.')
        .eq_ignore_ascii_case(b.trim_end_matches('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolver_settings() {
        assert_eq!(parse_servers("").unwrap(), None);
        assert_eq!(parse_servers("system").unwrap(), None);
        assert_eq!(
            parse_servers("127.0.0.1:5353, 10.0.0.1").unwrap(),
            Some(vec![
                "127.0.0.1:5353".parse().unwrap(),
                "10.0.0.1:53".parse().unwrap()
            ])
        );
        assert!(parse_servers("resolver.example").is_err());
    }
}
