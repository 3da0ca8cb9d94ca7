//! The HTTPS listener with an app whose replicas accept upgrades: SNI
//! picks the domain's certificate (an unknown name gets none), ALPN
//! negotiates HTTP/1.1 and an upgraded connection echoes bytes through
//! the edge, as a WebSocket would; plain HTTP to a domain with a
//! certificate is redirected to HTTPS; kept-alive connections stay open
//! whatever the replicas say of theirs.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use plateau_listen::Timeouts;
use plateau_runner::{Body, Replicas, Result};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::{DomainRoute, Edge, Target};

pub(crate) const NAME: &str = "shop.example.test";

/// Replicas that accept any upgrade and echo what the client sends.
struct Echo;

#[async_trait]
impl Replicas for Echo {
    async fn handle(&self, mut request: http::Request<Body>) -> Result<http::Response<Body>> {
        let empty = || {
            Full::new(Bytes::new())
                .map_err(|n| match n {})
                .boxed_unsync()
        };
        if request.headers().contains_key(http::header::UPGRADE) {
            let upgrade = hyper::upgrade::on(&mut request);
            tokio::spawn(async move {
                let upgraded = upgrade.await.expect("the edge hands the connection over");
                let mut io = hyper_util::rt::TokioIo::new(upgraded);
                let mut buf = [0u8; 64];
                while let Ok(n) = io.read(&mut buf).await {
                    if n == 0 || io.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                }
            });
            return Ok(http::Response::builder()
                .status(http::StatusCode::SWITCHING_PROTOCOLS)
                .header(http::header::CONNECTION, "upgrade")
                .header(http::header::UPGRADE, "websocket")
                .body(empty())
                .unwrap());
        }
        Ok(http::Response::new(empty()))
    }
    fn env_value(&self, _: &str) -> Option<String> {
        None
    }
    fn set_replicas(&self, _: u32) {}
    fn stop(&self) {}
}

/// An edge serving [`NAME`] (the app `shop`, [`Echo`]) over HTTPS with a
/// fresh certificate; its address and the certificate a client trusts.
async fn edge() -> (
    Arc<Edge>,
    std::net::SocketAddr,
    rustls::pki_types::CertificateDer<'static>,
) {
    edge_of(Arc::new(Echo)).await
}

/// [`edge`] with `replicas` serving the app.
pub(crate) async fn edge_of(
    replicas: Arc<dyn plateau_runner::Replicas>,
) -> (
    Arc<Edge>,
    std::net::SocketAddr,
    rustls::pki_types::CertificateDer<'static>,
) {
    let certified = rcgen::generate_simple_self_signed(vec![NAME.to_owned()]).unwrap();
    let pem = format!(
        "{}{}",
        certified.cert.pem(),
        certified.signing_key.serialize_pem()
    );
    let cert = crate::tls::certified_key(pem.as_bytes()).unwrap();
    let edge = Arc::new(Edge::new("apps.localhost"));
    edge.set("shop", Target::Serving(replicas));
    let route = DomainRoute {
        slug: "shop".to_owned(),
        cert: Some(cert),
    };
    edge.set_domains(HashMap::from([(NAME.to_owned(), route)]));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    edge.set_https_port(addr.port());
    tokio::spawn(crate::serve_tls(
        listener,
        edge.clone(),
        Timeouts::default(),
    ));
    (edge, addr, certified.cert.der().clone())
}

async fn connect(
    addr: std::net::SocketAddr,
    root: &rustls::pki_types::CertificateDer<'static>,
    name: &str,
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    connect_alpn(addr, root, name, b"http/1.1").await
}

/// [`connect`], offering `alpn` alone.
pub(crate) async fn connect_alpn(
    addr: std::net::SocketAddr,
    root: &rustls::pki_types::CertificateDer<'static>,
    name: &str,
    alpn: &[u8],
) -> std::io::Result<tokio_rustls::client::TlsStream<tokio::net::TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(root.clone()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    connector
        .connect(ServerName::try_from(name.to_owned()).unwrap(), tcp)
        .await
}

#[tokio::test]
async fn an_upgrade_is_passed_through_over_https() {
    let (_edge, addr, root) = edge().await;
    let mut tls = connect(addr, &root, NAME).await.expect("the handshake");
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let head = format!(
        "GET /socket HTTP/1.1\r\nHost: {NAME}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    while !answer.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        assert_eq!(tls.read(&mut byte).await.unwrap(), 1, "{answer:?}");
        answer.push(byte[0]);
    }
    let answer = String::from_utf8(answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 101"), "{answer}");
    for message in ["ping", "second frame"] {
        tls.write_all(message.as_bytes()).await.unwrap();
        let mut echoed = vec![0u8; message.len()];
        tls.read_exact(&mut echoed).await.unwrap();
        assert_eq!(echoed, message.as_bytes());
    }
}

#[tokio::test]
async fn sni_picks_the_domain_and_unknown_names_get_no_certificate() {
    let (edge, addr, root) = edge().await;
    assert!(connect(addr, &root, "other.example.test").await.is_err());
    assert!(connect(addr, &root, NAME).await.is_ok());
    // Detached: the next handshake gets nothing.
    edge.set_domains(HashMap::new());
    assert!(connect(addr, &root, NAME).await.is_err());
}

#[tokio::test]
async fn plain_http_to_a_domain_with_a_certificate_redirects() {
    let (edge, https, _) = edge().await;
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let plain = listener.local_addr().unwrap();
    tokio::spawn(crate::serve(listener, edge, Timeouts::default()));
    let mut tcp = tokio::net::TcpStream::connect(plain).await.unwrap();
    let req = format!("GET /a?b=1 HTTP/1.1\r\nHost: {NAME}\r\nConnection: close\r\n\r\n");
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut raw = String::new();
    tcp.read_to_string(&mut raw).await.unwrap();
    assert!(raw.starts_with("HTTP/1.1 308"), "{raw}");
    let location = format!("location: https://{NAME}:{}/a?b=1", https.port());
    assert!(raw.to_ascii_lowercase().contains(&location), "{raw}");
}

#[tokio::test]
async fn an_upgrade_is_passed_through_over_plain_http_with_the_cdn_on() {
    let edge = Arc::new(Edge::new("apps.localhost"));
    edge.set("chat", Target::Serving(Arc::new(Echo)));
    edge.set_cdn("chat", true);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(crate::serve(listener, edge, Timeouts::default()));
    let mut tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = "GET /socket HTTP/1.1\r\nHost: chat.apps.localhost\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n";
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    while !answer.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        assert_eq!(tcp.read(&mut byte).await.unwrap(), 1, "{answer:?}");
        answer.push(byte[0]);
    }
    let answer = String::from_utf8(answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 101"), "{answer}");
    for message in ["ping", "second frame"] {
        tcp.write_all(message.as_bytes()).await.unwrap();
        let mut echoed = vec![0u8; message.len()];
        tcp.read_exact(&mut echoed).await.unwrap();
        assert_eq!(echoed, message.as_bytes());
    }
}
