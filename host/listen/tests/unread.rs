//! A body the service refused unread is never read as the next request.

use std::convert::Infallible;
use std::time::Duration;

use http_body_util::Full;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

async fn server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = tower::service_fn(|req: http::Request<plateau_listen::Body>| async move {
        let status = if req.uri().path() == "/smuggled" {
            299
        } else {
            412
        };
        Ok::<_, Infallible>(
            http::Response::builder()
                .status(status)
                .body(Full::new(bytes::Bytes::from_static(b"no")))
                .unwrap(),
        )
    });
    tokio::spawn(plateau_listen::serve(
        listener,
        plateau_listen::Timeouts::default(),
        move |_| service,
        std::future::pending(),
    ));
    addr
}

/// Sends `head`, waits for the answer, then sends `body`; answers what
/// the server wrote in all.
async fn exchange(head: &str, body: &str) -> String {
    let addr = server().await;
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(3), stream.read_to_end(&mut out)).await;
    String::from_utf8_lossy(&out).into_owned()
}

const SMUGGLED: &str = "GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n";

#[tokio::test]
async fn body_after_a_final_answer_is_not_a_request() {
    let head = format!(
        "PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        SMUGGLED.len()
    );
    let out = exchange(&head, SMUGGLED).await;
    assert!(out.starts_with("HTTP/1.1 412"), "{out}");
    assert!(!out.contains("299"), "{out}");
}

#[tokio::test]
async fn body_after_a_refused_expect_is_not_a_request() {
    let head = format!(
        "PUT /a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: {}\r\n\r\n",
        SMUGGLED.len()
    );
    let out = exchange(&head, SMUGGLED).await;
    assert!(out.starts_with("HTTP/1.1 412"), "{out}");
    assert!(!out.contains("299"), "{out}");
}

#[tokio::test]
async fn chunked_body_after_a_final_answer_is_not_a_request() {
    let chunk = format!("{:x}\r\n{SMUGGLED}\r\n0\r\n\r\n", SMUGGLED.len());
    let head = "PUT /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    let out = exchange(head, &(chunk + SMUGGLED)).await;
    assert!(out.starts_with("HTTP/1.1 412"), "{out}");
    assert!(!out.contains("299"), "{out}");
}
