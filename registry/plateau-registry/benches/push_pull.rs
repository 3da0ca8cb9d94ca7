//! Registry throughput: push and pull one 256 MiB blob against the release
//! `plateau` binary, as ratios to copying the same file on the same disk
//! in the same run, and the server's peak memory (VmHWM).
//!
//! Run: `cargo build --release -p plateau && cargo bench -p plateau-registry --bench push_pull`
//! (`PLATEAU_BIN` overrides the binary; `BENCH_MIB` the blob size).
//! Targets: pull >= 70 %, push >= 50 % of the copy, memory flat. It also
//! prints the bounds this machine sets: how fast SHA-256 of the file runs,
//! which bounds a verified push, and how fast the file crosses loopback
//! from a zero-copy sender (sendfile, no HTTP) to the pull's client loop,
//! which bounds any pull.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use futures::StreamExt;
use plateau_testkit::bounds::{
    best_of_two, copy, hash_file, loopback_bound, settle, vm_hwm_kib, write_chunks, write_test_file,
};
use sha2::{Digest, Sha256};

fn binary() -> PathBuf {
    if let Some(bin) = std::env::var_os("PLATEAU_BIN") {
        return bin.into();
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    let bin = target.join("release/plateau");
    assert!(
        bin.exists(),
        "{} is missing: run cargo build --release -p plateau first",
        bin.display()
    );
    bin
}

fn token() -> String {
    let mut out = String::from("plt_");
    let digest = Sha256::digest(format!("{:?}", Instant::now()).as_bytes());
    out.push_str(&hex::encode(digest)[..40]);
    out
}

/// The client's side of the push does the same file I/O as [`copy`]
/// (1 MiB reads, plain writes) on its own thread, so that the client is
/// not what is measured: `tokio::fs` would copy every chunk once more and
/// hop to the blocking pool for each.
fn read_chunks(path: &Path) -> impl futures::Stream<Item = std::io::Result<bytes::Bytes>> + use<> {
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    let mut file = std::fs::File::open(path).unwrap();
    std::thread::spawn(move || {
        loop {
            let mut buf = Vec::with_capacity(1 << 20);
            match (&mut file).take(1 << 20).read_to_end(&mut buf) {
                Ok(0) => break,
                Ok(_) => {
                    if tx.blocking_send(Ok(bytes::Bytes::from(buf))).is_err() {
                        break;
                    }
                }
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    break;
                }
            }
        }
    });
    futures::stream::unfold(rx, |mut rx| async { rx.recv().await.map(|c| (c, rx)) })
}

#[tokio::main]
async fn main() {
    let mib: u64 = std::env::var("BENCH_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let size = mib * 1024 * 1024;
    let dir =
        tempfile::tempdir_in(std::env::var("BENCH_DIR").unwrap_or_else(|_| ".".into())).unwrap();
    let data_dir = dir.path().join("data");
    let blob = dir.path().join("blob.bin");
    let mut hasher = Sha256::new();
    write_test_file(&blob, mib, |chunk| hasher.update(chunk));
    let digest = format!("sha256:{}", hex::encode(hasher.finalize()));
    let token = token();
    let mut child = Command::new(binary())
        .arg("serve")
        .env("PLATEAU_LISTEN", "127.0.0.1:0")
        .env("PLATEAU_EDGE_LISTEN", "127.0.0.1:0")
        .env("PLATEAU_STORAGE_LISTEN", "127.0.0.1:0")
        .env("PLATEAU_DATA_DIR", &data_dir)
        .env("PLATEAU_BOOTSTRAP_TOKEN", &token)
        .env("PLATEAU_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("plateau starts");
    let pid = child.id();
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let url = loop {
        let mut line = String::new();
        assert!(
            std::io::BufRead::read_line(&mut stdout, &mut line).unwrap() > 0,
            "plateau exited"
        );
        if let Some(u) = line.trim().strip_prefix("listening on ") {
            break u.to_owned();
        }
    };
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    let http = reqwest::Client::new();
    let me: serde_json::Value = http
        .get(format!("{url}/api/v1/me"))
        .bearer_auth(&token)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let repo = format!("{}/bench", me["organization"]["id"].as_str().unwrap());
    let idle_kib = vm_hwm_kib(pid);

    // The copy runs under the same conditions as the server: dirty pages
    // written back first, best of two runs.
    let copy_secs = best_of_two(&dir.path().join("copy.bin"), |to| copy(&blob, to));
    let hash_secs = hash_file(&blob, &mut [&mut Sha256::new()]);
    settle();

    // Push: POST, one streaming PATCH, PUT ?digest= (what docker and skopeo do).
    let start = Instant::now();
    let r = http
        .post(format!("{url}/v2/{repo}/blobs/uploads/"))
        .basic_auth("plateau", Some(&token))
        .send()
        .await
        .unwrap();
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let body = reqwest::Body::wrap_stream(read_chunks(&blob));
    let r = http
        .patch(format!("{url}{location}"))
        .basic_auth("plateau", Some(&token))
        .header("content-length", size)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 202);
    let r = http
        .put(format!("{url}{location}?digest={digest}"))
        .basic_auth("plateau", Some(&token))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    let push_secs = start.elapsed().as_secs_f64();

    // Pull to a file on the same disk, best of two like the copy.
    let mut pull_secs = f64::MAX;
    for _ in 0..2 {
        settle();
        let pulled_path = dir.path().join("pulled.bin");
        let start = Instant::now();
        let r = http
            .get(format!("{url}/v2/{repo}/blobs/{digest}"))
            .basic_auth("plateau", Some(&token))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        let (tx, writer) = write_chunks(&pulled_path);
        let mut stream = r.bytes_stream();
        let mut pulled = 0u64;
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.unwrap();
            pulled += chunk.len() as u64;
            tx.send(chunk).await.unwrap();
        }
        drop(tx);
        writer.join().unwrap();
        pull_secs = pull_secs.min(start.elapsed().as_secs_f64());
        assert_eq!(pulled, size);
        std::fs::remove_file(pulled_path).unwrap();
    }

    // The same transfer with nothing but the kernel in between.
    let bound_secs = best_of_two(&dir.path().join("sent.bin"), |to| loopback_bound(&blob, to));

    let peak_kib = vm_hwm_kib(pid);
    let _ = child.kill();
    let _ = child.wait();
    let mbps = |secs: f64| size as f64 / secs / 1e6;
    println!("registry push/pull of a {mib} MiB blob");
    println!("copy on the same disk: {:8.1} MB/s", mbps(copy_secs));
    println!(
        "push:                  {:8.1} MB/s  ({:.0} % of copy; target >= 50 %)",
        mbps(push_secs),
        100.0 * copy_secs / push_secs
    );
    println!(
        "pull:                  {:8.1} MB/s  ({:.0} % of copy; target >= 70 %)",
        mbps(pull_secs),
        100.0 * copy_secs / pull_secs
    );
    println!(
        "sha-256 of the file:   {:8.1} MB/s  ({:.0} % of copy: a push hashes every byte, \
         so it cannot be faster)",
        mbps(hash_secs),
        100.0 * copy_secs / hash_secs
    );
    println!(
        "sendfile over loopback: {:8.1} MB/s  ({:.0} % of copy: no HTTP, no registry, the same \
         client loop; no pull can be faster)",
        mbps(bound_secs),
        100.0 * copy_secs / bound_secs
    );
    println!(
        "server peak RSS (VmHWM): {} KiB idle, {} KiB after push and pull",
        idle_kib, peak_kib
    );
}
