//! The egress guard: the only way a plugin reaches the network.
//!
//! A request may go only to a host granted to the plugin. The name is
//! resolved once, every resolved address is checked, and the connection goes
//! to a checked address, so a DNS answer cannot rebind the request to an
//! internal address. Loopback, private, shared (CGNAT), link-local (cloud
//! metadata included), multicast, unspecified, broadcast and reserved
//! addresses are refused unless the operator exempted them with CIDRs.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use ipnet::IpNet;
use tokio::net::TcpStream;

use crate::error::Error;

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
/// `api.example.com`, `*.example.com`, each optionally with `:port`.
pub fn host_granted(host: &str, port: u16, granted: &[String]) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    granted.iter().any(|grant| {
        let grant = grant.to_ascii_lowercase();
        let Some((pattern, grant_port)) = split_grant(&grant) else {
            return false;
        };
        let host_matches = match pattern.strip_prefix("*.") {
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

/// A request to send; the timeout is already capped by the host.
#[derive(Debug, Clone)]
pub struct OutgoingRequest {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    pub timeout: Duration,
}

#[derive(Debug, Clone)]
pub struct IncomingResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// Time to an established connection.
    pub connect: Duration,
    /// Time to the whole response.
    pub total: Duration,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HttpError {
    #[error("host `{0}` is not granted to the plugin")]
    HostNotAllowed(String),
    #[error("address refused: {0}")]
    AddressRefused(String),
    #[error("invalid request: {0}")]
    InvalidRequest(String),
    #[error("the request timed out")]
    Timeout,
    #[error("the response body is over the host's cap")]
    ResponseTooLarge,
    #[error("connection failed: {0}")]
    ConnectionFailed(String),
}

/// Outbound HTTP under the operator's address policy.
#[derive(Debug, Clone, Default)]
pub struct EgressGuard {
    allow: Vec<IpNet>,
}

impl EgressGuard {
    /// A guard with the operator's exemptions (see [`parse_allow_list`]).
    pub fn new(allow: Vec<IpNet>) -> Self {
        EgressGuard { allow }
    }

    /// Sends `req` if its host is among `granted` and resolves to an allowed
    /// address; reads at most `max_body` bytes of the response.
    pub async fn send(
        &self,
        granted: &[String],
        req: OutgoingRequest,
        max_body: usize,
    ) -> Result<IncomingResponse, HttpError> {
        let start = Instant::now();
        let uri: http::Uri = req
            .url
            .parse()
            .map_err(|e| HttpError::InvalidRequest(format!("url: {e}")))?;
        let port = match uri.scheme_str() {
            Some("http") => uri.port_u16().unwrap_or(80),
            Some("https") => {
                return Err(HttpError::InvalidRequest(
                    "https is not supported by this host yet; use http".into(),
                ));
            }
            _ => {
                return Err(HttpError::InvalidRequest(
                    "the url must start with http://".into(),
                ));
            }
        };
        let authority = uri
            .authority()
            .ok_or_else(|| HttpError::InvalidRequest("the url has no host".into()))?
            .clone();
        let host = authority
            .host()
            .trim_matches(|c| c == '[' || c == ']')
            .to_string();
        if !host_granted(&host, port, granted) {
            return Err(HttpError::HostNotAllowed(host));
        }
        let addrs = self.resolve(&host, port, req.timeout).await?;
        let deadline = start + req.timeout;

        let (stream, connect) = connect(&addrs, deadline).await?;
        let request = build_request(&req, &uri, &authority)?;
        let response =
            tokio::time::timeout_at(deadline.into(), exchange(stream, request, max_body))
                .await
                .map_err(|_| HttpError::Timeout)??;
        Ok(IncomingResponse {
            status: response.0,
            headers: response.1,
            body: response.2,
            connect,
            total: start.elapsed(),
        })
    }

    /// Resolves `host` once and keeps only the addresses the policy allows.
    async fn resolve(
        &self,
        host: &str,
        port: u16,
        timeout: Duration,
    ) -> Result<Vec<SocketAddr>, HttpError> {
        let resolved: Vec<SocketAddr> = match host.parse::<IpAddr>() {
            Ok(ip) => vec![SocketAddr::new(ip, port)],
            Err(_) => tokio::time::timeout(timeout, tokio::net::lookup_host((host, port)))
                .await
                .map_err(|_| HttpError::Timeout)?
                .map_err(|e| HttpError::ConnectionFailed(format!("cannot resolve {host}: {e}")))?
                .collect(),
        };
        let mut refused = None;
        let allowed: Vec<SocketAddr> = resolved
            .into_iter()
            .filter(|addr| match check_address(addr.ip(), &self.allow) {
                Ok(()) => true,
                Err(reason) => {
                    refused.get_or_insert(reason);
                    false
                }
            })
            .collect();
        if allowed.is_empty() {
            return Err(match refused {
                Some(reason) => HttpError::AddressRefused(reason),
                None => HttpError::ConnectionFailed(format!("{host} has no address")),
            });
        }
        Ok(allowed)
    }
}

/// Connects to the first reachable checked address.
async fn connect(
    addrs: &[SocketAddr],
    deadline: Instant,
) -> Result<(TcpStream, Duration), HttpError> {
    let start = Instant::now();
    let mut last_error = String::new();
    for addr in addrs {
        match tokio::time::timeout_at(deadline.into(), TcpStream::connect(addr)).await {
            Err(_) => return Err(HttpError::Timeout),
            Ok(Ok(stream)) => return Ok((stream, start.elapsed())),
            Ok(Err(e)) => last_error = format!("{addr}: {e}"),
        }
    }
    Err(HttpError::ConnectionFailed(last_error))
}

fn build_request(
    req: &OutgoingRequest,
    uri: &http::Uri,
    authority: &http::uri::Authority,
) -> Result<http::Request<Full<Bytes>>, HttpError> {
    let invalid = |e: http::Error| HttpError::InvalidRequest(e.to_string());
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let mut builder = http::Request::builder()
        .method(req.method.as_str())
        .uri(path)
        .header(http::header::HOST, authority.as_str());
    for (name, value) in &req.headers {
        let lower = name.to_ascii_lowercase();
        if matches!(
            lower.as_str(),
            "host" | "connection" | "transfer-encoding" | "content-length"
        ) {
            continue;
        }
        builder = builder.header(name.as_str(), value.as_str());
    }
    builder
        .body(Full::new(Bytes::from(req.body.clone())))
        .map_err(invalid)
}

type Exchanged = (u16, Vec<(String, String)>, Vec<u8>);

/// One HTTP/1.1 exchange on an established connection.
async fn exchange(
    stream: TcpStream,
    request: http::Request<Full<Bytes>>,
    max_body: usize,
) -> Result<Exchanged, HttpError> {
    let failed = |e: hyper::Error| HttpError::ConnectionFailed(e.to_string());
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(failed)?;
    let driver = tokio::spawn(connection);
    let result = async {
        let response = sender.send_request(request).await.map_err(failed)?;
        let (parts, mut body) = response.into_parts();
        if let Some(length) = parts.headers.get(http::header::CONTENT_LENGTH)
            && length
                .to_str()
                .ok()
                .and_then(|l| l.parse::<usize>().ok())
                .is_some_and(|l| l > max_body)
        {
            return Err(HttpError::ResponseTooLarge);
        }
        let mut bytes = Vec::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.map_err(failed)?.into_data() {
                if bytes.len() + data.len() > max_body {
                    return Err(HttpError::ResponseTooLarge);
                }
                bytes.extend_from_slice(&data);
            }
        }
        let headers = parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        Ok((parts.status.as_u16(), headers, bytes))
    }
    .await;
    driver.abort();
    result
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
    }
}
