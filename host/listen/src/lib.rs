//! Plateau's HTTP/1.1 listeners (the API with the registry, the apps
//! edge, the S3 endpoint) all accept connections through [`serve`] (the
//! edge's HTTPS listener, HTTP/1.1 and HTTP/2, through [`serve_tls`]), so
//! the limits a slow client meets are set in one place ([`Timeouts`]):
//!
//! - headers must arrive within `header_read` of the start of a request
//!   (or of the wait for the next one on a kept-alive connection);
//!   otherwise the connection is closed (slowloris);
//! - each read of a request body may wait at most `body_read` for the
//!   client ([`Body`]); a body that stalls ends with an error the service
//!   answers (the API with 408) and the connection closes.
//!
//! Both accept protocol upgrades (a WebSocket the edge passes through to
//! an app): a 101 answer hands the connection over to the service.
//!
//! How much of a body a service takes is the service's own rule. A
//! connection the server closes lingers a moment (`linger`), so a client
//! still sending a refused body reads the answer rather than a reset.

mod body;
mod linger;
mod tls;

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tower::ServiceExt as _;

use crate::linger::Linger;

pub use body::{Body, BodyError};
pub use tls::serve_tls;

/// How long a client may keep the server waiting; `None` waits forever.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Timeouts {
    pub header_read: Option<Duration>,
    pub body_read: Option<Duration>,
}

impl Timeouts {
    /// From milliseconds, 0 meaning no limit.
    pub fn from_millis(header_read: u64, body_read: u64) -> Timeouts {
        let limit = |ms| (ms > 0).then(|| Duration::from_millis(ms));
        Timeouts {
            header_read: limit(header_read),
            body_read: limit(body_read),
        }
    }
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts::from_millis(30_000, 30_000)
    }
}

/// One connection's service: the listener's, with the request body
/// wrapped in [`Body`].
struct Connection<S> {
    service: S,
    body_read: Option<Duration>,
}

impl<S, B> hyper::service::Service<http::Request<Incoming>> for Connection<S>
where
    S: tower::Service<http::Request<Body>, Response = http::Response<B>> + Clone,
{
    type Response = http::Response<B>;
    type Error = S::Error;
    type Future = tower::util::Oneshot<S, http::Request<Body>>;

    fn call(&self, req: http::Request<Incoming>) -> Self::Future {
        let body_read = self.body_read;
        self.service
            .clone()
            .oneshot(req.map(|b| Body::new(b, body_read)))
    }
}

/// Serves HTTP/1.1 on `listener` until `shutdown` completes, then lets
/// the requests in flight finish. `make` gives the service of a
/// connection from the client's address.
pub async fn serve<M, S, B>(
    listener: TcpListener,
    timeouts: Timeouts,
    make: M,
    shutdown: impl Future<Output = ()>,
) where
    M: Fn(SocketAddr) -> S,
    S: tower::Service<http::Request<Body>, Response = http::Response<B>> + Clone + Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    S::Future: Send + 'static,
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(timeouts.header_read);
    // Asks the connections to finish their request and close; each holds
    // a receiver, so `closed` tells when the last one has ended.
    let (stop, stopping) = tokio::sync::watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection");
                    // Out of descriptors: let some connections end.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        // Small responses go out at once instead of waiting on the
        // client's delayed ACK (Nagle's algorithm).
        let _ = stream.set_nodelay(true);
        let service = Connection {
            service: make(peer),
            body_read: timeouts.body_read,
        };
        let conn = builder
            .serve_connection(TokioIo::new(Linger::new(stream)), service)
            .with_upgrades();
        let mut stopping = stopping.clone();
        tokio::spawn(async move {
            tokio::pin!(conn);
            // A server dropped rather than shut down leaves its
            // connections be.
            let asked = async {
                if stopping.wait_for(|stop| *stop).await.is_err() {
                    std::future::pending::<()>().await;
                }
            };
            let ended = tokio::select! {
                ended = conn.as_mut() => Some(ended),
                () = asked => None,
            };
            let ended = match ended {
                Some(ended) => ended,
                None => {
                    conn.as_mut().graceful_shutdown();
                    conn.await
                }
            };
            if let Err(e) = ended {
                tracing::debug!(error = %e, "connection ended");
            }
        });
    }
    drop(listener);
    drop(stopping);
    let _ = stop.send(true);
    stop.closed().await;
}
