//! Kept-alive connections under concurrent load, over HTTPS (HTTP/1.1
//! and HTTP/2) and plain HTTP, in front of replicas that answer as
//! busybox httpd does (`Connection: close` on every answer): every
//! request is answered on the connection it was sent on, and what failed
//! is counted by kind, so an assertion that fails says why.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_trait::async_trait;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use plateau_listen::Timeouts;
use plateau_runner::{Body, Replicas, Result};
use tokio::net::TcpListener;

use crate::tls_tests::{NAME, connect_alpn, edge_of};

/// Connections per listener, and requests on each.
const CONNECTIONS: usize = 8;
const REQUESTS: usize = 40;

/// Replicas that answer `hello` closing their side (busybox httpd's way),
/// counting what reached them with a hop-by-hop field.
#[derive(Default)]
struct Closing {
    hop_fields_seen: AtomicU64,
}

#[async_trait]
impl Replicas for Closing {
    async fn handle(&self, request: http::Request<Body>) -> Result<http::Response<Body>> {
        let headers = request.headers();
        if headers.contains_key("keep-alive") || headers.contains_key("x-hop") {
            self.hop_fields_seen.fetch_add(1, Ordering::Relaxed);
        }
        Ok(http::Response::builder()
            .header(http::header::CONNECTION, "close")
            .header("keep-alive", "timeout=5")
            .body(
                Full::new(Bytes::from_static(b"hello"))
                    .map_err(|n| match n {})
                    .boxed_unsync(),
            )
            .unwrap())
    }
    fn env_value(&self, _: &str) -> Option<String> {
        None
    }
    fn set_replicas(&self, _: u32) {}
    fn stop(&self) {}
}

/// Errors counted by kind: the step that failed and hyper's word for it.
type Kinds = BTreeMap<String, u64>;

/// The request every client sends, with hop-by-hop fields of its own
/// (which the replica must not see).
fn request(host: &str) -> http::Request<Empty<Bytes>> {
    http::Request::get("/")
        .header(http::header::HOST, host)
        .header(http::header::CONNECTION, "keep-alive, x-hop")
        .header("keep-alive", "timeout=30")
        .header("x-hop", "1")
        .body(Empty::new())
        .unwrap()
}

/// Sends [`REQUESTS`] requests one after the other on `send`: how many
/// were answered 200 with their body, and what failed, by kind.
async fn on_one_connection(
    mut send: hyper::client::conn::http1::SendRequest<Empty<Bytes>>,
    host: &str,
) -> (u64, Kinds) {
    let (mut answered, mut errors) = (0, Kinds::new());
    for _ in 0..REQUESTS {
        let outcome = async {
            send.ready().await.map_err(|e| format!("reuse: {e}"))?;
            let response = send
                .send_request(request(host))
                .await
                .map_err(|e| format!("response: {e}"))?;
            check(response).await
        };
        match outcome.await {
            Ok(()) => answered += 1,
            Err(kind) => *errors.entry(kind).or_default() += 1,
        }
    }
    (answered, errors)
}

/// `Ok` for a 200 with `hello`, else what it was.
async fn check(response: http::Response<hyper::body::Incoming>) -> std::result::Result<(), String> {
    let status = response.status();
    let connection = response.headers().get(http::header::CONNECTION).cloned();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("body: {e}"))?
        .to_bytes();
    if status != 200 || body != "hello" {
        return Err(format!("status {status}"));
    }
    if let Some(connection) = connection {
        return Err(format!("answered Connection: {connection:?}"));
    }
    Ok(())
}

/// Adds up the connections' tallies.
async fn tally(tasks: Vec<tokio::task::JoinHandle<(u64, Kinds)>>) -> (u64, Kinds) {
    let (mut answered, mut errors) = (0, Kinds::new());
    for task in tasks {
        let (a, e) = task.await.unwrap();
        answered += a;
        for (kind, n) in e {
            *errors.entry(kind).or_default() += n;
        }
    }
    (answered, errors)
}

#[tokio::test]
async fn kept_alive_connections_answer_every_request_though_the_replicas_close_theirs() {
    let replicas = Arc::new(Closing::default());
    let (edge, https, root) = edge_of(replicas.clone()).await;
    let expected = (CONNECTIONS * REQUESTS) as u64;

    // HTTPS, HTTP/1.1: a few connections, their requests all at once.
    let tasks = (0..CONNECTIONS)
        .map(|_| {
            let root = root.clone();
            tokio::spawn(async move {
                let tls = connect_alpn(https, &root, NAME, b"http/1.1").await.unwrap();
                let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
                    .await
                    .unwrap();
                tokio::spawn(conn);
                on_one_connection(send, NAME).await
            })
        })
        .collect();
    let (answered, errors) = tally(tasks).await;
    eprintln!("HTTPS HTTP/1.1: {answered} of {expected} answered; errors by kind: {errors:?}");
    assert_eq!((answered, errors), (expected, Kinds::new()));

    // Plain HTTP, the same way.
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let plain = listener.local_addr().unwrap();
    tokio::spawn(crate::serve(listener, edge, Timeouts::default()));
    let tasks = (0..CONNECTIONS)
        .map(|_| {
            tokio::spawn(async move {
                let tcp = tokio::net::TcpStream::connect(plain).await.unwrap();
                let (send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
                    .await
                    .unwrap();
                tokio::spawn(conn);
                on_one_connection(send, "shop.apps.localhost").await
            })
        })
        .collect();
    let (answered, errors) = tally(tasks).await;
    eprintln!("plain HTTP/1.1: {answered} of {expected} answered; errors by kind: {errors:?}");
    assert_eq!((answered, errors), (expected, Kinds::new()));

    // HTTPS, HTTP/2: every request at once on one connection.
    let tls = connect_alpn(https, &root, NAME, b"h2").await.unwrap();
    let (send, conn) = hyper::client::conn::http2::handshake::<_, _, Empty<Bytes>>(
        TokioExecutor::new(),
        TokioIo::new(tls),
    )
    .await
    .unwrap();
    tokio::spawn(conn);
    let tasks = (0..CONNECTIONS * REQUESTS)
        .map(|_| {
            let mut send = send.clone();
            tokio::spawn(async move {
                // HTTP/2 has no connection fields, and names the host
                // in the authority.
                let req = http::Request::get(format!("https://{NAME}/"))
                    .body(Empty::new())
                    .unwrap();
                let outcome = async {
                    send.ready().await.map_err(|e| format!("reuse: {e}"))?;
                    let response = send
                        .send_request(req)
                        .await
                        .map_err(|e| format!("response: {e}"))?;
                    check(response).await
                };
                match outcome.await {
                    Ok(()) => (1, Kinds::new()),
                    Err(kind) => (0, Kinds::from([(kind, 1)])),
                }
            })
        })
        .collect();
    let (answered, errors) = tally(tasks).await;
    eprintln!("HTTPS HTTP/2: {answered} of {expected} answered; errors by kind: {errors:?}");
    assert_eq!((answered, errors), (expected, Kinds::new()));

    let seen = replicas.hop_fields_seen.load(Ordering::Relaxed);
    assert_eq!(
        seen, 0,
        "requests reached the replica with hop-by-hop fields"
    );
}
