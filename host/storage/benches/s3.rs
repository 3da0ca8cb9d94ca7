//! Object storage throughput through Plateau's S3 endpoint, with a real
//! SigV4 client (object_store's `AmazonS3`), against the bounds this machine
//! sets in the same run (`plateau_testkit::bounds`, shared with the
//! registry bench), and the server's peak memory (VmHWM).
//!
//! Run: `cargo build --release -p plateau && cargo bench -p plateau-storage --bench s3`
//! (`PLATEAU_BIN` overrides the binary, `BENCH_MIB` the large object's size,
//! default 256; `BENCH_SMALL` how many 4 KiB objects, default 20,000).
//! Targets: GET >= 80 % of sendfile over loopback; PUT >= 80 % of hashing
//! the body with the digests the request needs (MD5 for the ETag, plus
//! SHA-256 when the payload is signed); memory flat; 4 KiB objects from 32
//! concurrent clients on SQLite: PUT >= 2,000/s, GET >= 5,000/s.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use md5::Md5;
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as Key;
use object_store::{ClientOptions, ObjectStoreExt, PutPayload};
use plateau_testkit::bounds::{
    best_of_two, copy, hash_file, loopback_bound, settle, vm_hwm_kib, write_chunks, write_test_file,
};
use serde_json::{Value, json};
use sha2::Sha256;

#[path = "s3/bound.rs"]
mod bound;

const CLIENTS: usize = 32;
const SMALL: usize = 4096;

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

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The server: its process, API URL and S3 endpoint.
struct Server {
    child: std::process::Child,
    data_dir: std::path::PathBuf,
    api: String,
    s3: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        plateau_testkit::kill_under(&self.data_dir);
    }
}

/// Starts `plateau serve` on SQLite with every listener on a free port.
fn start(data_dir: &Path, token: &str) -> Server {
    let mut child = Command::new(binary())
        .arg("serve")
        .env("PLATEAU_LISTEN", "127.0.0.1:0")
        .env("PLATEAU_EDGE_LISTEN", "127.0.0.1:0")
        .env("PLATEAU_STORAGE_LISTEN", "127.0.0.1:0")
        .env("PLATEAU_DATA_DIR", data_dir)
        .env("PLATEAU_BOOTSTRAP_TOKEN", token)
        .env("PLATEAU_LOG", "warn")
        .stdout(Stdio::piped())
        .spawn()
        .expect("plateau starts");
    let mut stdout = std::io::BufReader::new(child.stdout.take().unwrap());
    let (mut api, mut s3) = (None, None);
    while api.is_none() || s3.is_none() {
        let mut line = String::new();
        assert!(
            std::io::BufRead::read_line(&mut stdout, &mut line).unwrap() > 0,
            "plateau exited before it listened"
        );
        let line = line.trim();
        if let Some(u) = line.strip_prefix("listening on ") {
            api = Some(u.to_owned());
        } else if let Some(u) = line.strip_prefix("storage listening on ") {
            s3 = Some(u.to_owned());
        }
    }
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));
    Server {
        child,
        data_dir: data_dir.to_owned(),
        api: api.unwrap(),
        s3: s3.unwrap(),
    }
}

async fn post(http: &reqwest::Client, url: String, token: &str, body: Value) -> Value {
    let r = http.post(url).bearer_auth(token).json(&body).send().await;
    let r = r.unwrap();
    assert_eq!(r.status(), 201, "{}", r.text().await.unwrap());
    r.json().await.unwrap()
}

/// An S3 client on its own connection pool, path style.
fn client(endpoint: &str, bucket: &str, key: &Value, signed: bool) -> AmazonS3 {
    AmazonS3Builder::new()
        .with_endpoint(endpoint)
        .with_region("us-east-1")
        .with_bucket_name(bucket)
        .with_access_key_id(key["accessKeyId"].as_str().unwrap())
        .with_secret_access_key(key["secretAccessKey"].as_str().unwrap())
        .with_unsigned_payload(!signed)
        .with_client_options(
            ClientOptions::new()
                .with_allow_http(true)
                .with_timeout_disabled(),
        )
        .build()
        .unwrap()
}

