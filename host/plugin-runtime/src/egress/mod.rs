//! The egress guard: the only way a plugin reaches the network, for HTTP
//! (`client`), SMTP submission (`smtp`, with messages built by `mail`) and
//! raw TCP or TLS bytes (`stream`).
//!
//! A request or a mail may go only to a host granted to the plugin. The name is
//! resolved once, every resolved address is checked, and the connection goes
//! to a checked address, so a DNS answer cannot rebind the request to an
//! internal address. The ranges refused unless the operator exempted them
//! are `plateau_egress`'s, the same as for apps' containers.
//! At most [`PER_DESTINATION`] HTTP connections are open to one
//! destination at once (`gates`), and a connection whose answer was read
//! to its end is kept alive briefly for the next request there (`pool`).
//! Plain-HTTP requests to this host's apps go to its app edge (`edge`).

use ipnet::IpNet;

use crate::error::Error;

mod client;
mod edge;
mod gates;
mod mail;
mod pool;
mod smtp;
mod stream;

pub use self::client::{EgressGuard, HttpError, IncomingResponse, OutgoingRequest};
pub use self::edge::LocalEdge;
pub use self::gates::PER_DESTINATION;
pub use self::mail::{
    Attachment, MAX_CUSTOM_HEADERS, MAX_HEADER_VALUE, MAX_MESSAGE_BYTES, MAX_RECIPIENTS,
    MailMessage,
};
pub use self::smtp::{Sent, SmtpError, SmtpReply, SmtpServer, TlsMode};
pub use self::stream::{MAX_STREAM_PAYLOAD, StreamDestination, StreamError};

pub use plateau_egress::{check_address, refusal};

/// Parses the operator's exemptions, `127.0.0.0/8,::1/128`: CIDRs or bare
/// addresses, separated by commas or whitespace (`plateau_egress`).
pub fn parse_allow_list(list: &str) -> Result<Vec<IpNet>, Error> {
    plateau_egress::parse_allow_list(list).map_err(Error::Config)
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
