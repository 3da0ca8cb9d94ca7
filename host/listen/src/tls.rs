//! HTTPS listeners ([`serve_tls`]): the TLS handshake (rustls, with the
//! acceptor's certificates and ALPN), then HTTP/1.1 or HTTP/2 on the same
//! connection as the client chose, with upgrades (WebSocket over
//! HTTP/1.1) handed to the service. The slow-client limits are those of
//! [`crate::serve`]: the handshake and each request's headers within
//! `header_read`, each body read within `body_read`.

use std::net::SocketAddr;
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::{Body, Connection, Linger, Timeouts};

/// Serves HTTPS on `listener` until the task is dropped. `make` gives
/// the service of a connection from the client's address; requests reach
/// it with their HTTP version (an HTTP/2 request names its host in the
/// URI's authority, not in a `Host` header).
pub async fn serve_tls<M, S, B>(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    timeouts: Timeouts,
    make: M,
) where
    M: Fn(SocketAddr) -> S,
    S: tower::Service<http::Request<Body>, Response = http::Response<B>>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    S::Future: Send + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(timeouts.header_read);
    builder.http2().timer(TokioTimer::new());
    let handshake_within = timeouts.header_read.unwrap_or(Duration::from_secs(3600));
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "accepting a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = Connection {
            service: make(peer),
            body_read: timeouts.body_read,
        };
        let acceptor = acceptor.clone();
        let builder = builder.clone();
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(handshake_within, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "tls handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "tls handshake timed out");
                    return;
                }
            };
            let conn =
                builder.serve_connection_with_upgrades(TokioIo::new(Linger::new(tls)), service);
            if let Err(e) = conn.await {
                tracing::debug!(error = %e, "connection ended");
            }
        });
    }
}
