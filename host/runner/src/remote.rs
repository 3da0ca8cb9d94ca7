//! [`RemoteReplicas`]: an app's replicas that run on another host, reached
//! through that host's edge. A request goes on over HTTP/1.1 to the other
//! edge's address with its Host header unchanged, so that edge routes it
//! to the replicas it runs; [`HOPS`] counts the edges a request crossed,
//! and a request that crossed [`MAX_HOPS`] is not sent on again (two hosts
//! that each think the other runs an app do not bounce it forever).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use http_body_util::BodyExt;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

use crate::{Body, BoxError, Error, Replicas, Result};

/// The header that counts the edges a request was forwarded by.
pub const HOPS: &str = "x-plateau-edge-hops";
/// The edges' proof that another edge forwarded the request (a token
/// derived from the hosts' shared secret key).
pub const EDGE_TOKEN: &str = "x-plateau-edge-token";
/// The client's address as the forwarding edge saw it.
pub const CLIENT_ADDR: &str = "x-plateau-client-addr";
/// `https` when the client reached the forwarding edge over HTTPS.
pub const CLIENT_PROTO: &str = "x-plateau-client-proto";
/// The most edges a request is forwarded by.
pub const MAX_HOPS: u32 = 2;
/// Longest time one request may take.
const REQUEST_DEADLINE: Duration = Duration::from_secs(60);

/// The replicas of an app that another host runs, behind its edge.
pub struct RemoteReplicas {
    /// The other host's edge.
    addr: SocketAddr,
    client: Client<HttpConnector, Body>,
    /// Proves to the other edge that this one forwarded the request.
    token: Option<Arc<str>>,
}

impl RemoteReplicas {
    pub fn new(addr: SocketAddr, token: Option<Arc<str>>) -> RemoteReplicas {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        connector.set_connect_timeout(Some(Duration::from_secs(5)));
        RemoteReplicas {
            addr,
            client: Client::builder(TokioExecutor::new()).build(connector),
            token,
        }
    }

    /// The other host's edge.
    pub fn address(&self) -> SocketAddr {
        self.addr
    }
}

#[async_trait]
impl Replicas for RemoteReplicas {
    async fn handle(&self, request: http::Request<Body>) -> Result<http::Response<Body>> {
        let (mut parts, body) = request.into_parts();
        let hops = parts
            .headers
            .get(HOPS)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u32>().ok())
            .unwrap_or(0);
        if hops >= MAX_HOPS {
            // The hosts disagree about where the app runs: the request is
            // retried once they agree again.
            return Err(Error::Stopped);
        }
        // The client as this edge saw it (its `X-Forwarded-*`, set by the
        // edge), for the other edge to believe with the token.
        if let Some(token) = &self.token
            && let Ok(token) = http::HeaderValue::from_str(token)
        {
            let client = parts.headers.get("x-forwarded-for").cloned();
            let proto = parts.headers.get("x-forwarded-proto").cloned();
            parts.headers.insert(EDGE_TOKEN, token);
            if let Some(client) = client {
                parts.headers.insert(CLIENT_ADDR, client);
            }
            if let Some(proto) = proto {
                parts.headers.insert(CLIENT_PROTO, proto);
            }
        }
        // The client's side of an upgrade (a WebSocket), spliced to the
        // other edge's once it accepts.
        let client_upgrade = parts.extensions.remove::<hyper::upgrade::OnUpgrade>();
        parts.headers.insert(
            HOPS,
            http::HeaderValue::from_str(&(hops + 1).to_string()).expect("a number is a header"),
        );
        let path = parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .to_owned();
        parts.uri = format!("http://{}{path}", self.addr)
            .parse()
            .map_err(|e| Error::Failed(format!("cannot address the other host's edge: {e}")))?;
        let request = http::Request::from_parts(parts, body);
        let mut response = tokio::time::timeout(REQUEST_DEADLINE, self.client.request(request))
            .await
            .map_err(|_| Error::Timeout(REQUEST_DEADLINE.as_secs()))?
            .map_err(|e| {
                if e.is_connect() {
                    // The other host is gone: the request is retried once
                    // the app runs elsewhere.
                    Error::Stopped
                } else {
                    Error::Failed(format!("the other host's edge did not answer: {e}"))
                }
            })?;
        if response.status() == http::StatusCode::SWITCHING_PROTOCOLS
            && let Some(client) = client_upgrade
        {
            let upstream = hyper::upgrade::on(&mut response);
            tokio::spawn(async move {
                let (Ok(client), Ok(upstream)) = tokio::join!(client, upstream) else {
                    return;
                };
                let mut client = hyper_util::rt::TokioIo::new(client);
                let mut upstream = hyper_util::rt::TokioIo::new(upstream);
                let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
            });
        }
        Ok(response.map(|body| body.map_err(|e| Box::new(e) as BoxError).boxed_unsync()))
    }

    fn env_value(&self, _key: &str) -> Option<String> {
        None
    }

    fn set_replicas(&self, _replicas: u32) {}

    fn stop(&self) {}
}