/// Seconds to GET `key` into a file on the same disk, with the client
/// loop of the sendfile bound.
async fn get_to_file(s3: &AmazonS3, key: &Key, to: &Path, size: u64) -> f64 {
    let start = Instant::now();
    let mut stream = s3.get(key).await.unwrap().into_stream();
    let (tx, writer) = write_chunks::<Bytes>(to);
    let mut got = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.unwrap();
        got += chunk.len() as u64;
        tx.send(chunk).await.unwrap();
    }
    drop(tx);
    writer.join().unwrap();
    let secs = start.elapsed().as_secs_f64();
    assert_eq!(got, size);
    secs
}

/// Requests per second and per-request latencies of `n` requests from
/// [`CLIENTS`] clients, each on its own connection, taking the next index.
async fn many<F, Fut>(clients: &[AmazonS3], n: usize, op: F) -> (f64, Vec<Duration>)
where
    F: Fn(AmazonS3, usize) -> Fut + Clone + Send + 'static,
    Fut: Future<Output = ()> + Send,
{
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = clients
        .iter()
        .map(|s3| {
            let (s3, next, op) = (s3.clone(), next.clone(), op.clone());
            tokio::spawn(async move {
                let mut took = Vec::new();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break took;
                    }
                    let t = Instant::now();
                    op(s3.clone(), i).await;
                    took.push(t.elapsed());
                }
            })
        })
        .collect();
    let mut all = Vec::with_capacity(n);
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let rate = n as f64 / start.elapsed().as_secs_f64();
    all.sort();
    (rate, all)
}

/// PUT and GET rates and latencies of `n` 4 KiB objects from [`CLIENTS`]
/// signing clients, each on its own connection pool.
async fn small_objects(
    endpoint: &str,
    bucket: &str,
    key: &Value,
    n: usize,
) -> (f64, Vec<Duration>, f64, Vec<Duration>) {
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| client(endpoint, bucket, key, true))
        .collect();
    let payload = Bytes::from(vec![7u8; SMALL]);
    let (put_rate, put_lat) = many(&clients, n, move |s3, i| {
        let payload = payload.clone();
        async move {
            s3.put(&Key::from(format!("small/{i}")), payload.into())
                .await
                .unwrap();
        }
    })
    .await;
    let (get_rate, get_lat) = many(&clients, n, |s3, i| async move {
        let got = s3.get(&Key::from(format!("small/{i}"))).await.unwrap();
        assert_eq!(got.bytes().await.unwrap().len(), SMALL);
    })
    .await;
    (put_rate, put_lat, get_rate, get_lat)
}

