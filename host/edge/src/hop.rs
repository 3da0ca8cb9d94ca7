//! Hop-by-hop fields (RFC 9110, section 7.6.1): `Connection`, the fields
//! it names, and those that describe one connection (`Keep-Alive`, `TE`,
//! `Transfer-Encoding`, `Upgrade`...) belong to a connection, not to the
//! message, and a proxy takes them off what it forwards, either way.
//!
//! The edge does so on each request it forwards to the replicas and on
//! each answer it sends back, as nginx does: a replica's
//! `Connection: close` (busybox httpd sends it on every answer) would
//! otherwise make the edge close the client's kept-alive connection after
//! every response, and a client's own would reach the replica. An upgrade
//! (a WebSocket handshake, and its `101` answer) keeps `Upgrade` and
//! `Connection: upgrade`, which make it. The CDN stores no hop-by-hop
//! field. Whether the client's connection stays open is the listener's
//! business alone.

use http::header::{CONNECTION, HOST, UPGRADE};
use http::{HeaderMap, HeaderName, HeaderValue};

/// The fields that describe one connection, whatever `Connection` names.
const HOP_BY_HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// Whether `headers` ask for a protocol upgrade (`Upgrade`, with
/// `upgrade` among the options of `Connection`).
pub(crate) fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(UPGRADE) && options(headers).any(|o| o.eq_ignore_ascii_case("upgrade"))
}

/// Takes the hop-by-hop fields off `headers`; `upgrade` keeps `Upgrade`
/// and sets `Connection: upgrade` (an upgrade request, or its `101`).
/// `Host` stays whatever `Connection` names: a request needs it.
pub(crate) fn strip(headers: &mut HeaderMap, upgrade: bool) {
    let named: Vec<HeaderName> = options(headers)
        .filter_map(|o| HeaderName::from_bytes(o.as_bytes()).ok())
        .filter(|name| *name != HOST && !(upgrade && *name == UPGRADE))
        .collect();
    for name in named {
        headers.remove(name);
    }
    for hop in HOP_BY_HOP {
        if !(upgrade && *hop == "upgrade") {
            headers.remove(*hop);
        }
    }
    if upgrade {
        headers.insert(CONNECTION, HeaderValue::from_static("upgrade"));
    }
}

/// The options of every `Connection` field of `headers`.
fn options(headers: &HeaderMap) -> impl Iterator<Item = &str> {
    headers
        .get_all(CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|o| !o.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(fields: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in fields {
            map.append(
                HeaderName::from_bytes(name.as_bytes()).unwrap(),
                HeaderValue::from_str(value).unwrap(),
            );
        }
        map
    }

    fn names(map: &HeaderMap) -> Vec<&str> {
        let mut names: Vec<&str> = map.keys().map(HeaderName::as_str).collect();
        names.sort_unstable();
        names
    }

    #[test]
    fn connection_and_the_fields_it_names_are_taken_off() {
        let mut map = headers(&[
            ("connection", "close, X-Trace"),
            ("connection", "keep-alive"),
            ("keep-alive", "timeout=5"),
            ("x-trace", "1"),
            ("transfer-encoding", "chunked"),
            ("content-type", "text/html"),
            ("etag", "\"a\""),
        ]);
        assert!(!is_upgrade(&map));
        strip(&mut map, false);
        assert_eq!(names(&map), ["content-type", "etag"]);
    }

    #[test]
    fn an_upgrade_keeps_what_makes_it_and_host_always_stays() {
        let mut map = headers(&[
            ("host", "chat.apps.localhost"),
            ("connection", "Upgrade, host, te"),
            ("upgrade", "websocket"),
            ("te", "trailers"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ]);
        assert!(is_upgrade(&map));
        strip(&mut map, true);
        assert_eq!(
            names(&map),
            ["connection", "host", "sec-websocket-key", "upgrade"]
        );
        assert_eq!(map["connection"], "upgrade");
        assert_eq!(map["upgrade"], "websocket");
        let mut plain = headers(&[("upgrade", "h2c"), ("connection", "close")]);
        assert!(!is_upgrade(&plain), "Upgrade without the option is none");
        strip(&mut plain, false);
        assert!(plain.is_empty());
    }
}
