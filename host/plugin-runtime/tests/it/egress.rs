//! Outbound HTTP through the egress guard, against a local server; kept
//! connections to one server.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use plateau_plugin_artifacts::fixtures;
use plateau_plugin_runtime::egress::{EgressGuard, OutgoingRequest, parse_allow_list};
use plateau_plugin_runtime::{Capability, PluginSettings};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::{Harness, granting, harness, harness_with, request, text, with_body};

/// A local HTTP server answering `hello` to a bounded number of
/// connections; counts the connections it accepted.
async fn server() -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        for _ in 0..16 {
            let Ok((mut socket, _)) = listener.accept().await else {
                return;
            };
            count.fetch_add(1, Ordering::SeqCst);
            let mut buf = [0u8; 4096];
            let _ = socket.read(&mut buf).await;
            let _ = socket
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\nhello",
                )
                .await;
        }
    });
    (port, accepted)
}

fn settings(hosts: &[String]) -> PluginSettings {
    PluginSettings {
        outbound_hosts: hosts.to_vec(),
        ..granting(&[Capability::Http])
    }
}

async fn fetch(h: &Harness, hosts: &[String], url: &str) -> (u16, String, Vec<(String, String)>) {
    let egress = h.load(fixtures::EGRESS, settings(hosts)).await.version;
    let req = with_body(
        request("POST", "/egress/fetch", "/egress/fetch", "", Some("org1")),
        url,
    );
    let response = egress
        .handle(req)
        .await
        .expect("the guest answers")
        .response;
    (response.status, text(&response.body), response.headers)
}

#[tokio::test]
async fn loopback_is_refused_unless_exempted() {
    let (port, accepted) = server().await;
    let url = format!("http://127.0.0.1:{port}/hello");
    let hosts = [format!("127.0.0.1:{port}")];

    let (status, body, _) = fetch(&harness(), &hosts, &url).await;
    assert_eq!(status, 502);
    assert!(
        body.starts_with("HttpError::AddressRefused") && body.contains("loopback"),
        "{body}"
    );
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        0,
        "refused before connecting"
    );

    let exempted =
        harness_with(|c| c.egress_allow = parse_allow_list("127.0.0.0/8,::1/128").unwrap());
    let (status, body, headers) = fetch(&exempted, &hosts, &url).await;
    assert_eq!((status, body.as_str()), (200, "hello"));
    assert!(
        headers
            .iter()
            .any(|(k, v)| k == "x-upstream-status" && v == "200")
    );
    assert!(headers.iter().any(|(k, _)| k == "x-connect-ms"));
    assert!(headers.iter().any(|(k, _)| k == "x-total-ms"));
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn cloud_metadata_is_refused_even_when_granted() {
    let exempted = harness_with(|c| c.egress_allow = parse_allow_list("127.0.0.0/8").unwrap());
    let hosts = ["169.254.169.254".to_string(), "[fd00:ec2::254]".into()];
    for url in [
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
    ] {
        let (status, body, _) = fetch(&exempted, &hosts, url).await;
        assert_eq!(status, 502);
        assert!(
            body.starts_with("HttpError::AddressRefused"),
            "{url}: {body}"
        );
    }
}

#[tokio::test]
async fn only_granted_hosts_are_reachable() {
    let (port, accepted) = server().await;
    let exempted = harness_with(|c| c.egress_allow = parse_allow_list("127.0.0.0/8").unwrap());
    let (status, body, _) = fetch(
        &exempted,
        &["example.com".into()],
        &format!("http://127.0.0.1:{port}/"),
    )
    .await;
    assert_eq!(status, 502);
    assert!(body.starts_with("HttpError::HostNotAllowed"), "{body}");
    // The grant is per port too.
    let (_, body, _) = fetch(
        &exempted,
        &["127.0.0.1:1".into()],
        &format!("http://127.0.0.1:{port}/"),
    )
    .await;
    assert!(body.starts_with("HttpError::HostNotAllowed"), "{body}");
    assert_eq!(accepted.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn responses_over_the_cap_are_refused() {
    let (port, accepted) = server().await;
    let h = harness_with(|c| c.egress_allow = parse_allow_list("127.0.0.1").unwrap());
    let mut settings = settings(&[format!("127.0.0.1:{port}")]);
    settings.limits.http_max_response_bytes = 4;
    let egress = h.load(fixtures::EGRESS, settings).await.version;
    let url = format!("http://127.0.0.1:{port}/big");
    let req = with_body(
        request("POST", "/egress/fetch", "/egress/fetch", "", None),
        &url,
    );
    let response = egress.handle(req).await.unwrap().response;
    assert_eq!(response.status, 502);
    assert_eq!(text(&response.body), "HttpError::ResponseTooLarge");
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
}

/// A local https server with a fresh self-signed certificate for
/// 127.0.0.1; returns its port and the certificate (DER).
async fn tls_server() -> (u16, Vec<u8>) {
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

    let certified = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()]).unwrap();
    let cert = certified.cert.der().clone();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        certified.signing_key.serialize_der(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        for _ in 0..4 {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let Ok(mut tls) = acceptor.accept(socket).await else {
                continue;
            };
            let mut buf = [0u8; 4096];
            let _ = tls.read(&mut buf).await;
            let _ = tls
                .write_all(
                    b"HTTP/1.1 200 OK\r\ncontent-length: 6\r\nconnection: close\r\n\r\nsecret",
                )
                .await;
            let _ = tls.shutdown().await;
        }
    });
    (port, cert.to_vec())
}