fn pct(sorted: &[Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1;
    sorted[i].as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() {
    let mib: u64 = env_or("BENCH_MIB", 256);
    let small: usize = env_or("BENCH_SMALL", 20_000);
    let size = mib * 1024 * 1024;
    let dir =
        tempfile::tempdir_in(std::env::var("BENCH_DIR").unwrap_or_else(|_| ".".into())).unwrap();
    let file = dir.path().join("object.bin");
    write_test_file(&file, mib, |_| {});
    let token = plateau_testkit::random_token();
    let server = start(&dir.path().join("data"), &token);
    let pid = server.child.id();
    let http = reqwest::Client::new();
    let bucket = post(
        &http,
        format!("{}/api/v1/storage/buckets", server.api),
        &token,
        json!({ "name": "bench" }),
    )
    .await;
    let bucket = bucket["bucket"].as_str().unwrap().to_owned();
    let key = post(
        &http,
        format!("{}/api/v1/storage/keys", server.api),
        &token,
        json!({ "name": "bench" }),
    )
    .await;
    let unsigned = client(&server.s3, &bucket, &key, false);
    let signed = client(&server.s3, &bucket, &key, true);
    let idle_kib = vm_hwm_kib(pid);

    eprintln!("s3 bench: bounds");
    // The bounds, under the same conditions as the transfers.
    let copy_secs = best_of_two(&dir.path().join("copy.bin"), |to| copy(&file, to));
    let md5_secs = hash_file(&file, &mut [&mut Md5::default()]);
    let both_secs = hash_file(&file, &mut [&mut Sha256::default(), &mut Md5::default()]);
    let sendfile_secs = best_of_two(&dir.path().join("sent.bin"), |to| loopback_bound(&file, to));

    eprintln!("s3 bench: large PUT");
    // PutObject, the body in the client's memory (read before the clock
    // starts), best of two; signed payloads make the client hash it too.
    let body = Bytes::from(std::fs::read(&file).unwrap());
    let put = |s3: AmazonS3, name: &'static str| {
        let body = body.clone();
        async move {
            let mut best = f64::MAX;
            for _ in 0..2 {
                settle();
                let start = Instant::now();
                s3.put(&Key::from(name), PutPayload::from(body.clone()))
                    .await
                    .unwrap();
                best = best.min(start.elapsed().as_secs_f64());
            }
            best
        }
    };
    let put_unsigned = put(unsigned.clone(), "big-unsigned").await;
    let put_signed = put(signed.clone(), "big-signed").await;
    drop(body);

    eprintln!("s3 bench: large GET");
    // GetObject to a file on the same disk, best of two.
    let big = Key::from("big-unsigned");
    let mut get_secs = f64::MAX;
    for _ in 0..2 {
        settle();
        let to = dir.path().join("got.bin");
        get_secs = get_secs.min(get_to_file(&unsigned, &big, &to, size).await);
        std::fs::remove_file(to).unwrap();
    }
    let peak_kib = vm_hwm_kib(pid);

    eprintln!("s3 bench: small objects");
    let (put_rate, put_lat, get_rate, get_lat) =
        small_objects(&server.s3, &bucket, &key, small).await;
    let small_peak_kib = vm_hwm_kib(pid);
    drop(server);

    eprintln!("s3 bench: small objects, bare bound");
    let bare = bound::start(dir.path().join("bare"));
    let (bare_put, _, bare_get, _) = small_objects(&bare, "bench", &key, small).await;

    let mbps = |secs: f64| size as f64 / secs / 1e6;
    let ratio = |bound: f64, secs: f64| 100.0 * bound / secs;
    println!("## Object storage through the S3 endpoint ({mib} MiB object)\n");
    println!("| transfer | MB/s | % of its bound | bound | target |");
    println!("|---|---:|---:|---|---|");
    println!(
        "| GET | {:.1} | {:.0} % | sendfile over loopback | >= 80 % |",
        mbps(get_secs),
        ratio(sendfile_secs, get_secs)
    );
    println!(
        "| PUT, unsigned payload | {:.1} | {:.0} % | MD5 (the ETag) | >= 80 % |",
        mbps(put_unsigned),
        ratio(md5_secs, put_unsigned)
    );
    println!(
        "| PUT, signed payload | {:.1} | {:.0} % | SHA-256 + MD5 (the client hashes first too) | >= 80 % |",
        mbps(put_signed),
        ratio(both_secs, put_signed)
    );
    println!("\n| bound | MB/s | % of copy |");
    println!("|---|---:|---:|");
    for (name, secs) in [
        ("copy on the same disk", copy_secs),
        ("sendfile over loopback", sendfile_secs),
        ("MD5 of the file", md5_secs),
        ("SHA-256 + MD5 of the file", both_secs),
    ] {
        println!(
            "| {name} | {:.1} | {:.0} % |",
            mbps(secs),
            ratio(copy_secs, secs)
        );
    }
    println!(
        "\nServer peak RSS (VmHWM): {idle_kib} KiB idle, {peak_kib} KiB after the large \
         PUTs and GETs, {small_peak_kib} KiB after the small objects (target: flat).\n"
    );
    println!("## {small} objects of 4 KiB, {CLIENTS} concurrent clients, SQLite\n");
    println!("| op | req/s | p50 ms | p99 ms | target | bare bound req/s | % of bound |");
    println!("|---|---:|---:|---:|---|---:|---:|");
    println!(
        "| PUT | {put_rate:.0} | {:.2} | {:.2} | >= 2,000/s | {bare_put:.0} | {:.0} % |",
        pct(&put_lat, 0.5),
        pct(&put_lat, 0.99),
        100.0 * put_rate / bare_put
    );
    println!(
        "| GET | {get_rate:.0} | {:.2} | {:.2} | >= 5,000/s | {bare_get:.0} | {:.0} % |",
        pct(&get_lat, 0.5),
        pct(&get_lat, 0.99),
        100.0 * get_rate / bare_get
    );
    println!(
        "\nThe bare bound is a hyper server on loopback doing the least each request \
         needs (PUT: read the body, MD5, write a file, one SQLite commit; GET: one \
         SQLite read, read the file, answer), driven by the same signing clients."
    );
}
