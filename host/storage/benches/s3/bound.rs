//! The small-object bound: a bare HTTP server on loopback that does the
//! least a 4 KiB PutObject and GetObject need, and nothing of S3 (no
//! signature check, no tenant, no quota, no event). A PUT reads the body,
//! hashes it for the ETag, writes it to a fresh file and records its row
//! in one autocommitted SQLite statement (WAL, `synchronous = NORMAL`, as
//! Plateau's); a GET looks the row up and answers the file. It runs on
//! its own two-thread runtime, as the server process does, and the same
//! clients drive it, so the ratio of Plateau's rate to its rate is what
//! Plateau's own work costs on this machine.

use std::convert::Infallible;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use md5::{Digest, Md5};
use sqlx::ConnectOptions;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection, SqlitePool, SqlitePoolOptions};

const PRAGMAS: &str = "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;";

struct Bare {
    dir: PathBuf,
    writer: tokio::sync::Mutex<SqliteConnection>,
    reader: SqlitePool,
}

/// Starts the bound server in `dir`; returns its `http://` address. It
/// lives until the process ends.
pub fn start(dir: PathBuf) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(serve(dir, tx));
    });
    rx.recv().unwrap()
}

async fn serve(dir: PathBuf, ready: std::sync::mpsc::Sender<String>) {
    std::fs::create_dir_all(dir.join("blobs")).unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.join("bare.db").display());
    let options = SqliteConnectOptions::from_str(&url).unwrap();
    let mut writer = options.connect().await.unwrap();
    sqlx::raw_sql(PRAGMAS).execute(&mut writer).await.unwrap();
    sqlx::query("CREATE TABLE objects (key TEXT PRIMARY KEY, path TEXT, size INTEGER, etag TEXT)")
        .execute(&mut writer)
        .await
        .unwrap();
    let reader = SqlitePoolOptions::new()
        .max_connections(8)
        .connect_with(options)
        .await
        .unwrap();
    let bare = Arc::new(Bare {
        dir,
        writer: tokio::sync::Mutex::new(writer),
        reader,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    ready
        .send(format!("http://{}", listener.local_addr().unwrap()))
        .unwrap();
    loop {
        let (stream, _) = listener.accept().await.unwrap();
        let _ = stream.set_nodelay(true);
        let bare = bare.clone();
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |req| handle(bare.clone(), req));
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

async fn handle(
    bare: Arc<Bare>,
    req: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let key = req.uri().path().to_owned();
    let reply = if req.method() == hyper::Method::PUT {
        put(&bare, key, req.into_body()).await
    } else {
        get(&bare, &key).await
    };
    Ok(reply.unwrap_or_else(|e| {
        Response::builder()
            .status(StatusCode::INTERNAL_SERVER_ERROR)
            .body(Full::new(Bytes::from(e)))
            .unwrap()
    }))
}

async fn put(bare: &Bare, key: String, body: Incoming) -> Result<Response<Full<Bytes>>, String> {
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    let etag = hex::encode(Md5::digest(&body));
    let path = bare
        .dir
        .join("blobs")
        .join(uuid::Uuid::new_v4().simple().to_string());
    tokio::fs::write(&path, &body)
        .await
        .map_err(|e| e.to_string())?;
    sqlx::query("INSERT OR REPLACE INTO objects (key, path, size, etag) VALUES (?, ?, ?, ?)")
        .bind(key)
        .bind(path.to_string_lossy().into_owned())
        .bind(body.len() as i64)
        .bind(&etag)
        .execute(&mut *bare.writer.lock().await)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Response::builder()
        .header("etag", format!("\"{etag}\""))
        .body(Full::new(Bytes::new()))
        .unwrap())
}

async fn get(bare: &Bare, key: &str) -> Result<Response<Full<Bytes>>, String> {
    let (path, etag): (String, String) =
        sqlx::query_as("SELECT path, etag FROM objects WHERE key = ?")
            .bind(key)
            .fetch_one(&bare.reader)
            .await
            .map_err(|e| e.to_string())?;
    let body = tokio::fs::read(path).await.map_err(|e| e.to_string())?;
    Ok(Response::builder()
        .header("etag", format!("\"{etag}\""))
        .header("last-modified", "Wed, 25 Nov 2026 00:00:00 GMT")
        .header("content-length", body.len())
        .body(Full::new(Bytes::from(body)))
        .unwrap())
}