#[tokio::test]
async fn https_is_verified_against_the_trusted_roots() {
    let (port, cert) = tls_server().await;
    let url = format!("https://127.0.0.1:{port}/");
    let hosts = [format!("127.0.0.1:{port}")];
    let allow = parse_allow_list("127.0.0.0/8").unwrap();

    let untrusted = harness_with(|c| c.egress_allow = allow.clone());
    let (status, body, _) = fetch(&untrusted, &hosts, &url).await;
    assert_eq!(status, 502);
    assert!(
        body.starts_with("HttpError::ConnectionFailed(\"tls:"),
        "{body}"
    );

    let trusted = harness_with(|c| {
        c.egress_allow = allow;
        c.extra_tls_roots = vec![cert];
    });
    let (status, body, _) = fetch(&trusted, &hosts, &url).await;
    assert_eq!((status, body.as_str()), (200, "secret"));
}

/// A local keep-alive HTTP/1.1 server: `hello` to every request, with no
/// `connection: close`; it closes a connection itself after `per_conn`
/// answers. Counts the connections it accepted.
async fn keep_alive_server(per_conn: usize) -> (u16, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = Vec::new();
                for _ in 0..per_conn {
                    while !buf.windows(4).any(|w| w == b"\r\n\r\n") {
                        let mut chunk = [0u8; 4096];
                        match socket.read(&mut chunk).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => buf.extend_from_slice(&chunk[..n]),
                        }
                    }
                    buf.clear();
                    let answer = b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello";
                    if socket.write_all(answer).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, accepted)
}

fn get(port: u16) -> OutgoingRequest {
    OutgoingRequest {
        method: "GET".into(),
        url: format!("http://127.0.0.1:{port}/"),
        headers: Vec::new(),
        body: Vec::new(),
        timeout: Duration::from_secs(5),
        keep_body: None,
    }
}

#[tokio::test]
async fn requests_to_one_server_reuse_a_kept_connection_and_replace_a_closed_one() {
    let guard = EgressGuard::new(parse_allow_list("127.0.0.0/8").unwrap());
    let granted = ["127.0.0.1".to_owned()];
    let (port, accepted) = keep_alive_server(3).await;
    // Three answers on one connection; the server then closes it without
    // saying so, and the fourth request goes out on a new one.
    for i in 0..4 {
        let answer = guard.send(&granted, get(port), 1 << 20).await.unwrap();
        assert_eq!(
            (answer.status, answer.body.as_slice()),
            (200, &b"hello"[..]),
            "{i}"
        );
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 2);
    // An answer read only in part (a kept 2 bytes) closes its connection.
    let mut partial = get(port);
    partial.keep_body = Some(2);
    let answer = guard.send(&granted, partial, 1 << 20).await.unwrap();
    assert_eq!(
        (answer.body.as_slice(), answer.body_truncated),
        (&b"he"[..], true)
    );
    guard.send(&granted, get(port), 1 << 20).await.unwrap();
    assert_eq!(accepted.load(Ordering::SeqCst), 3);
}

/// A server that answers each request with the `host` header it got.
async fn host_echo() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let mut buf = vec![0u8; 4096];
            let n = socket.read(&mut buf).await.unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let host = head
                .lines()
                .find_map(|l| l.strip_prefix("host: ").or(l.strip_prefix("Host: ")))
                .unwrap_or("")
                .to_owned();
            let answer = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{host}",
                host.len()
            );
            let _ = socket.write_all(answer.as_bytes()).await;
        }
    });
    addr
}

#[tokio::test]
async fn requests_to_this_hosts_apps_go_to_its_edge_with_the_virtual_host_kept() {
    use plateau_plugin_runtime::egress::LocalEdge;
    let edge = host_echo().await;
    // No exemption: loopback is refused, except as the edge's address.
    let guard = EgressGuard::new(Vec::new()).with_local_edge(LocalEdge {
        domain: "apps.test".into(),
        address: Arc::new(move || Some(edge)),
    });
    let granted = ["*".to_owned()];
    let mut to_app = get(1);
    to_app.url = "http://shop.apps.test:8081/".into();
    let answer = guard.send(&granted, to_app, 1 << 20).await.unwrap();
    assert_eq!(answer.body, b"shop.apps.test:8081");
    // A `host` header the plugin sets is the virtual host sent (cron jobs
    // name one); the connection still goes where the url says.
    let mut named = get(1);
    named.url = "http://any.apps.test/".into();
    named.headers = vec![("Host".into(), "www.example.com".into())];
    let answer = guard.send(&granted, named, 1 << 20).await.unwrap();
    assert_eq!(answer.body, b"www.example.com");
    // Other names still resolve and meet the policy.
    let mut elsewhere = get(edge.port());
    elsewhere.url = format!("http://localhost:{}/", edge.port());
    let refused = guard.send(&granted, elsewhere, 1 << 20).await.unwrap_err();
    assert!(
        matches!(
            refused,
            plateau_plugin_runtime::egress::HttpError::AddressRefused(_)
        ),
        "{refused:?}"
    );
}
