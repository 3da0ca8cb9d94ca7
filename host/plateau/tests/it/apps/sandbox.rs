//! A hostile Linux app, through the edge: a busybox image whose httpd
//! runs each request's query string as a shell command (a CGI script)
//! tries to leave its container. Container root must be a host id range
//! of its own app (kept across a restart), unshare and nsenter must be
//! refused by the seccomp filter, and neither a host listener on 0.0.0.0
//! nor another app's replica may be reached. Needs root, runc and nft.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use plateau_testkit::Backend;
use plateau_testkit::oci::{ImagePusher, OCI_MANIFEST, busybox_layer_with};
use serde_json::json;

use super::{Apps, Edge, slug};

/// Runs the request's decoded query string as a shell command.
pub(super) const CGI: &str = "#!/bin/sh\necho 'Content-Type: text/plain'\necho\neval \"$(httpd -d \"$QUERY_STRING\")\" 2>&1\n";
/// The replica's own address and its host end's (`.2` and `.1`).
const ADDRESSES: &str = "a=$(ip -4 -o addr | sed -n 's/.* inet \\(10\\.231\\.[0-9.]*\\)\\/30.*/\\1/p'); h=${a%.*}.$((${a##*.}-1))";

/// busybox, `/bin/sh`, the CGI script `/www/cgi-bin/run` and an
/// `index.html` for the health check, gzipped.
fn layer() -> Vec<u8> {
    busybox_layer_with(&[
        ("www/cgi-bin/run", CGI.as_bytes()),
        ("www/index.html", b"ok\n"),
    ])
}

/// Pushes the image as `repo:v1`; its reference.
async fn push(registry: &ImagePusher, base: &str, repo: &str) -> String {
    let config = serde_json::to_vec(&json!({
        "architecture": "amd64",
        "os": "linux",
        "config": { "Cmd": ["/bin/sh", "-c", "exec httpd -f -p $PORT -h /www"] },
        "rootfs": { "type": "layers", "diff_ids": [] },
    }))
    .unwrap();
    let layer = layer();
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": OCI_MANIFEST,
        "config": { "mediaType": "application/vnd.oci.image.config.v1+json",
                    "digest": registry.blob(repo, &config).await, "size": config.len() },
        "layers": [{ "mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                     "digest": registry.blob(repo, &layer).await, "size": layer.len() }],
    });
    registry.manifest(repo, "v1", OCI_MANIFEST, &manifest).await;
    format!("{}/{repo}:v1", base.trim_start_matches("http://"))
}

/// Runs `command` in the app's replica through the edge; what it printed.
pub(super) async fn run(edge: &Edge, command: &str) -> String {
    let query: String = command
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    let (status, body) = edge.get(&format!("/cgi-bin/run?{query}")).await.unwrap();
    assert_eq!(status, 200, "{body}");
    body.trim().to_owned()
}

/// `/proc/self/uid_map` of the app's replica, checked to be one range.
async fn uid_map(edge: &Edge) -> (String, u64) {
    let map = run(edge, "cat /proc/self/uid_map").await;
    let fields: Vec<&str> = map.split_whitespace().collect();
    assert_eq!(fields.len(), 3, "one mapping: {map}");
    assert_eq!((fields[0], fields[2]), ("0", "65536"), "a range: {map}");
    (map.clone(), fields[1].parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_linux_app_cannot_leave_its_sandbox() {
    let env = Apps::start(Backend::Sqlite).await;
    let registry = ImagePusher::new(&env.server.url, &env.token);
    let image = push(&registry, &env.server.url, &format!("{}/shell", env.org)).await;
    let one = env.deployed("One", &image).await;
    let two = env.deployed("Two", &image).await;
    let edge_one = Edge::new(&env.server, &slug(&one));
    let edge_two = Edge::new(&env.server, &slug(&two));

    // Container root is an unprivileged host range, one per app.
    let (map_one, a) = uid_map(&edge_one).await;
    let (_, b) = uid_map(&edge_two).await;
    assert!(a >= 1 << 16 && b >= 1 << 16, "{a} {b}");
    assert!(a.abs_diff(b) >= 1 << 16, "the ranges overlap: {a} {b}");

    // The seccomp filter refuses new namespaces and joining others.
    let said = run(&edge_one, "unshare -U true && echo escaped; unshare -n true && echo escaped; nsenter -t 1 -U true && echo escaped; grep Seccomp: /proc/self/status").await;
    assert!(!said.contains("escaped"), "{said}");
    assert!(said.contains("Operation not permitted"), "{said}");
    assert!(said.contains("Seccomp:\t2"), "{said}");

    // A host listener on every address is out of the replica's reach.
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = accepted.clone();
    let accepting = tokio::spawn(async move {
        while listener.accept().await.is_ok() {
            counted.fetch_add(1, Ordering::SeqCst);
        }
    });
    let said = run(
        &edge_one,
        &format!("{ADDRESSES}; echo host $h; nc -w 3 $h {port} </dev/null && echo reached"),
    )
    .await;
    assert!(said.starts_with("host 10.231."), "{said}");
    assert!(!said.contains("reached"), "{said}");
    assert_eq!(accepted.load(Ordering::SeqCst), 0, "{said}");
    accepting.abort();

    // Nor is the other app's replica.
    let other = run(&edge_two, &format!("{ADDRESSES}; echo $a")).await;
    assert!(other.starts_with("10.231."), "{other}");
    let said = run(
        &edge_one,
        &format!("nc -w 3 {other} 8080 </dev/null && echo reached; wget -T 3 -q -O- http://{other}:8080/ && echo reached"),
    )
    .await;
    assert!(!said.contains("reached"), "{said}");

    // A restart brings the app back with the same ids (its rootfs copy
    // is owned by them).
    let mut env = env;
    env.server.restart().await;
    let edge_one = Edge::new(&env.server, &slug(&one));
    let mut last = Err(String::new());
    for _ in 0..400 {
        last = edge_one.get("/cgi-bin/run?cat%20/proc/self/uid_map").await;
        if matches!(&last, Ok((200, _))) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (status, body) = last.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body.trim(), map_one);
}
