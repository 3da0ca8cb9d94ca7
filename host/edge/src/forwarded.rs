//! The client of a request another host's edge forwarded here: that edge
//! names the client's address and scheme in headers of its own, proven
//! by the edges' shared token (derived from the hosts' secret key), and
//! only then are they believed. A client cannot name itself: the headers
//! are removed from every request, and without the token the peer is the
//! client.

use std::net::{IpAddr, SocketAddr};

use http::HeaderMap;
use plateau_runner::remote::{CLIENT_ADDR, CLIENT_PROTO, EDGE_TOKEN};

use crate::Edge;

/// The client's address and whether it came over HTTPS: as the
/// forwarding edge saw them when the request carries the edges' token,
/// else the peer's and this listener's. The edges' headers are removed.
pub(crate) fn client(
    edge: &Edge,
    headers: &mut HeaderMap,
    peer: SocketAddr,
    secure: bool,
) -> (SocketAddr, bool) {
    let proven = match (edge.forwarding_token(), headers.get(EDGE_TOKEN)) {
        (Some(token), Some(sent)) => same(token.as_bytes(), sent.as_bytes()),
        _ => false,
    };
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    let addr = text(CLIENT_ADDR).and_then(|a| a.trim().parse::<IpAddr>().ok());
    let https = text(CLIENT_PROTO) == Some("https");
    for name in [EDGE_TOKEN, CLIENT_ADDR, CLIENT_PROTO] {
        headers.remove(name);
    }
    match (proven, addr) {
        (true, Some(ip)) => (SocketAddr::new(ip, peer.port()), https),
        _ => (peer, secure),
    }
}

/// Compares in time that depends on the length only.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// The `Forwarded` header's value (RFC 7239) for a client.
pub(crate) fn forwarded(client: IpAddr, secure: bool) -> String {
    let proto = if secure { "https" } else { "http" };
    match client {
        IpAddr::V4(ip) => format!("for={ip};proto={proto}"),
        IpAddr::V6(ip) => format!("for=\"[{ip}]\";proto={proto}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn only_the_edges_token_names_the_client() {
        let edge = Edge::new("apps.test").with_forwarding_token("secret-token".into());
        let peer: SocketAddr = "10.0.0.2:4000".parse().unwrap();
        let sent = [(CLIENT_ADDR, "203.0.113.7"), (CLIENT_PROTO, "https")];
        let mut h = headers(&[sent[0], sent[1], (EDGE_TOKEN, "secret-token")]);
        let (seen, secure) = client(&edge, &mut h, peer, false);
        assert_eq!(
            (seen.ip().to_string(), secure),
            ("203.0.113.7".into(), true)
        );
        assert!(h.is_empty(), "{h:?}");
        for token in ["secret-tokem", "", "secret-token-longer"] {
            let mut h = headers(&[sent[0], sent[1], (EDGE_TOKEN, token)]);
            assert_eq!(client(&edge, &mut h, peer, false), (peer, false), "{token}");
            assert!(h.is_empty(), "{h:?}");
        }
        let mut h = headers(&[sent[0], sent[1]]);
        assert_eq!(client(&edge, &mut h, peer, false), (peer, false));
        let alone = Edge::new("apps.test");
        let mut h = headers(&[sent[0], (EDGE_TOKEN, "")]);
        assert_eq!(client(&alone, &mut h, peer, true), (peer, true));
        assert_eq!(
            forwarded("2001:db8::1".parse().unwrap(), true),
            "for=\"[2001:db8::1]\";proto=https"
        );
    }
}
