//! Clients that send too much or too slowly, over raw TCP against every
//! listener: a declared body over the limit is refused before any of it is
//! sent, a chunked body is cut at the limit, headers that never end and a
//! body that stalls are closed after the configured timeouts (short here).
//! Each read below is bounded (20 s) only so a broken server fails the
//! test instead of hanging it.

use std::time::Duration;

use plateau_testkit::{Backend, ServerOptions};
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

use crate::start_with;

crate::on_both_backends!(oversized_bodies_are_refused_early, slow_clients_are_cut_off);

const LIMIT: usize = 4096;
const GUARD: Duration = Duration::from_secs(20);

fn address(url: &str) -> &str {
    url.trim_start_matches("http://").trim_end_matches('/')
}

/// Everything the server sends until it closes the connection.
async fn read_to_close(stream: &mut TcpStream, what: &str) -> String {
    let mut got = Vec::new();
    let read = tokio::time::timeout(GUARD, async {
        let mut buf = [0u8; 8192];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
    })
    .await;
    let text = String::from_utf8_lossy(&got).into_owned();
    assert!(
        read.is_ok(),
        "{what}: the server kept the connection open; it sent {text:?}"
    );
    text
}

fn head(method: &str, path: &str, token: &str, extra: &str) -> String {
    format!(
        "{method} {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\n{extra}\r\n"
    )
}

async fn oversized_bodies_are_refused_early(backend: Backend) {
    let s =
        start_with(ServerOptions::new(backend).env("PLATEAU_MAX_BODY_BYTES", &LIMIT.to_string()))
            .await;
    let c = s.client();
    assert_eq!(
        c.post("/queues", json!({ "name": "jobs" })).await.status,
        201
    );
    let api = address(&s.url);
    for path in [
        "/api/v1/apps",
        "/api/v1/databases",
        "/api/v1/queues/jobs/messages",
    ] {
        // 2 GB declared, not a byte of it sent: 413 at once, then the
        // connection closes.
        let mut stream = TcpStream::connect(api).await.unwrap();
        let request = head("POST", path, &s.token, "Content-Length: 2000000000\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let answer = read_to_close(&mut stream, path).await;
        assert!(answer.starts_with("HTTP/1.1 413"), "{path}: {answer}");
        assert!(answer.contains("payload_too_large"), "{path}: {answer}");

        // Chunked: one byte past the limit, then silence: 413.
        let mut stream = TcpStream::connect(api).await.unwrap();
        let request = head("POST", path, &s.token, "Transfer-Encoding: chunked\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let chunk = format!("{:x}\r\n{}\r\n", 1024, " ".repeat(1024));
        for _ in 0..LIMIT / 1024 {
            stream.write_all(chunk.as_bytes()).await.unwrap();
        }
        stream.write_all(b"1\r\n \r\n").await.unwrap();
        let answer = read_to_close(&mut stream, path).await;
        assert!(
            answer.starts_with("HTTP/1.1 413"),
            "{path} chunked: {answer}"
        );
    }
    // A body within the limit still goes through.
    let r = c
        .post(
            "/queues/jobs/messages",
            json!({ "body": "x".repeat(LIMIT / 2) }),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
}

async fn slow_clients_are_cut_off(backend: Backend) {
    let s = start_with(
        ServerOptions::new(backend)
            .env("PLATEAU_HEADER_READ_TIMEOUT_MS", "1000")
            .env("PLATEAU_BODY_READ_TIMEOUT_MS", "1000"),
    )
    .await;
    // Headers that never end, on the API, the registry under it, the edge
    // and the S3 endpoint: each connection is closed.
    for (listener, path) in [
        (&s.url, "/api/v1/projects"),
        (&s.url, "/v2/"),
        (&s.edge_url, "/"),
        (&s.storage_url, "/bucket/key"),
    ] {
        let mut stream = TcpStream::connect(address(listener)).await.unwrap();
        let partial = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nX-Slow: a");
        stream.write_all(partial.as_bytes()).await.unwrap();
        let answer = read_to_close(&mut stream, &format!("{listener}{path}")).await;
        assert!(!answer.contains("200 OK"), "{answer}");
    }

    // A body that stops halfway: 408, and the connection closes.
    let mut stream = TcpStream::connect(address(&s.url)).await.unwrap();
    let request = head(
        "POST",
        "/api/v1/projects",
        &s.token,
        "Content-Length: 100\r\n",
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    stream.write_all(br#"{"name": "#).await.unwrap();
    let answer = read_to_close(&mut stream, "a stalled body").await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("request_timeout"), "{answer}");

    // A client that keeps sending is not cut, however long it takes.
    let mut stream = TcpStream::connect(address(&s.url)).await.unwrap();
    let body = br#"{"name": "patient"}"#;
    let request = head(
        "POST",
        "/api/v1/projects",
        &s.token,
        &format!("Content-Length: {}\r\n", body.len()),
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    for byte in body {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stream.write_all(&[*byte]).await.unwrap();
    }
    let mut buf = [0u8; 12];
    tokio::time::timeout(GUARD, stream.read_exact(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&buf, b"HTTP/1.1 201");
}
