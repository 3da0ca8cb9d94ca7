//! A Rust crate for `wasm32-wasip2` uploaded as source (a `Cargo.toml`
//! and no `Dockerfile`): built with the host's cargo, offline against the
//! crates already on this machine, pushed to the organisation's
//! repository as a Wasm artifact, and run as a `wasi:http` app (without
//! `PLATEAU_APPS_CARGO_BUILDS` a crate is refused: see `uploads`). Needs
//! the `wasm32-wasip2` target and the `wasip2` crate in cargo's cache
//! (`cargo xtask setup` builds the fixtures that fetch it).

use plateau_testkit::{Backend, ServerOptions};
use serde_json::json;

use super::uploads::{archive, upload_and_deploy};
use super::{Apps, Edge, id, slug};

pub(super) const MANIFEST: &str = r#"[package]
name = "hello-crate"
version = "0.1.0"
edition = "2021"

[lib]
crate-type = ["cdylib"]

[dependencies]
wasip2 = "1"

[workspace]
"#;

pub(super) const LIB: &str = r#"use std::io::Write as _;
use wasip2::http::types::{Fields, IncomingRequest, OutgoingBody, OutgoingResponse, ResponseOutparam};

struct App;

impl wasip2::exports::http::incoming_handler::Guest for App {
    fn handle(_request: IncomingRequest, out: ResponseOutparam) {
        let response = OutgoingResponse::new(Fields::new());
        let body = response.body().expect("a body");
        ResponseOutparam::set(out, Ok(response));
        let mut stream = body.write().expect("a stream");
        stream.write_all(b"hello from cargo").expect("written");
        stream.flush().expect("flushed");
        drop(stream);
        OutgoingBody::finish(body, None).expect("finished");
    }
}

wasip2::http::proxy::export!(App);
"#;

pub(super) fn krate() -> Vec<u8> {
    archive(&[
        ("Cargo.toml", MANIFEST.as_bytes().to_vec(), 0o644),
        ("src/lib.rs", LIB.as_bytes().to_vec(), 0o644),
    ])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_crates_build_into_wasm_apps() {
    let env = Apps::start_with(
        ServerOptions::new(Backend::Sqlite).env("PLATEAU_APPS_CARGO_BUILDS", "true"),
    )
    .await;
    let r = env
        .client()
        .post("/apps", json!({ "name": "Crate", "sourceType": "upload" }))
        .await;
    assert_eq!(r.status, 201, "{}", r.text());
    let app = r.json();
    let d = upload_and_deploy(&env, &id(&app), krate()).await;
    assert_eq!(d["status"], "live", "{d}");
    let image = d["image"].as_str().unwrap();
    assert!(
        image.contains(&format!("/{}/", env.org)) && image.contains("@sha256:"),
        "{image}"
    );
    assert!(
        d["buildLog"]
            .as_str()
            .unwrap()
            .contains("Compiling hello-crate"),
        "{d}"
    );
    Edge::new(&env.server, &slug(&app))
        .until_body("hello from cargo")
        .await;
}
