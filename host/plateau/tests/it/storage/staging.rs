//! An upload cut short by the server's death leaves its staging file in
//! the local store; the next start removes it, and the object never
//! appears.

use std::path::{Path, PathBuf};
use std::time::Duration;

use plateau_testkit::Backend;
use serde_json::json;
use tokio::io::AsyncWriteExt;

use super::S3;

crate::on_both_backends!(a_write_killed_midway_leaves_no_staging_file_after_a_restart);

/// The staging files (`<key>#<n>`) under `dir`.
fn staging_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| n.rsplit_once('#'))
                .is_some_and(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            {
                found.push(path);
            }
        }
    }
    found
}

async fn a_write_killed_midway_leaves_no_staging_file_after_a_restart(backend: Backend) {
    let mut s3 = S3::start(backend).await;
    let c = s3.server.client();
    let id = s3.bucket["id"].as_str().unwrap().to_owned();
    let store = s3.server.data_dir.path().join("storage");
    let r = c
        .post(
            &format!("/storage/buckets/{id}/presign"),
            json!({ "key": "big.bin", "method": "PUT", "expiresInSeconds": 300, "accessKeyId": s3.key.access_key_id }),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.text());
    let url = r.json()["url"].as_str().unwrap().to_owned();
    let (host, target) = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split_once('/'))
        .unwrap();

    // 64 MiB announced, 4 MiB sent, then nothing: the server holds a
    // staging file it is still writing.
    let direct = s3.direct.strip_prefix("http://").unwrap().to_owned();
    let mut stream = tokio::net::TcpStream::connect(&direct).await.unwrap();
    let head = format!(
        "PUT /{target} HTTP/1.1\r\nHost: {host}\r\nContent-Length: {}\r\n\r\n",
        64 << 20
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&vec![7u8; 4 << 20]).await.unwrap();
    let mut staged = Vec::new();
    for _ in 0..600 {
        staged = staging_files(&store);
        if !staged.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        staged.len(),
        1,
        "the write is staged in {}",
        store.display()
    );

    // SIGKILL: nothing in the server gets to clean up.
    let pid = s3.server.pid().unwrap();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    s3.server.exited().await;
    drop(stream);
    assert_eq!(
        staging_files(&store),
        staged,
        "the dead write's file is left"
    );

    s3.server.restart().await;
    assert_eq!(staging_files(&store), Vec::<PathBuf>::new());
    let c = s3.server.client();
    let detail = c.get(&format!("/storage/buckets/{id}")).await.json();
    assert_eq!(
        detail["usage"],
        json!({ "bytes": 0, "objects": 0 }),
        "{detail}"
    );
}
