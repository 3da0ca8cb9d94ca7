//! The edge's HTTPS listener (`PLATEAU_EDGE_TLS_LISTEN`): rustls picks
//! the certificate by SNI from the edge's table at each handshake, so a
//! new or renewed certificate serves from the next connection on, without
//! a restart. A custom domain takes the certificate issued for it; a name
//! under the apps domain takes the operator's wildcard certificate, when
//! there is one. ALPN offers HTTP/2 and HTTP/1.1.

use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use plateau_listen::Timeouts;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use tokio::net::TcpListener;
use tower::service_fn;

use crate::Edge;

/// A certificate chain and its private key that the edge could not use.
#[derive(Debug)]
pub struct BadCertificate(pub String);

impl fmt::Display for BadCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadCertificate {}

/// A certificate chain (leaf first) and its private key, from PEM text
/// holding both (or from two texts concatenated).
pub fn certified_key(pem: &[u8]) -> Result<Arc<CertifiedKey>, BadCertificate> {
    let chain = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| BadCertificate(format!("reading the certificates: {e}")))?;
    if chain.is_empty() {
        return Err(BadCertificate("no certificate in the PEM text".to_owned()));
    }
    let key = PrivateKeyDer::from_pem_slice(pem)
        .map_err(|e| BadCertificate(format!("reading the private key: {e}")))?;
    let signing = rustls::crypto::ring::sign::any_supported_type(&key)
        .map_err(|e| BadCertificate(format!("the private key: {e}")))?;
    let certified = CertifiedKey::new(chain, signing);
    // A key that does not sign for the leaf would fail every handshake.
    match certified.keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {
            Ok(Arc::new(certified))
        }
        Err(e) => Err(BadCertificate(format!(
            "the private key does not belong to the certificate: {e}"
        ))),
    }
}

/// Picks each handshake's certificate from the edge's table.
struct BySni(Arc<Edge>);

impl fmt::Debug for BySni {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BySni")
    }
}

impl ResolvesServerCert for BySni {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let name = hello.server_name()?;
        self.0.certificate_for(name)
    }
}

/// The TLS settings of `edge`'s HTTPS listener.
pub fn server_config(edge: Arc<Edge>) -> Arc<ServerConfig> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default protocol versions")
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(BySni(edge)));
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Arc::new(config)
}

/// Serves `edge` over HTTPS on `listener` until the task is dropped.
pub async fn serve_tls(listener: TcpListener, edge: Arc<Edge>, timeouts: Timeouts) {
    let acceptor = tokio_rustls::TlsAcceptor::from(server_config(edge.clone()));
    let make = |peer: SocketAddr| {
        let edge = edge.clone();
        service_fn(move |req| {
            let edge = edge.clone();
            async move {
                Ok::<_, std::convert::Infallible>(
                    crate::demand::route(&edge, req, peer, true).await,
                )
            }
        })
    };
    plateau_listen::serve_tls(listener, acceptor, timeouts, make).await;
}
