//! Object storage: buckets and keys over the API, and the S3 endpoint
//! driven by real clients nobody here wrote (awscli, boto3, curl on
//! presigned URLs), with their default settings.

mod acl;
mod api;
mod awscli;
mod boto;
mod conditions;
mod features;
mod isolation;
mod kms;
mod lifecycle;
mod object_lock;
mod semantics;
mod staging;
mod tools;
mod versioning;

use std::process::{Command, Output};

use plateau_testkit::{Backend, Server, ServerOptions};
use serde_json::{Value, json};

/// A server with a bucket and a key of its first organisation.
pub struct S3 {
    pub server: Server,
    /// The endpoint as the API states it (`http://s3.localhost:<port>`).
    pub endpoint: String,
    /// `http://127.0.0.1:<port>`: path style, no name resolution needed.
    pub direct: String,
    pub bucket: Value,
    pub key: Key,
}

#[derive(Clone, Debug)]
pub struct Key {
    pub id: String,
    pub access_key_id: String,
    pub secret: String,
}

impl S3 {
    pub async fn start(backend: Backend) -> S3 {
        S3::start_with(ServerOptions::new(backend)).await
    }

    /// [`S3::start`] with the server's options (its environment).
    pub async fn start_with(options: ServerOptions) -> S3 {
        let server = crate::start_with(options).await;
        let bucket = create_bucket(&server, &server.token, "data").await;
        let key = create_key(&server, &server.token, json!({ "name": "ci" })).await;
        let endpoint = bucket["endpoint"].as_str().unwrap().to_owned();
        S3 {
            direct: server.storage_url.clone(),
            server,
            endpoint,
            bucket,
            key,
        }
    }

    pub fn bucket_name(&self) -> &str {
        self.bucket["bucket"].as_str().unwrap()
    }

    /// Runs `aws` with `key` and the endpoint in its environment.
    pub fn aws(&self, key: &Key, args: &[&str]) -> Output {
        require("aws", "apt-get install -y awscli");
        Command::new("aws")
            .args(args)
            .env("AWS_ENDPOINT_URL_S3", &self.direct)
            .env("AWS_ACCESS_KEY_ID", &key.access_key_id)
            .env("AWS_SECRET_ACCESS_KEY", &key.secret)
            .env("AWS_DEFAULT_REGION", "eu-central-2")
            .env("AWS_CONFIG_FILE", "/dev/null")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
            .output()
            .expect("aws runs")
    }

    /// Runs a boto3 script after [`PRELUDE`], with the endpoint, key and
    /// bucket in its environment; returns its stdout as JSON.
    pub fn boto(&self, key: &Key, script: &str) -> Value {
        let out = Command::new("python3")
            .arg("-c")
            .arg(format!("{PRELUDE}\n{script}"))
            .env("ENDPOINT", &self.endpoint)
            .env("DIRECT", &self.direct)
            .env("AKID", &key.access_key_id)
            .env("SECRET", &key.secret)
            .env("BUCKET", self.bucket_name())
            .env("AWS_CONFIG_FILE", "/dev/null")
            .env("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
            .output()
            .expect("python3 runs");
        assert!(
            out.status.success(),
            "boto3 script failed: {}\n{}",
            String::from_utf8_lossy(&out.stderr),
            String::from_utf8_lossy(&out.stdout)
        );
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
    }
}

/// What every boto3 script starts with: `client()` (path style on the
/// address, or virtual-host style on the storage domain, which this
/// script resolves to the loopback itself) and `code()`, the S3 error
/// code of a call or "OK".
pub const PRELUDE: &str = r#"
import json, os, socket, sys
import boto3, botocore
from botocore.config import Config
_resolve = socket.getaddrinfo
def _local(host, *args, **kwargs):
    if isinstance(host, str) and host.endswith("s3.localhost"):
        host = "127.0.0.1"
    return _resolve(host, *args, **kwargs)
socket.getaddrinfo = _local
def client(style="path", akid=None, secret=None):
    endpoint = os.environ["DIRECT"] if style == "path" else os.environ["ENDPOINT"]
    return boto3.client("s3", endpoint_url=endpoint, region_name="ap-south-1",
        aws_access_key_id=akid or os.environ["AKID"], aws_secret_access_key=secret or os.environ["SECRET"],
        config=Config(s3={"addressing_style": style}, retries={"max_attempts": 1}))
def code(f):
    try:
        f()
        return "OK"
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
B = os.environ["BUCKET"]
"#;

pub async fn create_bucket(server: &Server, token: &str, name: &str) -> Value {
    let c = plateau_testkit::Client::new(&server.url).with_token(token);
    let r = c.post("/storage/buckets", json!({ "name": name })).await;
    assert_eq!(r.status, 201, "{}", r.text());
    r.json()
}

pub async fn create_key(server: &Server, token: &str, body: Value) -> Key {
    let c = plateau_testkit::Client::new(&server.url).with_token(token);
    let r = c.post("/storage/keys", body).await;
    assert_eq!(r.status, 201, "{}", r.text());
    let v = r.json();
    Key {
        id: v["id"].as_str().unwrap().to_owned(),
        access_key_id: v["accessKeyId"].as_str().unwrap().to_owned(),
        secret: v["secretAccessKey"].as_str().unwrap().to_owned(),
    }
}

/// Fails (never skips) when a client tool is missing.
pub fn require(program: &str, install: &str) {
    let found = Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "{program} is required for the storage tests: {install}"
    );
}

pub fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
